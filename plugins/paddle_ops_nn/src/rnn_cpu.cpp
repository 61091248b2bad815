// lstm, gru and their gradients on the CPU, on OpenBLAS's GEMM.
//
// Memory contract (checked in prepare; conventions in manifest/rnn.pbtxt): x [T, B, I];
// weight_ih[u] [G * H, in(l)], weight_hh[u] [G * H, H], the biases [G * H], for unit
// u = l * D + d; h0, c0, h_n, c_n and their gradients [L * D, B, H]; out and out_grad
// [T, B, D * H]; reserve [L * D, T + 1, B, W * H]: columns [0, G * H) of row t hold step t's
// gates, columns [4H, 5H) the hidden state and, for lstm, [5H, 6H) the cell state. Every input
// except the initial states and the outputs' gradients is required; those read as zeros when
// absent. Each gradient output is optional (absent: not computed).
//
// Per layer and direction, the forward pass is one GEMM projecting every step's input at once
// (written into the reserve's gate columns), then per step one GEMM of the previous hidden
// state with W_hh and the cell's elementwise formulas. The backward pass runs the steps in
// reverse with one GEMM per step (the hidden state's gradient through W_hh), keeping every
// step's gate gradients, then takes each weight's gradient, and the layer input's, as one GEMM
// over all steps. For float32 where oneDNN is enabled, the per-step products are oneDNN's
// (rnn_engine.hpp), on weight_hh reordered once per layer and run. Padded steps
// (t >= sequence_length[b]) carry the state through unchanged and have zero gate gradients, so
// the all-step GEMMs need no masks. The float32 cells run eight units at a time where the CPU
// has AVX2 and FMA (rnn_avx2.cpp): with scalar expf and tanhf they took a quarter of an lstm's
// time.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "blas.hpp"
#include "engine.hpp"
#include "rnn.hpp"
#include "rnn_avx2.hpp"
#include "rnn_engine.hpp"

