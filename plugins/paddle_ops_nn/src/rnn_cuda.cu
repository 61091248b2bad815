// CUDA kernels of lstm, gru and their gradients: same checks, reserve layout, cells (rnn.hpp)
// and dtypes as rnn_cpu.cpp; the GEMMs are cuBLAS's (the SDK's paddle_core/cublas.hpp, loaded at
// run time: without it the kernels fail in prepare, saying what to install).
//
// Memory contract: as the CPU kernels' (rnn_cpu.cpp's header, manifest/rnn.pbtxt's), all on the
// CUDA device of the plan's stream. sequence_length is copied to the host, waited for and
// checked there before anything is computed (the CPU's KernelError), at the cost of one wait on
// the stream; its values then go back to the device as int32.
//
// Per layer and direction, the forward pass is one GEMM projecting every step's input into the
// reserve's gate columns and a kernel adding bias_ih, then per step one GEMM of the previous
// hidden state with weight_hh and one kernel of the cells, a thread per (sequence, unit). The
// backward pass runs the steps in reverse, per step a kernel of the cells' gradients (every
// step's gate gradients kept) and one GEMM carrying the hidden state's gradient through
// weight_hh; then each weight's gradient, and the layer input's, is one GEMM over all steps,
// and each bias's a column sum (a thread per column adding the steps in order, in double: no
// atomics, the same bits every run). Padded steps carry the state through and have zero gate
// gradients, so the all-step GEMMs need no masks.
#include <vector>

#include <paddle_core/cublas.hpp>

#include "cuda.cuh"
#include "rnn.hpp"

namespace paddle_ops_nn {
namespace {

using pc::check_cublas;
using pc::cublas;
using pc::cublas_handle;

// Row-major c [m, n] = alpha op(a) op(b) + beta c, each matrix's rows ld* elements apart;
// beta is 0 or 1. cuBLAS is column-major: it computes c^T = op(b)^T op(a)^T.
template <class T>
void gemm(cudaStream_t stream, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
          const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // nothing to add: c = beta c
    if (beta == T(0))
      check_cuda(cudaMemset2DAsync(c, ldc * sizeof(T), 0, n * sizeof(T), m, stream), "zeroing");
    return;
  }
  constexpr bool f32 = sizeof(T) == 4;
  const cudaDataType type = f32 ? CUDA_R_32F : CUDA_R_64F;
  check_cublas(cublas().gemm_ex(cublas_handle(stream), tb ? pc::CUBLAS_OP_T : pc::CUBLAS_OP_N,
                                ta ? pc::CUBLAS_OP_T : pc::CUBLAS_OP_N, static_cast<int>(n),
                                static_cast<int>(m), static_cast<int>(k), &alpha, b, type,
                                static_cast<int>(ldb), a, type, static_cast<int>(lda), &beta, c,
                                type, static_cast<int>(ldc),
                                f32 ? pc::CUBLAS_COMPUTE_32F : pc::CUBLAS_COMPUTE_64F,
                                pc::CUBLAS_GEMM_DEFAULT),
               "GEMM");
}

// sequence_length's values, each checked on the host against [1, T], on the device as int32;
// empty when the op has none (every sequence has T steps).
class Lengths {
 public:
  Lengths(const Slots& in, int32_t slot, const RnnDims& d, cudaStream_t stream)
      : mem_(in.has(slot) ? static_cast<size_t>(d.B) * sizeof(int32_t) : 0, stream) {
    if (!in.has(slot) || d.B == 0) return;
    const Tensor lengths = in(slot);
    std::vector<char> raw(static_cast<size_t>(lengths.nbytes()));
    check_cuda(cudaMemcpyAsync(raw.data(), lengths.data<void>(), raw.size(),
                               cudaMemcpyDeviceToHost, stream),
               "copy");
    check_cuda(cudaStreamSynchronize(stream), "copy");
    std::vector<int32_t> host(static_cast<size_t>(d.B));
    dispatch(lengths.dtype(), Types<int32_t, int64_t>{}, [&](auto t) {
      const auto* values = reinterpret_cast<const decltype(t)*>(raw.data());
      for (int64_t b = 0; b < d.B; ++b)
        host[b] = static_cast<int32_t>(checked_length(static_cast<int64_t>(values[b]), b, d.T));
    });
    // From pageable memory: the copy has read `host` when it returns.
    check_cuda(cudaMemcpyAsync(mem_.get(), host.data(), host.size() * sizeof(int32_t),
                               cudaMemcpyHostToDevice, stream),
               "copy");
  }
  const int32_t* get() const { return mem_.get<int32_t>(); }  // null: none

