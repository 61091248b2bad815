// CUDA kernels of scaled_dot_product_attention and its gradient: same checks, geometry, masked
// scores and dtypes as attention_cpu.cpp (attention.hpp). A straightforward form, one thread per
// row and no shared-memory tiles: the forward runs an online softmax over the keys of one
// query row, accumulating into its row of out; the gradient recomputes each probability from
// logsumexp, one thread per query row for q_grad and one per key row for k_grad and v_grad, so
// no two threads write one element (no atomics; results do not depend on the launch shape).
// Dropout draws each pair's number on its own (dropout_keeps): the CPU kernels' mask, from the
// stream the forward copies to rng_state and the gradient's threads rebuild from it.
// Correct, not fast: a tiled kernel (or cuDNN's) is what a GPU needs for speed.
//
// Memory contract: as the CPU kernels', all on the CUDA device of the plan's stream; each
// thread writes every element of its own rows.
#include "attention.hpp"
#include "cuda.cuh"

namespace paddle_ops_nn {
namespace {

template <class T> __device__ const void* batch_mask(const AttentionGeometry& g, const void* mask,
                                                     int64_t b) {
  if (g.mask == MaskKind::kBool) return static_cast<const uint8_t*>(mask) + g.mask_offset(b);
  if (g.mask == MaskKind::kFloat) return static_cast<const T*>(mask) + g.mask_offset(b);
  return nullptr;
}

template <class T> __device__ T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
  for (int64_t e = 0; e < n; ++e) acc += a[e] * b[e];
  return acc;
}

// out and logsumexp of row (b, i); rng is the dropout's stream (where g.drops).
template <class T>
__global__ void attention_kernel(const T* q, const T* k, const T* v, const void* mask, T* out,
                                 T* lse, AttentionGeometry g, Random rng) {
  for (int64_t row = first_index(); row < g.batch * g.L; row += index_step()) {
    const int64_t b = row / g.L, i = row % g.L;
    const T* qi = q + row * g.E;
    const T *kb = k + b * g.S * g.E, *vb = v + b * g.S * g.Ev;
    const void* m = batch_mask<T>(g, mask, b);
    if (featureless(g)) {  // out has no column: the row's logsumexp, its keys not walked
      lse[row] = uniform_logsumexp<T>(g, m, i);
      continue;
    }
    T* o = out + row * g.Ev;
    for (int64_t c = 0; c < g.Ev; ++c) o[c] = T(0);
    T mx = -std::numeric_limits<T>::infinity(), l = 0;
    for (int64_t j = 0; j < g.S; ++j) {
      const T s = masked_score(g, m, dot(qi, kb + j * g.E, g.E), i, j);
      if (s == -std::numeric_limits<T>::infinity()) continue;
      const T m_new = s > mx ? s : mx;
      const T alpha = std::exp(mx - m_new), p = std::exp(s - m_new);
      l = l * alpha + p;
      // The kept share of p (dropout drops it from out, not from the normalisation l).
      const T pz = !g.drops                       ? p
                   : dropout_keeps(g, rng, b, i, j) ? p * static_cast<T>(g.keep_scale)
                                                    : T(0);
      for (int64_t c = 0; c < g.Ev; ++c) o[c] = o[c] * alpha + pz * vb[j * g.Ev + c];
      mx = m_new;
    }
    const T inv = l > T(0) ? T(1) / l : T(0);
    for (int64_t c = 0; c < g.Ev; ++c) o[c] *= inv;
    lse[row] = l > T(0) ? mx + std::log(l) : -std::numeric_limits<T>::infinity();
  }
}

// dS of pair (i, j) of batch b: P (dP Z - D), with P recomputed from logsumexp and Z the
// dropout's factor of the pair (1 without dropout).
template <class T> struct GradRows {
  const T *q, *k, *v, *lse, *dout, *D;
  const void* mask;
  const int64_t* rng_state;  // the forward's (where g.drops)
  AttentionGeometry g;

  // The dropout's stream (an unused one without dropout).
  __device__ Random stream() const {
    return g.drops ? attention_stream(rng_state) : Random(uint64_t{0}, uint64_t{0});
  }
  __device__ T dropout_factor(const Random& rng, int64_t b, int64_t i, int64_t j) const {
    if (!g.drops) return T(1);
    return dropout_keeps(g, rng, b, i, j) ? static_cast<T>(g.keep_scale) : T(0);
  }

  __device__ T probability_of(int64_t b, int64_t i, int64_t j) const {
    const T s = masked_score(g, batch_mask<T>(g, mask, b), dot(q + (b * g.L + i) * g.E,
                                                               k + (b * g.S + j) * g.E, g.E),
                             i, j);
    return probability(s, lse[b * g.L + i]);
  }
  __device__ T ds_of(int64_t b, int64_t i, int64_t j, T p, T z) const {
    const T dp = dot(dout + (b * g.L + i) * g.Ev, v + (b * g.S + j) * g.Ev, g.Ev);
    return p * (dp * z - D[b * g.L + i]);
  }
};

template <class T> __global__ void rowsum_kernel(const T* dout, const T* out, T* D, int64_t rows,
                                                 int64_t Ev) {
  for (int64_t r = first_index(); r < rows; r += index_step())
    D[r] = dot(dout + r * Ev, out + r * Ev, Ev);
}

// q_grad of row (b, i) = scale * sum_j dS_ij k_j.
template <class T> __global__ void attention_dq_kernel(GradRows<T> r, T* dq) {
  const AttentionGeometry& g = r.g;
  const Random rng = r.stream();
  for (int64_t row = first_index(); row < g.batch * g.L; row += index_step()) {
    const int64_t b = row / g.L, i = row % g.L;
    T* out = dq + row * g.E;
    for (int64_t e = 0; e < g.E; ++e) out[e] = T(0);
    for (int64_t j = 0; j < g.S; ++j) {
      const T p = r.probability_of(b, i, j);
      if (p == T(0)) continue;
      const T ds = r.ds_of(b, i, j, p, r.dropout_factor(rng, b, i, j)) * static_cast<T>(g.scale);
      for (int64_t e = 0; e < g.E; ++e) out[e] += ds * r.k[(b * g.S + j) * g.E + e];
    }
  }
}

// k_grad and v_grad of key row (b, j): scale * sum_i dS_ij q_i and sum_i P_ij dout_i.
template <class T> __global__ void attention_dkdv_kernel(GradRows<T> r, T* dk, T* dv) {
  const AttentionGeometry& g = r.g;
  const Random rng = r.stream();
  for (int64_t row = first_index(); row < g.batch * g.S; row += index_step()) {
    const int64_t b = row / g.S, j = row % g.S;
    if (dk != nullptr)
      for (int64_t e = 0; e < g.E; ++e) dk[row * g.E + e] = T(0);
    if (dv != nullptr)
      for (int64_t c = 0; c < g.Ev; ++c) dv[row * g.Ev + c] = T(0);
    for (int64_t i = 0; i < g.L; ++i) {
      const T p = r.probability_of(b, i, j);
      if (p == T(0)) continue;
      const T z = r.dropout_factor(rng, b, i, j);
      if (dv != nullptr)
        for (int64_t c = 0; c < g.Ev; ++c)
          dv[row * g.Ev + c] += p * z * r.dout[(b * g.L + i) * g.Ev + c];
      if (dk == nullptr) continue;
      const T ds = r.ds_of(b, i, j, p, z) * static_cast<T>(g.scale);
      for (int64_t e = 0; e < g.E; ++e) dk[row * g.E + e] += ds * r.q[(b * g.L + i) * g.E + e];
    }
  }
}

const void* mask_data(const Slots& in, int32_t slot) {
  return in.has(slot) ? in(slot).data<void>() : nullptr;
}

class AttentionCuda {
 public:
  static constexpr pc::Signature signature{"111?", "11?"};
  using DTypes = Floats;
  AttentionCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : g_(check_attention(attrs, in, out)), seed_(attrs.l("seed")) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, seed_);
    if (g_.drops) {
      const int64_t state[2] = {static_cast<int64_t>(rng.key()), static_cast<int64_t>(rng.run())};
      check_cuda(cudaMemcpyAsync(out(kAttentionStateSlot).data<int64_t>(), state, sizeof(state),
                                 cudaMemcpyHostToDevice, stream_of(ctx)),
                 "copy");
    }
    launch_floats(g_.batch * g_.L, in(0).dtype(), ctx, [&](auto t, Grid grid, cudaStream_t s) {
      using T = decltype(t);
      attention_kernel<T><<<grid.blocks, grid.threads, 0, s>>>(
          in(0).data<T>(), in(1).data<T>(), in(2).data<T>(), mask_data(in, kAttentionMaskSlot),
          out(0).data<T>(), out(1).data<T>(), g_, rng);
    });
  }

 private:
  AttentionGeometry g_;
  int64_t seed_;
};