namespace paddle_ops_nn {

std::unique_ptr<RecurrenceEngine> make_recurrence_engine(int64_t B, int64_t H, int64_t G,
                                                         bool backward, int32_t dtype,
                                                         int threads) {
  if constexpr (kOnednnBuilt)
    if (dtype == PC_FLOAT32 && onednn_enabled() && B > 0)
      return make_dnnl_recurrence(B, H, G, backward, threads);
  return nullptr;
}

namespace {

// The engine's weight_hh for the unit whose steps come next (float32 with an engine only); ws
// the engine's workspace.
template <class T>
void load_recurrence(const RecurrenceEngine* engine, const T* w_hh, char* ws, int threads) {
  if constexpr (std::is_same_v<T, float>)
    if (engine) engine->load(w_hh, ws, threads);
}

// The bytes of `count` values of type T, rounded up to whole cache lines: a slice of a
// kernel's workspace (its slices 64-byte aligned).
template <class T> size_t slice_bytes(int64_t count) {
  return (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
}

// The engine's workspace, at the start of the kernel's (0 bytes without an engine).
inline size_t engine_bytes(const std::unique_ptr<RecurrenceEngine>& engine) {
  return engine ? (engine->workspace_bytes() + 63) / 64 * 64 : 0;
}

// Sequences per chunk of a step's elementwise work: a step of the cells costs about ten
// simple elementwise ops per element (exp, tanh), so a tenth of the usual grain.
int64_t cell_grain(int64_t H) {
  return std::max<int64_t>(1, kGrain / 16 / std::max<int64_t>(H, 1));
}

// sequence_length's values, all checked against [1, T] before anything is computed; empty when
// the op has none (every sequence has T steps).
struct Lengths {
  std::vector<int64_t> of;
  bool active(int64_t t, int64_t b) const { return of.empty() || t < of[b]; }
};

Lengths read_lengths(const Slots& in, int32_t slot, const RnnDims& d) {
  Lengths lengths;
  if (!in.has(slot)) return lengths;
  lengths.of.resize(static_cast<size_t>(d.B));
  dispatch(in(slot).dtype(), Types<int32_t, int64_t>{}, [&](auto t) {
    const auto* values = in(slot).data<decltype(t)>();
    for (int64_t b = 0; b < d.B; ++b)
      lengths.of[b] = checked_length(static_cast<int64_t>(values[b]), b, d.T);
  });
  return lengths;
}

// -- the cells, one sequence at a time ---------------------------------------------------------

// rnn.hpp's formulas over a sequence's H units. The grad rows read the gradient flowing into h
// as dh + dout (dout may be null) and leave in dh the part of h_prev's gradient that does not
// go through weight_hh.
template <class T>
struct CellRows {
  void (*lstm)(int64_t H, T* gates, const T* hproj, const T* b_hh, const T* c_prev, T* h, T* c);
  void (*lstm_grad)(int64_t H, const T* gates, const T* c_prev, const T* c, T* dh, const T* dout,
                    T* dc, T* dgates);
  void (*gru)(int64_t H, T* gates, const T* hproj, const T* b_hh, const T* h_prev, T* h);
  void (*gru_grad)(int64_t H, const T* gates, const T* h_prev, T* dh, const T* dout, T* dgx,
                   T* dgh);
};

template <class T>
void lstm_row(int64_t H, T* gates, const T* hproj, const T* b_hh, const T* c_prev, T* h, T* c) {
  for (int64_t j = 0; j < H; ++j) lstm_cell(j, H, gates, hproj, b_hh, c_prev, h, c);
}

template <class T>
void lstm_grad_row(int64_t H, const T* gates, const T* c_prev, const T* c, T* dh, const T* dout,
                   T* dc, T* dgates) {
  for (int64_t j = 0; j < H; ++j) {
    lstm_cell_grad(j, H, gates, c_prev, c, dh[j] + (dout ? dout[j] : T(0)), dc, dgates);
    dh[j] = T(0);
  }
}

template <class T>
void gru_row(int64_t H, T* gates, const T* hproj, const T* b_hh, const T* h_prev, T* h) {
  for (int64_t j = 0; j < H; ++j) gru_cell(j, H, gates, hproj, b_hh, h_prev, h);
}

template <class T>
void gru_grad_row(int64_t H, const T* gates, const T* h_prev, T* dh, const T* dout, T* dgx,
                  T* dgh) {
  for (int64_t j = 0; j < H; ++j)
    dh[j] = gru_cell_grad(j, H, gates, h_prev, dh[j] + (dout ? dout[j] : T(0)), dgx, dgh);
}

// The portable rows, or for float32 on CPUs with AVX2 and FMA those of rnn_avx2.cpp.
template <class T>
CellRows<T> cell_rows() {
  if constexpr (std::is_same_v<T, float>)
    if (use_avx2())
      return {&avx2::lstm_row, &avx2::lstm_grad_row, &avx2::gru_row, &avx2::gru_grad_row};
  return {&lstm_row<T>, &lstm_grad_row<T>, &gru_row<T>, &gru_grad_row<T>};
}

// -- forward -----------------------------------------------------------------------------------

template <bool kLstm>
class Rnn {
 public:
  static constexpr pc::Signature signature{kLstm ? "1++++???" : "1++++??", kLstm ? "1111" : "111"};
  using DTypes = Floats;

  Rnn(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : d_(check_rnn(attrs, in, out, kLstm)) {
    const int32_t dtype = in(0).dtype();
    fn_ = dispatch(dtype, Floats{}, [](auto t) -> Fn { return &Rnn::compute<decltype(t)>; });
    engine_ = make_recurrence_engine(d_.B, d_.H, d_.G, false, dtype, ctx.num_threads());
    // The engine's workspace, then a step's hproj.
    const int64_t hproj = d_.B * d_.G * d_.H;
    ws_ = pc::Workspace(ctx, engine_bytes(engine_) + (dtype == PC_FLOAT64
                                                          ? slice_bytes<double>(hproj)
                                                          : slice_bytes<float>(hproj)));
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ws_.data(ctx), ctx.num_threads());
  }

 private:
  using Fn = void (Rnn::*)(const Slots&, const Slots&, char*, int32_t) const;

  template <class T>
  void compute(const Slots& in, const Slots& out, char* ws, int32_t threads) const {
    const RnnDims& d = d_;
    const Lengths lengths = read_lengths(in, s_.lengths(), d);
    set_blas_threads(threads);
    T* reserve = out(s_.reserve()).data<T>();
    T* hproj = reinterpret_cast<T*>(ws + engine_bytes(engine_));
    for (int64_t l = 0; l < d.L; ++l)
      for (int64_t dir = 0; dir < d.D; ++dir) {
        const Unit<T> u = unit_of(d, reserve, l, dir);
        project(in, u, layer_input(d, in(0).data<T>(), reserve, l));
        start(in, u);
        load_recurrence(engine_.get(), item<T>(in, 2, u.index), ws, threads);
        T* last = l + 1 == d.L ? out(0).data<T>() : nullptr;
        for (int64_t step = 0; step < d.walked_steps(); ++step)
          advance(in, u, u.time(step), lengths, hproj, last, ws, threads);
        finish(out, u);
      }
  }

  // Every step's gates = the layer's input @ weight_ih^T + bias_ih, one GEMM per piece.
  template <class T>
  void project(const Slots& in, const Unit<T>& u, const std::vector<Piece<T>>& pieces) const {
    const RnnDims& d = d_;
    const int64_t gh = d.G * d.H, in_size = d.input_size(u.index / d.D);
    const T* w = item<T>(in, 1, u.index);
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Piece<T>& p = pieces[k];
      gemm<T>(false, true, d.T * d.B, gh, p.cols, T(1), p.data, p.ld, w + p.offset, in_size,
              k == 0 ? T(0) : T(1), u.base, d.row());
    }
    const T* bias = item<T>(in, 3, u.index);
    for (int64_t r = 0; r < d.T * d.B; ++r) {
      T* gates = u.base + r * d.row();
      for (int64_t j = 0; j < gh; ++j) gates[j] += bias[j];
    }
  }

  // The initial state into its row (zeros where h0 / c0 are absent); the gates of row T, which
  // no step has, to zeros.
  template <class T>
  void start(const Slots& in, const Unit<T>& u) const {
    const RnnDims& d = d_;
    const T* h0 = state_or_null<T>(in, s_.h0(), u.index, d);
    const T* c0 = kLstm ? state_or_null<T>(in, s_.c0(), u.index, d) : nullptr;
    for (int64_t b = 0; b < d.B; ++b) {
      T* h = u.h(u.initial(), b);
      if (h0)
        std::copy_n(h0 + b * d.H, d.H, h);
      else
        std::fill_n(h, d.H, T(0));
      if (kLstm) {
        if (c0)
          std::copy_n(c0 + b * d.H, d.H, u.c(u.initial(), b));
        else
          std::fill_n(u.c(u.initial(), b), d.H, T(0));
      }
      std::fill_n(u.at(d.T, b), 4 * d.H, T(0));
    }
  }

  // Step t: hproj = h_prev @ weight_hh^T, then the cells; a padded sequence keeps its state, its
  // gates are zeros. last: the op's out, when this is the last layer.
  template <class T>
  void advance(const Slots& in, const Unit<T>& u, int64_t t, const Lengths& lengths, T* hproj,
               T* last, char* ws, int32_t threads) const {
    const RnnDims& d = d_;
    const int64_t H = d.H, gh = d.G * H;
    recur(u.h(u.prev(t), 0), item<T>(in, 2, u.index), hproj, ws, threads);
    const T* b_hh = item<T>(in, 4, u.index);
    const CellRows<T> rows = cell_rows<T>();
    parallel_rows(d.B, threads, cell_grain(H), [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) {
        T* gates = u.at(t, b);
        T *h = u.h(u.next(t), b), *h_prev = u.h(u.prev(t), b);
        T* o = last ? last + (t * d.B + b) * d.D * H + (u.reverse ? H : 0) : nullptr;
        if (!lengths.active(t, b)) {
          std::fill_n(gates, 4 * H, T(0));
          std::copy_n(h_prev, H, h);
          if (kLstm) std::copy_n(u.c(u.prev(t), b), H, u.c(u.next(t), b));
          if (o) std::fill_n(o, H, T(0));
          continue;
        }
        const T* hp = hproj + b * gh;
        if constexpr (kLstm)
          rows.lstm(H, gates, hp, b_hh, u.c(u.prev(t), b), h, u.c(u.next(t), b));
        else
          rows.gru(H, gates, hp, b_hh, h_prev, h);
        if (o) std::copy_n(h, H, o);
      }
    });
  }