 private:
  Scratch mem_;
};

__device__ inline bool active(const int32_t* lengths, int64_t t, int64_t b) {
  return lengths == nullptr || t < lengths[b];
}

// Where one step's kernels read and write: the unit's rows t (gates), prev(t) (the state read)
// and next(t) (the state made) of the reserve, each [B, W * H].
template <class T> struct StepRows {
  T *gates, *prev, *next;
  int64_t t, B, H, row;
};

template <class T> StepRows<T> step_rows(const Unit<T>& u, int64_t t) {
  return {u.at(t, 0), u.at(u.prev(t), 0), u.at(u.next(t), 0), t, u.d.B, u.d.H, u.d.row()};
}

// -- forward -----------------------------------------------------------------------------------

// m[r, k] += bias[k] for the `rows` rows of `cols` columns, rows ld apart.
template <class T>
__global__ void add_bias_kernel(T* m, const T* bias, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t e = first_index(); e < rows * cols; e += index_step())
    m[(e / cols) * ld + e % cols] += bias[e % cols];
}

// The initial state into its row (zeros where h0 / c0 are null), and the gate columns of row T,
// which no step has, to zeros. One thread per (sequence, unit).
template <class T>
__global__ void start_kernel(const T* h0, const T* c0, T* initial, T* row_t, bool cell,
                             int64_t B, int64_t H, int64_t row) {
  for (int64_t e = first_index(); e < B * H; e += index_step()) {
    const int64_t b = e / H, j = e % H;
    T* at = initial + b * row;
    at[4 * H + j] = h0 ? h0[e] : T(0);
    if (cell) at[5 * H + j] = c0 ? c0[e] : T(0);
    for (int k = 0; k < 4; ++k) row_t[b * row + k * H + j] = T(0);
  }
}

// Step t's cells from its gates (W_ih x + b_ih) and hproj = h_prev @ W_hh^T [B, G * H]; a
// padded sequence keeps its state and gets zero gates. out: the op's out at step t, offset to
// this direction's half (rows ld apart), or null below the last layer.
template <bool kLstm, class T>
__global__ void step_kernel(StepRows<T> s, const T* hproj, const T* b_hh, const int32_t* lengths,
                            T* out, int64_t ld) {
  const int64_t H = s.H, G = kLstm ? 4 : 3;
  for (int64_t e = first_index(); e < s.B * H; e += index_step()) {
    const int64_t b = e / H, j = e % H;
    T* gates = s.gates + b * s.row;
    T *h_prev = s.prev + b * s.row + 4 * H, *h = s.next + b * s.row + 4 * H;
    T *c_prev = h_prev + H, *c = h + H;  // lstm only
    if (!active(lengths, s.t, b)) {
      for (int k = 0; k < 4; ++k) gates[k * H + j] = T(0);
      h[j] = h_prev[j];
      if (kLstm) c[j] = c_prev[j];
      if (out) out[b * ld + j] = T(0);
      continue;
    }
    if constexpr (kLstm)
      lstm_cell(j, H, gates, hproj + b * G * H, b_hh, c_prev, h, c);
    else
      gru_cell(j, H, gates, hproj + b * G * H, b_hh, h_prev, h);
    if (out) out[b * ld + j] = h[j];
  }
}

// -- backward ----------------------------------------------------------------------------------