class AttentionGradCuda {
 public:
  static constexpr pc::Signature signature{"111111??", "???"};
  using DTypes = Floats;
  AttentionGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : g_(check_attention_grad(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) { run_typed<decltype(t)>(in, out, ctx); });
  }

 private:
  template <class T> void run_typed(const Slots& in, const Slots& out, const Context& ctx) const {
    const Scratch D(static_cast<size_t>(g_.batch * g_.L) * sizeof(T), stream_of(ctx));
    GradRows<T> r{in(0).data<T>(), in(1).data<T>(), in(2).data<T>(), in(4).data<T>(),
                  in(5).data<T>(), D.get<T>(),
                  mask_data(in, kAttentionGradMaskSlot),
                  g_.drops ? in(kAttentionGradStateSlot).data<int64_t>() : nullptr, g_};
    const int32_t dtype = in(0).dtype();
    launch_floats(g_.batch * g_.L, dtype, ctx, [&](auto, Grid grid, cudaStream_t s) {
      rowsum_kernel<T><<<grid.blocks, grid.threads, 0, s>>>(
          r.dout, in(3).data<T>(), D.get<T>(), g_.batch * g_.L, g_.Ev);
    });
    // A gradient of no element is not computed: with no feature (E or Ev 0) its rows would
    // still walk the queries or keys, 2^40 of them in k [..., 2^40, 0].
    if (out.has(0) && g_.E > 0)
      launch_floats(g_.batch * g_.L, dtype, ctx, [&](auto, Grid grid, cudaStream_t s) {
        attention_dq_kernel<T><<<grid.blocks, grid.threads, 0, s>>>(r, out(0).data<T>());
      });
    T* dk = out.has(1) && g_.E > 0 ? out(1).data<T>() : nullptr;
    T* dv = out.has(2) && g_.Ev > 0 ? out(2).data<T>() : nullptr;
    if (dk != nullptr || dv != nullptr)
      launch_floats(g_.batch * g_.S, dtype, ctx, [&](auto, Grid grid, cudaStream_t s) {
        attention_dkdv_kernel<T><<<grid.blocks, grid.threads, 0, s>>>(r, dk, dv);
      });
  }

  AttentionGeometry g_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AttentionCuda>("scaled_dot_product_attention_cuda"),
    pc::kernel<AttentionGradCuda>("scaled_dot_product_attention_grad_cuda"));

}  // namespace paddle_ops_nn
