// scaled_dot_product_attention and its gradient, for every device: the geometry and the checks
// of prepare (the CPU kernels, attention_cpu.cpp, and the CUDA ones, attention_cuda.cu, run the
// same), and the score of one (query, key) pair with its mask, which both devices compute with
// these functions. Under nvcc they are __host__ __device__.
//
// Layout: q [..., L, E], k [..., S, E], v [..., S, Ev], out [..., L, Ev], logsumexp [..., L];
// the leading dimensions are equal and are flattened into `batch` (batch * heads). A score is
// q_i . k_j * scale, plus the mask's value for a float mask; a pair a bool mask marks false, or
// that is_causal hides (j > i, top-left aligned as PyTorch's), has the score -inf. A row whose
// every score is -inf (fully masked, or S == 0) gives out 0, logsumexp -inf and no gradient:
// PyTorch gives NaN there for a bool mask; zeros let a padded batch train.
//
// The mask is broadcast to [..., L, S] by NumPy's rules (right-aligned, dimensions 1 or equal,
// missing ones in front): it is read through strides, 0 where it is broadcast.
//
// Dropout (dropout_p > 0, not is_test): the probability of pair (i, j) of batch entry b is kept,
// and scaled by 1 / (1 - p), where the float uniform number of element (b * L + i) * S + j of
// the op's stream (paddle_core/random.hpp) is >= p, as dropout keeps element i of a [..., L, S]
// tensor; the normalisation (l, logsumexp) is that of the probabilities before dropout. The
// forward writes the stream's key and run counter to rng_state (int64 [2]); the gradient draws
// the same numbers from it. Each pair's draw depends on (b, i, j) alone, so the mask is the same
// whatever the tiles, threads or device.
#ifndef PADDLE_OPS_NN_ATTENTION_HPP_
#define PADDLE_OPS_NN_ATTENTION_HPP_

#include <cmath>
#include <cstdint>
#include <limits>

#include <paddle_core/random.hpp>

#include "common.hpp"

namespace paddle_ops_nn {

// The most leading dimensions a mask is broadcast over (its offsets are computed on the GPU
// from fixed arrays).
constexpr int32_t kAttentionMaxLead = 8;

// The attn_mask's input slot: (q, k, v, attn_mask?) and (q, k, v, out, logsumexp, out_grad,
// attn_mask?, rng_state?); rng_state's: the forward's output and the gradient's input.
constexpr int32_t kAttentionMaskSlot = 3, kAttentionGradMaskSlot = 6;
constexpr int32_t kAttentionStateSlot = 2, kAttentionGradStateSlot = 7;
// packed_attention's: (qkv, attn_mask?) and (qkv, out, logsumexp, out_grad, attn_mask?,
// rng_state?); its forward's rng_state is output 2, as above.
constexpr int32_t kPackedMaskSlot = 1, kPackedGradMaskSlot = 4, kPackedGradStateSlot = 5;

using pc::Random;

enum class MaskKind : int32_t { kNone, kBool, kFloat };

struct AttentionGeometry {
  int64_t batch = 1, L = 0, S = 0, E = 0, Ev = 0;
  double scale = 1;
  bool causal = false;
  MaskKind mask = MaskKind::kNone;
  // The mask's strides along L and S, and its leading dimensions (q's) and strides (0 where
  // broadcast): element (b, i, j) is at mask_offset(b) + i * mask_row + j * mask_col.
  int64_t mask_row = 0, mask_col = 0;
  int32_t lead = 0;
  int64_t lead_dims[kAttentionMaxLead] = {}, lead_strides[kAttentionMaxLead] = {};
  // Dropout: whether it drops (dropout_p > 0 while training), p as the draws are compared
  // with it, and the kept probabilities' factor 1 / (1 - p).
  bool drops = false;
  float dropout_p = 0;
  double keep_scale = 1;