// Step t's gate gradients (dgx: input side; dgh: hidden side, gru only, [B, G * H] each) from
// the gradient flowing into h (dh, plus dout: the layer output's at step t, rows ld apart, or
// null) and into c (dc, lstm); leaves in dh the part of h_prev's gradient that does not go
// through W_hh and in dc c_prev's. A padded sequence's gradients pass through unchanged.
template <bool kLstm, class T>
__global__ void step_grad_kernel(StepRows<T> s, const int32_t* lengths, const T* dout,
                                 int64_t ld, T* dh, T* dc, T* dgx, T* dgh) {
  const int64_t H = s.H, G = kLstm ? 4 : 3;
  for (int64_t e = first_index(); e < s.B * H; e += index_step()) {
    const int64_t b = e / H, j = e % H;
    T *gx = dgx + b * G * H, *gg = kLstm ? nullptr : dgh + b * G * H;
    if (!active(lengths, s.t, b)) {
      for (int k = 0; k < G; ++k) gx[k * H + j] = T(0);
      if (!kLstm)
        for (int k = 0; k < G; ++k) gg[k * H + j] = T(0);
      continue;
    }
    const T* gates = s.gates + b * s.row;
    const T* h_prev = s.prev + b * s.row + 4 * H;
    const T grad = dh[e] + (dout ? dout[b * ld + j] : T(0));
    if constexpr (kLstm) {
      lstm_cell_grad(j, H, gates, h_prev + H, s.next + b * s.row + 5 * H, grad, dc + b * H, gx);
      dh[e] = T(0);
    } else {
      dh[e] = gru_cell_grad(j, H, gates, h_prev, grad, gx, gg);
    }
  }
}

// sums[k] = the sum of m[r, k] over the rows, in row order, in double.
template <class T>
__global__ void column_sums_kernel(const T* m, int64_t rows, int64_t cols, T* sums) {
  for (int64_t k = first_index(); k < cols; k += index_step()) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += static_cast<double>(m[r * cols + k]);
    sums[k] = static_cast<T>(acc);
  }
}

// Launch `kernel` over n work items on the stream (nothing when n is 0), then check it.
template <class K, class... Args>
void launch(int64_t n, cudaStream_t stream, K kernel, Args... args) {
  if (n == 0) return;
  const Grid g = grid_for(n);
  kernel<<<g.blocks, g.threads, 0, stream>>>(args...);
  check_launch();
}

// Copy `rows` rows of `cols` elements, rows src_ld and dst_ld elements apart; or zero them
// where src is null.
template <class T>
void copy_rows(T* dst, int64_t dst_ld, const T* src, int64_t src_ld, int64_t rows, int64_t cols,
               cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (src == nullptr)
    check_cuda(cudaMemset2DAsync(dst, dst_ld * sizeof(T), 0, cols * sizeof(T), rows, stream),
               "zeroing");
  else
    check_cuda(cudaMemcpy2DAsync(dst, dst_ld * sizeof(T), src, src_ld * sizeof(T),
                                 cols * sizeof(T), rows, cudaMemcpyDeviceToDevice, stream),
               "copy");
}

// -- the kernels -------------------------------------------------------------------------------

template <bool kLstm>
class RnnCuda {
 public:
  static constexpr pc::Signature signature{kLstm ? "1++++???" : "1++++??", kLstm ? "1111" : "111"};
  using DTypes = Floats;

  RnnCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : d_(check_rnn(attrs, in, out, kLstm)) {
    expect_cuda(in, out);
    cublas();  // loaded, or the message saying what to install
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    dispatch(in(0).dtype(), Floats{}, [&](auto t) { compute<decltype(t)>(in, out, stream); });
  }