  // hproj = h_prev @ weight_hh^T (h_prev: B rows of the reserve).
  template <class T>
  void recur(const T* h_prev, const T* w_hh, T* hproj, char* ws, int32_t threads) const {
    const RnnDims& d = d_;
    if constexpr (std::is_same_v<T, float>)
      if (engine_) return engine_->forward(h_prev, d.row(), hproj, ws, threads);
    gemm<T>(false, true, d.B, d.G * d.H, d.H, T(1), h_prev, d.row(), w_hh, d.H, T(0), hproj,
            d.G * d.H);
  }

  // The final state into h_n (and c_n).
  template <class T>
  void finish(const Slots& out, const Unit<T>& u) const {
    const RnnDims& d = d_;
    T* h_n = out(s_.h_n()).data<T>() + u.index * d.B * d.H;
    T* c_n = kLstm ? out(s_.c_n()).data<T>() + u.index * d.B * d.H : nullptr;
    for (int64_t b = 0; b < d.B; ++b) {
      std::copy_n(u.h(u.last(), b), d.H, h_n + b * d.H);
      if (kLstm) std::copy_n(u.c(u.last(), b), d.H, c_n + b * d.H);
    }
  }

  RnnSlots s_{kLstm};
  RnnDims d_;
  Fn fn_;
  std::unique_ptr<RecurrenceEngine> engine_;  // null: OpenBLAS
  pc::Workspace ws_;
};

// -- backward ----------------------------------------------------------------------------------

template <bool kLstm>
class RnnGrad {
 public:
  static constexpr pc::Signature signature{kLstm ? "1++++1??????" : "1++++1????",
                                           kLstm ? "?****??" : "?****?"};
  using DTypes = Floats;

  RnnGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : d_(check_rnn_grad(attrs, in, out, kLstm)) {
    const int32_t dtype = in(0).dtype();
    fn_ = dispatch(dtype, Floats{}, [](auto t) -> Fn { return &RnnGrad::compute<decltype(t)>; });
    engine_ = make_recurrence_engine(d_.B, d_.H, d_.G, true, dtype, ctx.num_threads());
    const size_t work = dtype == PC_FLOAT64 ? Work<double>(d_, nullptr).bytes
                                            : Work<float>(d_, nullptr).bytes;
    ws_ = pc::Workspace(ctx, engine_bytes(engine_) + work);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ws_.data(ctx), ctx.num_threads());
  }

 private:
  using Fn = void (RnnGrad::*)(const Slots&, const Slots&, char*, int32_t) const;

  // What a run works in, in the kernel's workspace after the engine's: every step's gate
  // gradients of one unit (input side dgx, hidden side dgh: the same for lstm), the carried
  // state gradients, and the gradient of each layer's output, two layers at a time. (Planned
  // with the plan's buffers, not allocated per run: afresh, its megabytes came back from the
  // system as page faults at every run, a tenth of the op.)
  template <class T>
  struct Work {
    Work(const RnnDims& d, char* at) {
      const int64_t steps = d.T * d.B;
      const auto take = [&](int64_t count) {  // (at is null when only sizing)
        T* slice = reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(at) + bytes);
        bytes += slice_bytes<T>(count);
        return slice;
      };
      dgx = take(steps * d.G * d.H);
      dgh = kLstm ? nullptr : take(steps * d.G * d.H);
      dh = take(d.B * d.H);
      dc = take(d.B * d.H);
      for (T*& y : dy) y = d.L > 1 ? take(steps * d.D * d.H) : nullptr;
    }
    T *dgx, *dgh, *dh, *dc, *dy[2];
    size_t bytes = 0;  // the slices' bytes together
  };

  template <class T>
  void compute(const Slots& in, const Slots& out, char* ws, int32_t threads) const {
    const RnnDims& d = d_;
    const Lengths lengths = read_lengths(in, s_.grad_lengths(), d);
    set_blas_threads(threads);
    const int64_t steps = d.T * d.B, gh = d.G * d.H;
    Work<T> w(d, ws + engine_bytes(engine_));
    T* reserve = in(s_.grad_reserve()).data<T>();
    const T* top = in.has(s_.out_grad()) ? in(s_.out_grad()).data<T>() : nullptr;
    for (int64_t l = d.L - 1; l >= 0; --l) {
      const T* dy = l + 1 == d.L ? top : w.dy[(l + 1) % 2];
      T* dx = l > 0 ? w.dy[l % 2] : out.has(0) ? out(0).data<T>() : nullptr;
      const auto pieces = layer_input(d, in(0).data<T>(), reserve, l);
      for (int64_t dir = 0; dir < d.D; ++dir) {
        const Unit<T> u = unit_of(d, reserve, l, dir);
        through_steps(in, out, u, lengths, dy, w, ws, threads);
        weight_grads(out, u, pieces, w);
        if (dx)
          gemm<T>(false, false, steps, d.input_size(l), gh, T(1), w.dgx, gh,
                  item<T>(in, 1, u.index), d.input_size(l), dir == 0 ? T(0) : T(1), dx,
                  d.input_size(l));
      }
    }
  }

  // The steps of one unit in reverse: each step's gate gradients into w.dgx / w.dgh, the state
  // gradients carried in w.dh / w.dc (from h_n_grad / c_n_grad) and left in h0_grad / c0_grad.
  // dy: the gradient of the layer's output [T, B, D * H], or null for none.
  template <class T>
  void through_steps(const Slots& in, const Slots& out, const Unit<T>& u, const Lengths& lengths,
                     const T* dy, Work<T>& w, char* ws, int32_t threads) const {
    const RnnDims& d = d_;
    const int64_t H = d.H, gh = d.G * H;
    load(w.dh, state_or_null<T>(in, s_.h_n_grad(), u.index, d), d.B * H);
    if (kLstm) load(w.dc, state_or_null<T>(in, s_.c_n_grad(), u.index, d), d.B * H);
    T* dgh_all = kLstm ? w.dgx : w.dgh;
    const T* w_hh = item<T>(in, 2, u.index);
    load_recurrence(engine_.get(), w_hh, ws, threads);
    const CellRows<T> rows = cell_rows<T>();
    for (int64_t step = d.walked_steps() - 1; step >= 0; --step) {
      const int64_t t = u.time(step);
      T* dgx = w.dgx + t * d.B * gh;
      T* dgh = dgh_all + t * d.B * gh;
      parallel_rows(d.B, threads, cell_grain(H), [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) {
          T *gx = dgx + b * gh, *gg = dgh + b * gh;
          if (!lengths.active(t, b)) {  // the state's gradient passes through unchanged
            std::fill_n(gx, gh, T(0));
            if (!kLstm) std::fill_n(gg, gh, T(0));
            continue;
          }
          const T* gates = u.at(t, b);
          const T* o = dy ? dy + (t * d.B + b) * d.D * H + (u.reverse ? H : 0) : nullptr;
          T* dh = w.dh + b * H;
          if constexpr (kLstm)
            rows.lstm_grad(H, gates, u.c(u.prev(t), b), u.c(u.next(t), b), dh, o,
                           w.dc + b * H, gx);
          else
            rows.gru_grad(H, gates, u.h(u.prev(t), b), dh, o, gx, gg);
        }
      });
      recur_grad(dgh, w_hh, w.dh, ws, threads);
    }
    if (out.has(5)) std::copy_n(w.dh, d.B * H, out(5).data<T>() + u.index * d.B * H);
    if (kLstm && out.has(6))
      std::copy_n(w.dc, d.B * H, out(6).data<T>() + u.index * d.B * H);
  }

  // dh += dgates @ weight_hh.
  template <class T>
  void recur_grad(const T* dgates, const T* w_hh, T* dh, char* ws, int32_t threads) const {
    const RnnDims& d = d_;
    if constexpr (std::is_same_v<T, float>)
      if (engine_) return engine_->backward(dgates, dh, ws, threads);
    gemm<T>(false, false, d.B, d.H, d.G * d.H, T(1), dgates, d.G * d.H, w_hh, d.H, T(1), dh, d.H);
  }

  template <class T>
  static void load(T* to, const T* from, int64_t n) {
    if (from)
      std::copy_n(from, n, to);
    else
      std::fill_n(to, n, T(0));
  }

  // weight_hh_grad = dgh^T @ (every step's previous hidden state), weight_ih_grad = dgx^T @ the
  // layer's input (a GEMM per piece), the biases' gradients the column sums of dgx and dgh.
  template <class T>
  void weight_grads(const Slots& out, const Unit<T>& u, const std::vector<Piece<T>>& pieces,
                    const Work<T>& w) const {
    const RnnDims& d = d_;
    const int64_t steps = d.T * d.B, gh = d.G * d.H, in_size = d.input_size(u.index / d.D);
    const T* dgh = kLstm ? w.dgx : w.dgh;
    if (out.has(1)) {
      T* dw = item<T>(out, 1, u.index);
      for (const Piece<T>& p : pieces)
        gemm<T>(true, false, gh, p.cols, steps, T(1), w.dgx, gh, p.data, p.ld, T(0),
                dw + p.offset, in_size);
    }
    if (out.has(2)) {
      // prev(t) rises with t: the states steps 0 .. T - 1 read are contiguous rows.
      gemm<T>(true, false, gh, d.H, steps, T(1), dgh, gh, u.h(u.prev(0), 0), d.row(), T(0),
              item<T>(out, 2, u.index), d.H);
    }
    if (out.has(3)) column_sums(w.dgx, steps, gh, item<T>(out, 3, u.index));
    if (out.has(4)) column_sums(dgh, steps, gh, item<T>(out, 4, u.index));
  }

  template <class T>
  static void column_sums(const T* m, int64_t rows, int64_t cols, T* sums) {
    std::fill_n(sums, cols, T(0));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) sums[k] += m[r * cols + k];
  }

  RnnSlots s_{kLstm};
  RnnDims d_;
  Fn fn_;
  std::unique_ptr<RecurrenceEngine> engine_;  // null: OpenBLAS
  pc::Workspace ws_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(pc::kernel<Rnn<true>>("lstm"), pc::kernel<RnnGrad<true>>("lstm_grad"),
                             pc::kernel<Rnn<false>>("gru"), pc::kernel<RnnGrad<false>>("gru_grad"));

}  // namespace paddle_ops_nn