  PADDLE_CORE_HD int64_t mask_offset(int64_t b) const {
    int64_t off = 0;
    for (int32_t k = lead - 1; k >= 0; --k) {
      off += b % lead_dims[k] * lead_strides[k];
      b /= lead_dims[k];
    }
    return off;
  }
};

// The score of (i, j) from its dot product: scaled, masked (mask points at the batch's
// first element, or is null), -inf where hidden.
template <class T>
PADDLE_CORE_HD T masked_score(const AttentionGeometry& g, const void* mask, T dot, int64_t i,
                              int64_t j) {
  if (g.causal && j > i) return -std::numeric_limits<T>::infinity();
  const T s = dot * static_cast<T>(g.scale);
  if (g.mask == MaskKind::kNone) return s;
  const int64_t at = i * g.mask_row + j * g.mask_col;
  if (g.mask == MaskKind::kBool)
    return static_cast<const uint8_t*>(mask)[at] ? s : -std::numeric_limits<T>::infinity();
  return s + static_cast<const T*>(mask)[at];
}

// The index of pair (i, j) of batch entry b among the dropout's draws: its element of the
// [batch, L, S] probabilities.
PADDLE_CORE_HD inline uint64_t draw_index(const AttentionGeometry& g, int64_t b, int64_t i,
                                          int64_t j) {
  return static_cast<uint64_t>((b * g.L + i) * g.S + j);
}

// Whether dropout keeps pair (i, j) of batch entry b (draw by draw; the CPU kernels draw a row
// at a time, the same numbers).
PADDLE_CORE_HD inline bool dropout_keeps(const AttentionGeometry& g, const Random& rng,
                                         int64_t b, int64_t i, int64_t j) {
  return rng.uniform<float>(draw_index(g, b, i, j)) >= g.dropout_p;
}

// The stream rng_state holds (what attention_rng_state wrote).
PADDLE_CORE_HD inline Random attention_stream(const int64_t* state) {
  return Random(static_cast<uint64_t>(state[0]), static_cast<uint64_t>(state[1]));
}

// exp(score - logsumexp): the probability of a pair, 0 in a row with no visible key (its
// logsumexp is -inf).
template <class T> PADDLE_CORE_HD T probability(T score, T lse) {
  return lse == -std::numeric_limits<T>::infinity() ? T(0) : std::exp(score - lse);
}

// Whether a row's logsumexp comes without walking its keys: q and k have no feature (E == 0:
// every dot product is 0), v has none (Ev == 0: out has no column), and the mask does not vary
// along S. Every key a row sees then has the same score, and k [..., 2^40, 0], which holds no
// element, makes no kernel walk 2^40 keys (uniform_logsumexp).
PADDLE_CORE_HD inline bool featureless(const AttentionGeometry& g) {
  return g.E == 0 && g.Ev == 0 && g.mask_col == 0;
}

// logsumexp of row i where featureless (mask at the batch's first element, or null): the row's
// one score plus the log of how many keys it sees (S, or i + 1 when causal); -inf with none.
template <class T>
PADDLE_CORE_HD T uniform_logsumexp(const AttentionGeometry& g, const void* mask, int64_t i) {
  const int64_t seen = g.causal && i + 1 < g.S ? i + 1 : g.S;
  if (seen == 0) return -std::numeric_limits<T>::infinity();
  const T s = masked_score(g, mask, T(0), i, 0);
  if (s == -std::numeric_limits<T>::infinity()) return s;
  return s + static_cast<T>(std::log(static_cast<double>(seen)));
}

// -- the checks of prepare -------------------------------------------------------------------

inline void expect_attention_rank(const Tensor& t, const char* what, const Tensor& q) {
  if (t.ndim() != q.ndim())
    fail("%s %s must have q's rank %d (equal leading dimensions; broadcasting them is not "
         "supported)",
         what, t.describe().c_str(), q.ndim());
  for (int32_t k = 0; k + 2 < q.ndim(); ++k)
    if (t.dim(k) != q.dim(k))
      fail("%s %s and q %s must have equal leading dimensions (dimension %d differs; "
           "broadcasting them is not supported)",
           what, t.describe().c_str(), q.describe().c_str(), k);
}

// Reads the mask's geometry into g; fails unless it is bool or q's dtype and broadcasts to
// the scores' shape [lead..., L, S] (lead: `nlead` dimensions, batch and heads).
inline void attention_mask(const Tensor& m, const Tensor& q, const int64_t* lead, int32_t nlead,
                           AttentionGeometry& g) {
  if (m.dtype() == PC_BOOL) g.mask = MaskKind::kBool;
  else if (m.dtype() == q.dtype()) g.mask = MaskKind::kFloat;
  else
    fail("attn_mask %s must be bool or q's dtype %s", m.describe().c_str(),
         q.describe().c_str());
  const int32_t nd = nlead + 2, md = m.ndim();
  auto bad = [&] {
    fail("attn_mask %s does not broadcast to the scores' shape [..., L=%lld, S=%lld] of q %s",
         m.describe().c_str(), static_cast<long long>(g.L), static_cast<long long>(g.S),
         q.describe().c_str());
  };
  if (md > nd) bad();
  // Target dimension k of [..., L, S] and the mask's stride along it (0: broadcast).
  auto stride = [&](int32_t k, int64_t want) -> int64_t {
    const int32_t mk = k - (nd - md);
    if (mk < 0) return 0;
    const int64_t have = m.dim(mk);
    if (have != 1 && have != want) bad();
    return have == 1 ? 0 : m.raw().strides[mk];
  };
  g.mask_row = stride(nd - 2, g.L);
  g.mask_col = stride(nd - 1, g.S);
  g.lead = nlead;
  if (g.lead > kAttentionMaxLead)
    fail("attn_mask with q %s: at most %d leading dimensions are supported with a mask",
         q.describe().c_str(), kAttentionMaxLead);
  for (int32_t k = 0; k < g.lead; ++k) {
    g.lead_dims[k] = lead[k];
    g.lead_strides[k] = stride(k, lead[k]);
  }
}

// Reads the attrs (dropout, causal, scale) into g, whose E is known; has_mask: whether an
// attn_mask is given.
inline void attention_attrs(const Attrs& attrs, bool has_mask, AttentionGeometry& g) {
  const double p = attrs.f("dropout_p");
  if (!(p >= 0 && p < 1)) fail("dropout_p=%g must be in [0, 1)", p);
  if (p > 0 && !attrs.b("is_test")) {
    g.drops = true;
    g.dropout_p = static_cast<float>(p);
    g.keep_scale = 1 / (1 - p);
  }
  g.causal = attrs.b("is_causal");
  if (g.causal && has_mask)
    fail("is_causal=true and an attn_mask cannot be given together (as PyTorch)");
  const double scale = attrs.f("scale");
  // scale 0 means 1 / sqrt(E); with E == 0 every dot product is 0, and any scale gives 0.
  g.scale = scale != 0 ? scale : (g.E > 0 ? 1 / std::sqrt(double(g.E)) : 1.0);
}

// The geometry of q, k, v (slots 0-2), the attn_mask if slot mask_slot has one, and the attrs;
// fails where they do not fit together.
inline AttentionGeometry attention_geometry(const Attrs& attrs, const Slots& in,
                                            int32_t mask_slot) {
  const Tensor q = in(0), k = in(1), v = in(2);
  if (q.ndim() < 2) fail("q %s must be at least 2-D: [..., L, E]", q.describe().c_str());
  dispatch(q.dtype(), Floats{}, [](auto) {});
  expect_same_dtype(q, k, "q and k");
  expect_same_dtype(q, v, "q and v");
  expect_attention_rank(k, "k", q);
  expect_attention_rank(v, "v", q);
  AttentionGeometry g;
  for (int32_t d = 0; d + 2 < q.ndim(); ++d) g.batch *= q.dim(d);
  g.L = q.dim(-2), g.E = q.dim(-1), g.S = k.dim(-2), g.Ev = v.dim(-1);
  if (k.dim(-1) != g.E)
    fail("k %s must have q's head dimension E=%lld (q %s)", k.describe().c_str(),
         static_cast<long long>(g.E), q.describe().c_str());
  if (v.dim(-2) != g.S)
    fail("v %s must have k's sequence length S=%lld (k %s)", v.describe().c_str(),
         static_cast<long long>(g.S), k.describe().c_str());
  attention_attrs(attrs, in.has(mask_slot), g);
  if (in.has(mask_slot)) {
    int64_t lead[kAttentionMaxLead] = {};  // (attention_mask refuses more)
    for (int32_t d = 0; d < std::min<int32_t>(q.ndim() - 2, kAttentionMaxLead); ++d)
      lead[d] = q.dim(d);
    attention_mask(in(mask_slot), q, lead, q.ndim() - 2, g);
  }
  return g;
}

// Fails unless t is q's dtype with the shape [..., rows, cols] (q's leading dimensions).
inline void expect_attention_shape(const Tensor& t, const Tensor& q, int64_t rows, int64_t cols,
                                   const char* what) {
  expect_same_dtype(q, t, what);
  bool ok = t.ndim() == q.ndim() && t.dim(-2) == rows && t.dim(-1) == cols;
  for (int32_t k = 0; ok && k + 2 < q.ndim(); ++k) ok = t.dim(k) == q.dim(k);
  if (!ok)
    fail("%s: %s must have the shape [..., %lld, %lld] with q's leading dimensions (q %s)", what,
         t.describe().c_str(), static_cast<long long>(rows), static_cast<long long>(cols),
         q.describe().c_str());
}

// Fails unless logsumexp is q's dtype with the shape [..., L].
inline void expect_logsumexp(const Tensor& t, const Tensor& q, int64_t L) {
  expect_same_dtype(q, t, "q and logsumexp");
  bool ok = t.ndim() == q.ndim() - 1 && t.dim(-1) == L;
  for (int32_t k = 0; ok && k + 2 < q.ndim(); ++k) ok = t.dim(k) == q.dim(k);
  if (!ok)
    fail("logsumexp %s must have the shape [..., L=%lld] with q's leading dimensions (q %s)",
         t.describe().c_str(), static_cast<long long>(L), q.describe().c_str());
}

// Fails unless rng_state (slot `slot` of `slots`) is there when dropout drops, int64 [2].
inline void expect_rng_state(const AttentionGeometry& g, const Slots& slots, int32_t slot) {
  if (!slots.has(slot)) {
    if (g.drops) fail("dropout_p=%g needs rng_state, the random stream of the mask", g.dropout_p);
    return;
  }
  const Tensor t = slots(slot);
  t.expect_dtype(PC_INT64, "rng_state");
  if (t.ndim() != 1 || t.dim(0) != 2)
    fail("rng_state %s must have the shape [2]", t.describe().c_str());
}

// scaled_dot_product_attention: (q, k, v, attn_mask?) -> (out, logsumexp, rng_state?).
inline AttentionGeometry check_attention(const Attrs& attrs, const Slots& in, const Slots& out) {
  const AttentionGeometry g = attention_geometry(attrs, in, kAttentionMaskSlot);
  expect_attention_shape(out(0), in(0), g.L, g.Ev, "out");
  expect_logsumexp(out(1), in(0), g.L);
  expect_rng_state(g, out, kAttentionStateSlot);
  return g;
}

// scaled_dot_product_attention_grad: (q, k, v, out, logsumexp, out_grad, attn_mask?,
// rng_state?) -> (q_grad?, k_grad?, v_grad?).
inline AttentionGeometry check_attention_grad(const Attrs& attrs, const Slots& in,
                                              const Slots& out) {
  const AttentionGeometry g = attention_geometry(attrs, in, kAttentionGradMaskSlot);
  const Tensor q = in(0);
  expect_attention_shape(in(3), q, g.L, g.Ev, "out");
  expect_logsumexp(in(4), q, g.L);
  expect_attention_shape(in(5), q, g.L, g.Ev, "out_grad");
  expect_rng_state(g, in, kAttentionGradStateSlot);
  if (out.has(0)) expect_attention_shape(out(0), q, g.L, g.E, "q_grad");
  if (out.has(1)) expect_attention_shape(out(1), q, g.S, g.E, "k_grad");
  if (out.has(2)) expect_attention_shape(out(2), q, g.S, g.Ev, "v_grad");
  return g;
}

// -- packed_attention: self-attention's q, k and v packed in one tensor -----------------------
//
// qkv [B, L, 3, H, E] holds q, k and v of each head (a self-attention's projection [B, L,
// 3 * H * E] as it comes out of the matmul): batch B * H, S = L, Ev = E. out is [B, L, H, E]
// (the heads side by side, as the output projection reads them), logsumexp [B, H, L], the mask
// broadcasts to [B, H, L, L]; qkv_grad is qkv's shape. Batch entry b is head b % H of sequence
// b / H, as scaled_dot_product_attention's of q [B, H, L, E], whose numbers these are.

// The geometry of qkv (slot 0), the attn_mask if slot mask_slot has one, and the attrs.
inline AttentionGeometry packed_attention_geometry(const Attrs& attrs, const Slots& in,
                                                   int32_t mask_slot) {
  const Tensor qkv = in(0);
  dispatch(qkv.dtype(), Floats{}, [](auto) {});
  if (qkv.ndim() != 5 || qkv.dim(2) != 3)
    fail("qkv %s must be [B, L, 3, H, E]: the queries, keys and values of each head",
         qkv.describe().c_str());
  AttentionGeometry g;
  g.batch = qkv.dim(0) * qkv.dim(3);
  g.L = g.S = qkv.dim(1);
  g.E = g.Ev = qkv.dim(4);
  attention_attrs(attrs, in.has(mask_slot), g);
  if (in.has(mask_slot)) {
    const int64_t lead[2] = {qkv.dim(0), qkv.dim(3)};
    attention_mask(in(mask_slot), qkv, lead, 2, g);
  }
  return g;
}

// Fails unless t is qkv's dtype with the shape of qkv's dimensions `axes` (-1 ends them).
inline void expect_packed_shape(const Tensor& t, const Tensor& qkv, const int32_t (&axes)[6],
                                const char* what, const char* form) {
  expect_same_dtype(qkv, t, what);
  int32_t n = 0;
  while (n < 6 && axes[n] >= 0) ++n;
  bool ok = t.ndim() == n;
  for (int32_t k = 0; ok && k < n; ++k) ok = t.dim(k) == qkv.dim(axes[k]);
  if (!ok)
    fail("%s %s must be %s of qkv %s", what, t.describe().c_str(), form,
         qkv.describe().c_str());
}

constexpr int32_t kPackedOut[6] = {0, 1, 3, 4, -1}, kPackedLse[6] = {0, 3, 1, -1};
constexpr int32_t kPackedQkv[6] = {0, 1, 2, 3, 4, -1};

// packed_attention: (qkv, attn_mask?) -> (out, logsumexp, rng_state?).
inline AttentionGeometry check_packed_attention(const Attrs& attrs, const Slots& in,
                                                const Slots& out) {
  const AttentionGeometry g = packed_attention_geometry(attrs, in, kPackedMaskSlot);
  expect_packed_shape(out(0), in(0), kPackedOut, "out", "[B, L, H, E]");
  expect_packed_shape(out(1), in(0), kPackedLse, "logsumexp", "[B, H, L]");
  expect_rng_state(g, out, kAttentionStateSlot);
  return g;
}

// packed_attention_grad: (qkv, out, logsumexp, out_grad, attn_mask?, rng_state?) ->
// (qkv_grad).
inline AttentionGeometry check_packed_attention_grad(const Attrs& attrs, const Slots& in,
                                                     const Slots& out) {
  const AttentionGeometry g = packed_attention_geometry(attrs, in, kPackedGradMaskSlot);
  const Tensor qkv = in(0);
  expect_packed_shape(in(1), qkv, kPackedOut, "out", "[B, L, H, E]");
  expect_packed_shape(in(2), qkv, kPackedLse, "logsumexp", "[B, H, L]");
  expect_packed_shape(in(3), qkv, kPackedOut, "out_grad", "[B, L, H, E]");
  expect_rng_state(g, in, kPackedGradStateSlot);
  expect_packed_shape(out(0), qkv, kPackedQkv, "qkv_grad", "the shape");
  return g;
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_ATTENTION_HPP_