 private:
  template <class T> void compute(const Slots& in, const Slots& out, cudaStream_t stream) const {
    const RnnDims& d = d_;
    const int64_t H = d.H, gh = d.G * H;
    const Lengths lengths(in, s_.lengths(), d, stream);
    T* reserve = out(s_.reserve()).data<T>();
    Scratch hproj(static_cast<size_t>(d.B * gh) * sizeof(T), stream);
    for (int64_t l = 0; l < d.L; ++l)
      for (int64_t dir = 0; dir < d.D; ++dir) {
        const Unit<T> u = unit_of(d, reserve, l, dir);
        // Every step's gates = the layer's input @ weight_ih^T + bias_ih.
        const T* w_ih = item<T>(in, 1, u.index);
        const auto pieces = layer_input(d, in(0).data<T>(), reserve, l);
        for (size_t k = 0; k < pieces.size(); ++k) {
          const Piece<T>& p = pieces[k];
          gemm<T>(stream, false, true, d.T * d.B, gh, p.cols, T(1), p.data, p.ld, w_ih + p.offset,
                  d.input_size(l), k == 0 ? T(0) : T(1), u.base, d.row());
        }
        launch(d.T * d.B * gh, stream, add_bias_kernel<T>, u.base, item<T>(in, 3, u.index),
               d.T * d.B, gh, d.row());
        launch(d.B * H, stream, start_kernel<T>, state_or_null<T>(in, s_.h0(), u.index, d),
               kLstm ? state_or_null<T>(in, s_.c0(), u.index, d) : nullptr,
               u.at(u.initial(), 0), u.at(d.T, 0), kLstm, d.B, H, d.row());
        const T* w_hh = item<T>(in, 2, u.index);
        const T* b_hh = item<T>(in, 4, u.index);
        T* last = l + 1 == d.L ? out(0).data<T>() + (u.reverse ? H : 0) : nullptr;
        for (int64_t step = 0; step < d.walked_steps(); ++step) {
          const int64_t t = u.time(step);
          gemm<T>(stream, false, true, d.B, gh, H, T(1), u.h(u.prev(t), 0), d.row(), w_hh, H,
                  T(0), hproj.get<T>(), gh);
          launch(d.B * H, stream, step_kernel<kLstm, T>, step_rows(u, t), hproj.get<const T>(),
                 b_hh, lengths.get(), last ? last + t * d.B * d.D * H : nullptr, d.D * H);
        }
        // The final state into h_n (and c_n).
        copy_rows(out(s_.h_n()).data<T>() + u.index * d.B * H, H, u.h(u.last(), 0), d.row(), d.B,
                  H, stream);
        if (kLstm)
          copy_rows(out(s_.c_n()).data<T>() + u.index * d.B * H, H, u.c(u.last(), 0), d.row(),
                    d.B, H, stream);
      }
  }

  RnnSlots s_{kLstm};
  RnnDims d_;
};

template <bool kLstm>
class RnnGradCuda {
 public:
  static constexpr pc::Signature signature{kLstm ? "1++++1??????" : "1++++1????",
                                           kLstm ? "?****??" : "?****?"};
  using DTypes = Floats;

  RnnGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : d_(check_rnn_grad(attrs, in, out, kLstm)) {
    expect_cuda(in, out);
    cublas();
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    dispatch(in(0).dtype(), Floats{}, [&](auto t) { compute<decltype(t)>(in, out, stream); });
  }

 private:
  // What a run works in, in scratch memory for the run: every step's gate gradients of one
  // unit (input side dgx, hidden side dgh: the same for lstm), the carried state gradients, and
  // the gradient of each layer's output, two layers at a time.
  template <class T> struct Work {
    Scratch dgx, dgh, dh, dc, dy0, dy1;
    Work(const RnnDims& d, cudaStream_t stream)
        : dgx(bytes(d.T * d.B * d.G * d.H), stream),
          dgh(bytes(kLstm ? 0 : d.T * d.B * d.G * d.H), stream),
          dh(bytes(d.B * d.H), stream),
          dc(bytes(kLstm ? d.B * d.H : 0), stream),
          dy0(bytes(d.L > 1 ? d.T * d.B * d.D * d.H : 0), stream),
          dy1(bytes(d.L > 1 ? d.T * d.B * d.D * d.H : 0), stream) {}
    static size_t bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(T); }
    T* dy(int64_t l) const { return l % 2 ? dy1.get<T>() : dy0.get<T>(); }
    T* hidden() const { return kLstm ? dgx.get<T>() : dgh.get<T>(); }
  };

  template <class T> void compute(const Slots& in, const Slots& out, cudaStream_t stream) const {
    const RnnDims& d = d_;
    const Lengths lengths(in, s_.grad_lengths(), d, stream);
    const int64_t steps = d.T * d.B, gh = d.G * d.H;
    const Work<T> w(d, stream);
    T* reserve = in(s_.grad_reserve()).data<T>();
    const T* top = in.has(s_.out_grad()) ? in(s_.out_grad()).data<T>() : nullptr;
    for (int64_t l = d.L - 1; l >= 0; --l) {
      const T* dy = l + 1 == d.L ? top : w.dy(l + 1);
      T* dx = l > 0 ? w.dy(l) : out.has(0) ? out(0).data<T>() : nullptr;
      const auto pieces = layer_input(d, in(0).data<T>(), reserve, l);
      for (int64_t dir = 0; dir < d.D; ++dir) {
        const Unit<T> u = unit_of(d, reserve, l, dir);
        through_steps(in, out, u, lengths, dy, w, stream);
        weight_grads(out, u, pieces, w, stream);
        if (dx)
          gemm<T>(stream, false, false, steps, d.input_size(l), gh, T(1), w.dgx.template get<T>(),
                  gh, item<T>(in, 1, u.index), d.input_size(l), dir == 0 ? T(0) : T(1), dx,
                  d.input_size(l));
      }
    }
  }

  // The steps of one unit in reverse: each step's gate gradients into w.dgx / w.dgh, the state
  // gradients carried in w.dh / w.dc (from h_n_grad / c_n_grad) and left in h0_grad / c0_grad.
  // dy: the gradient of the layer's output [T, B, D * H], or null for none.
  template <class T>
  void through_steps(const Slots& in, const Slots& out, const Unit<T>& u, const Lengths& lengths,
                     const T* dy, const Work<T>& w, cudaStream_t stream) const {
    const RnnDims& d = d_;
    const int64_t H = d.H, gh = d.G * H;
    T *dh = w.dh.template get<T>(), *dc = w.dc.template get<T>();
    copy_rows(dh, H, state_or_null<T>(in, s_.h_n_grad(), u.index, d), H, d.B, H, stream);
    if (kLstm) copy_rows(dc, H, state_or_null<T>(in, s_.c_n_grad(), u.index, d), H, d.B, H, stream);
    const T* w_hh = item<T>(in, 2, u.index);
    for (int64_t step = d.walked_steps() - 1; step >= 0; --step) {
      const int64_t t = u.time(step);
      T* dgx = w.dgx.template get<T>() + t * d.B * gh;
      T* dgh = w.hidden() + t * d.B * gh;
      const T* dout = dy ? dy + t * d.B * d.D * H + (u.reverse ? H : 0) : nullptr;
      launch(d.B * H, stream, step_grad_kernel<kLstm, T>, step_rows(u, t), lengths.get(), dout,
             d.D * H, dh, dc, dgx, dgh);
      gemm<T>(stream, false, false, d.B, H, gh, T(1), dgh, gh, w_hh, H, T(1), dh, H);
    }
    if (out.has(5)) copy_rows(out(5).data<T>() + u.index * d.B * H, H, dh, H, d.B, H, stream);
    if (kLstm && out.has(6))
      copy_rows(out(6).data<T>() + u.index * d.B * H, H, dc, H, d.B, H, stream);
  }

  // weight_hh_grad = dgh^T @ (every step's previous hidden state), weight_ih_grad = dgx^T @ the
  // layer's input (a GEMM per piece), the biases' gradients the column sums of dgx and dgh.
  template <class T>
  void weight_grads(const Slots& out, const Unit<T>& u, const std::vector<Piece<T>>& pieces,
                    const Work<T>& w, cudaStream_t stream) const {
    const RnnDims& d = d_;
    const int64_t steps = d.T * d.B, gh = d.G * d.H, in_size = d.input_size(u.index / d.D);
    const T *dgx = w.dgx.template get<T>(), *dgh = w.hidden();
    if (out.has(1)) {
      T* dw = item<T>(out, 1, u.index);
      for (const Piece<T>& p : pieces)
        gemm<T>(stream, true, false, gh, p.cols, steps, T(1), dgx, gh, p.data, p.ld, T(0),
                dw + p.offset, in_size);
    }
    if (out.has(2))  // prev(t) rises with t: the states steps 0 .. T - 1 read are contiguous rows
      gemm<T>(stream, true, false, gh, d.H, steps, T(1), dgh, gh, u.h(u.prev(0), 0), d.row(),
              T(0), item<T>(out, 2, u.index), d.H);
    if (out.has(3))
      launch(gh, stream, column_sums_kernel<T>, dgx, steps, gh, item<T>(out, 3, u.index));
    if (out.has(4))
      launch(gh, stream, column_sums_kernel<T>, dgh, steps, gh, item<T>(out, 4, u.index));
  }

  RnnSlots s_{kLstm};
  RnnDims d_;
};

}  // namespace

const char* cublas_unavailable_reason() { return pc::cublas_unavailable_reason(); }

PADDLE_CORE_REGISTER_KERNELS(pc::kernel<RnnCuda<true>>("lstm_cuda"),
                             pc::kernel<RnnGradCuda<true>>("lstm_grad_cuda"),
                             pc::kernel<RnnCuda<false>>("gru_cuda"),
                             pc::kernel<RnnGradCuda<false>>("gru_grad_cuda"));

}  // namespace paddle_ops_nn
