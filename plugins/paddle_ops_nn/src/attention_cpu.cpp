// scaled_dot_product_attention and its gradient on the CPU, fused and blocked (FlashAttention-2's
// order of work): no [L, S] matrix is ever held, only one [128, 256] tile of scores per thread.
// Geometry, checks and the masked score are attention.hpp's (shared with the CUDA kernels).
//
// Forward, per (batch, tile of 128 queries), one task each: for each tile of 256 keys, scores =
// q k^T (an OpenBLAS GEMM), scaled and masked; an online softmax keeps each row's running max m
// and sum l, rescales the rows of out accumulated so far and adds P v (a GEMM). At the end out
// /= l and logsumexp = m + log(l), which the gradient reads to recompute P tile by tile.
// Causal tiles above the diagonal are skipped. With dropout, each row of probabilities is
// dropped (attention.hpp) after the softmax folded it in and before P v: a row of draws at a time.
//
// Backward: D = rowsum(out_grad * out); then per (batch, share of the key tiles), one task
// each: for each key tile and each query tile that sees it, P = exp(scores - logsumexp),
// v_grad += P^T out_grad, dP = out_grad v^T, dS = P (dP - D), k_grad += scale dS^T q and
// q_grad += scale dS k (five GEMMs). With dropout (Z: the mask times 1 / (1 - p), drawn again
// from rng_state), v_grad += (P Z)^T out_grad and dS = P (dP Z - D). k_grad and v_grad rows
// belong to one task; q_grad is summed over the shares, which write partial sums of their own
// when there are fewer batches than threads.
//
// Memory contract: every tensor is C-contiguous and checked in prepare; each thread works in its
// tiles (128 KB in float32 forward, 256 KB backward: within a core's L2); the backward's partial
// q_grad sums (threads / batch copies of q_grad at most) exist only when batch < threads. Tiles, D
// and the partial sums lie in the kernel's workspace. Float32 row loops run attention_avx2.cpp on
// CPUs with AVX2 and FMA. OpenBLAS runs one thread inside each of ours.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "attention.hpp"
#include "attention_avx2.hpp"
#include "blas.hpp"
#include "random_avx2.hpp"

namespace paddle_ops_nn {
namespace {

// Measured at L = S = 1024, E = 64 (bench/bench_attention.py): 64x128 tiles ran the forward and
// backward 15% slower than these; 256x256 as fast, with fewer tasks for the threads.
constexpr int64_t kQueryTile = 128, kKeyTile = 256;

template <class T> constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// -- row loops (float32 through attention_avx2.cpp where the CPU has AVX2 and FMA) -----------

template <class T> T scale_max(T* row, int64_t n, T scale) {
  if constexpr (std::is_same_v<T, float>)
    if (use_avx2()) return avx2::scale_max_f32(row, n, scale);
  T m = kNegInf<T>;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j] *= scale);
  return m;
}

template <class T> T exp_sum(T* row, int64_t n, T m) {
  if constexpr (std::is_same_v<T, float>)
    if (use_avx2()) return avx2::exp_sum_f32(row, n, m);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - m);
  return sum;
}

template <class T> void exp_affine(T* row, int64_t n, T a, T b) {
  if constexpr (std::is_same_v<T, float>)
    if (use_avx2()) return avx2::exp_affine_f32(row, n, a, b);
  for (int64_t j = 0; j < n; ++j) row[j] = std::exp(a * row[j] - b);
}

// The dropout's draws of one row of a key tile: elements [first, first + n) of the stream, n <=
// kKeyTile, one block of Philox bits per four (random_avx2.cpp's, eight blocks at a time, on
// CPUs with AVX2): the numbers Random::uniform<float> gives each.
class RowDraws {
 public:
  // The draws; element first + j's at [j].
  const float* draw(const Random& rng, uint64_t first, int64_t n) {
    const uint64_t block = first / 4;
    const int64_t blocks = static_cast<int64_t>((first + n + 3) / 4 - block);
    if (use_avx2()) {
      const uint32_t* key = rng.philox().key;
      avx2::float_uniforms(key[0], key[1], rng.run(), block, (blocks + 7) / 8 * 8, u_);
    } else {
      for (int64_t k = 0; k < blocks; ++k) rng.uniforms<float>(block + k, u_ + 4 * k);
    }
    return u_ + (first - 4 * block);
  }

 private:
  static constexpr int64_t kBlocks = (kKeyTile / 4 + 2 + 7) / 8 * 8;  // a multiple of 8
  float u_[4 * kBlocks];
};

// The tensors of one batch entry (b of batch * heads), and what its tiles share.
template <class T> struct Batch {
  const AttentionGeometry& g;
  const T *q, *k, *v;
  const void* mask;   // at the batch's first element, or null
  const Random* rng;  // the dropout's stream, or null: no dropout
  int64_t b;

  Batch(const AttentionGeometry& geo, const Slots& in, int32_t mask_slot, int64_t b,
        const Random* stream)
      : g(geo),
        q(in(0).data<T>() + b * geo.L * geo.E),
        k(in(1).data<T>() + b * geo.S * geo.E),
        v(in(2).data<T>() + b * geo.S * geo.Ev),
        mask(nullptr),
        rng(stream),
        b(b) {
    if (geo.mask == MaskKind::kBool) mask = in(mask_slot).data<uint8_t>() + geo.mask_offset(b);
    if (geo.mask == MaskKind::kFloat) mask = in(mask_slot).data<T>() + geo.mask_offset(b);
  }

  // Whether a tile of queries [i0, i0 + rows) and keys [j0, j0 + cols) has plain scores: no
  // mask, and no causal hiding (every key at or before every query).
  bool plain(int64_t i0, int64_t j0, int64_t cols) const {
    return g.mask == MaskKind::kNone && (!g.causal || j0 + cols - 1 <= i0);
  }
  // The keys a tile of queries ending before i_end sees: all, or up to the diagonal.
  int64_t key_end(int64_t i_end) const { return g.causal ? std::min(g.S, i_end) : g.S; }

  // scores[rows, cols] = q[i0:] k[j0:]^T (dot products, unscaled).
  void dots(int64_t i0, int64_t rows, int64_t j0, int64_t cols, T* scores) const {
    gemm<T>(false, true, rows, cols, g.E, T(1), q + i0 * g.E, g.E, k + j0 * g.E, g.E, T(0),
            scores, cols);
  }

  // One row of dot products as scores (scaled, masked); returns their max.
  T score_row(T* row, int64_t cols, int64_t i, int64_t j0, bool plain_tile) const {
    if (plain_tile) return scale_max(row, cols, static_cast<T>(g.scale));
    T m = kNegInf<T>;
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = masked_score(g, mask, row[j], i, j0 + j);
      m = std::max(m, row[j]);
    }
    return m;
  }

  // One row of dot products as probabilities exp(score - lse) (0 where lse is -inf).
  void probability_row(T* row, int64_t cols, int64_t i, int64_t j0, bool plain_tile, T lse) const {
    if (lse == kNegInf<T>) {
      std::fill_n(row, cols, T(0));
    } else if (plain_tile) {
      exp_affine(row, cols, static_cast<T>(g.scale), lse);
    } else {
      for (int64_t j = 0; j < cols; ++j)
        row[j] = probability(masked_score(g, mask, row[j], i, j0 + j), lse);
    }
  }

  // Dropout on one row of probabilities, keys [j0, j0 + cols) of query i: each kept (times
  // 1 / (1 - p)) or zeroed as its draw says.
  void drop_row(T* row, int64_t cols, int64_t i, int64_t j0, RowDraws& draws) const {
    const float* u = draws.draw(*rng, draw_index(g, b, i, j0), cols);
    const T keep = static_cast<T>(g.keep_scale);
    for (int64_t j = 0; j < cols; ++j) row[j] = u[j] >= g.dropout_p ? row[j] * keep : T(0);
  }

  // The backward's dropout on one row: p = P Z and, with ds, dp = P (dP Z - D).
  void drop_grad_row(T* p, T* dp, int64_t cols, int64_t i, int64_t j0, T d, bool ds,
                     RowDraws& draws) const {
    const float* u = draws.draw(*rng, draw_index(g, b, i, j0), cols);
    const T keep = static_cast<T>(g.keep_scale);
    for (int64_t j = 0; j < cols; ++j) {
      const T z = u[j] >= g.dropout_p ? keep : T(0);
      if (ds) dp[j] = p[j] * (dp[j] * z - d);
      p[j] *= z;
    }
  }
};

// -- forward ---------------------------------------------------------------------------------

// The bytes of `count` values of type T, rounded up to whole cache lines: a slice of a
// kernel's workspace (its slices 64-byte aligned).
template <class T> constexpr size_t slice_bytes(int64_t count) {
  return (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
}

// The thread's slot of `slot_bytes` in `ws` (a slot per thread the run may use), zeroed.
inline char* thread_slot(char* ws, size_t slot_bytes) {
  char* slot = ws + static_cast<size_t>(omp_get_thread_num()) * slot_bytes;
  std::memset(slot, 0, slot_bytes);
  return slot;
}

// The per-thread state of the forward: one tile of scores, each row's max and sum (in the
// thread's slot of the kernel's workspace), and a row of dropout draws.
template <class T> struct ForwardTile {
  static constexpr size_t kBytes = slice_bytes<T>(kQueryTile * kKeyTile + 2 * kQueryTile);
  explicit ForwardTile(char* slot)
      : scores(reinterpret_cast<T*>(slot)), m(scores + kQueryTile * kKeyTile), l(m + kQueryTile) {}
  T *scores, *m, *l;
  RowDraws draws;
};

// Folds the scores of one key tile into the running softmax of row r (rows of out so far are
// rescaled); the row becomes its unnormalised probabilities.
template <class T>
void online_softmax_row(ForwardTile<T>& w, T* row, int64_t cols, int64_t r, T row_max, T* out_row,
                        int64_t Ev) {
  const T m_new = std::max(w.m[r], row_max);
  if (m_new == kNegInf<T>) {  // nothing visible yet: adds nothing
    std::fill_n(row, cols, T(0));
    return;
  }
  const T alpha = std::exp(w.m[r] - m_new);  // 0 when the row had nothing visible before
  w.l[r] = w.l[r] * alpha + exp_sum(row, cols, m_new);
  if (alpha != T(1))
    for (int64_t c = 0; c < Ev; ++c) out_row[c] *= alpha;
  w.m[r] = m_new;
}

// out and logsumexp of queries [i0, i0 + rows) of one batch entry.
template <class T>
void forward_tile(const Batch<T>& bt, int64_t i0, int64_t rows, T* out, T* lse, ForwardTile<T>& w) {
  const AttentionGeometry& g = bt.g;
  T* o = out + i0 * g.Ev;
  std::fill_n(o, rows * g.Ev, T(0));
  std::fill_n(w.m, rows, kNegInf<T>);
  std::fill_n(w.l, rows, T(0));
  const int64_t key_end = bt.key_end(i0 + rows);
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, key_end - j0);
    const bool plain = bt.plain(i0, j0, cols);
    T* scores = w.scores;
    bt.dots(i0, rows, j0, cols, scores);
    for (int64_t r = 0; r < rows; ++r) {
      T* row = scores + r * cols;
      const T row_max = bt.score_row(row, cols, i0 + r, j0, plain);
      online_softmax_row(w, row, cols, r, row_max, o + r * g.Ev, g.Ev);
      if (bt.rng != nullptr) bt.drop_row(row, cols, i0 + r, j0, w.draws);
    }
    gemm<T>(false, false, rows, g.Ev, cols, T(1), scores, cols, bt.v + j0 * g.Ev, g.Ev, T(1), o,
            g.Ev);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const bool any = w.l[r] > T(0);
    const T inv = any ? T(1) / w.l[r] : T(0);
    for (int64_t c = 0; c < g.Ev; ++c) o[r * g.Ev + c] *= inv;
    lse[i0 + r] = any ? w.m[r] + std::log(w.l[r]) : kNegInf<T>;
  }
}

// The forward's workspace: a ForwardTile per thread.
inline size_t forward_workspace(int32_t dtype, int32_t threads) {
  const size_t tile =
      dtype == PC_FLOAT64 ? ForwardTile<double>::kBytes : ForwardTile<float>::kBytes;
  return tile * static_cast<size_t>(threads);
}

// rng (null: no dropout) is the dropout's stream; ws the forward's workspace.
template <class T>
void attention_forward(const AttentionGeometry& g, const Slots& in, const Slots& out,
                       const Random* rng, char* ws, int32_t threads) {
  const int64_t tiles = (g.L + kQueryTile - 1) / kQueryTile;
  T* o = out(0).data<T>();
  T* lse = out(1).data<T>();
  if (featureless(g)) {  // out has no column: each row's logsumexp, its keys not walked
    parallel_rows(g.batch * g.L, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const Batch<T> bt(g, in, kAttentionMaskSlot, row / g.L, nullptr);
        lse[row] = uniform_logsumexp<T>(g, bt.mask, row % g.L);
      }
    });
    return;
  }
  BlasOneThread blas;
  parallel_rows(g.batch * tiles, threads, 1, [&](int64_t lo, int64_t hi) {
    ForwardTile<T> w(thread_slot(ws, ForwardTile<T>::kBytes));
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t b = task / tiles, i0 = task % tiles * kQueryTile;
      forward_tile(Batch<T>(g, in, kAttentionMaskSlot, b, rng), i0,
                   std::min(kQueryTile, g.L - i0), o + b * g.L * g.Ev, lse + b * g.L, w);
    }
  });
}

// -- backward --------------------------------------------------------------------------------

// Where one task of the backward writes: its batch entry's gradients (null: not wanted), and
// the rows of D = rowsum(out_grad * out).
template <class T> struct GradTargets {
  T *dq, *dk, *dv;
  const T *dout, *lse, *D;
};

// The per-thread tiles of the backward: probabilities (then dS; with dropout P Z) and dP (with
// dropout then dS), in the thread's slot of the kernel's workspace, and a row of dropout draws.
template <class T> struct BackwardTile {
  static constexpr size_t kBytes = 2 * slice_bytes<T>(kQueryTile * kKeyTile);
  explicit BackwardTile(char* slot)
      : p(reinterpret_cast<T*>(slot)),
        dp(reinterpret_cast<T*>(slot + slice_bytes<T>(kQueryTile * kKeyTile))) {}
  T *p, *dp;
  RowDraws draws;
};

// The gradients' contributions of one (query tile, key tile) pair.
template <class T>
void backward_pair(const Batch<T>& bt, const GradTargets<T>& t, int64_t i0, int64_t rows,
                   int64_t j0, int64_t cols, BackwardTile<T>& w) {
  const AttentionGeometry& g = bt.g;
  const T scale = static_cast<T>(g.scale);
  T *p = w.p, *dp = w.dp;
  const bool plain = bt.plain(i0, j0, cols);
  bt.dots(i0, rows, j0, cols, p);
  for (int64_t r = 0; r < rows; ++r)
    bt.probability_row(p + r * cols, cols, i0 + r, j0, plain, t.lse[i0 + r]);
  const T* dout = t.dout + i0 * g.Ev;
  const bool wants_ds = t.dq != nullptr || t.dk != nullptr;
  T* ds = p;  // dS is written over P; with dropout, which reads P after dP, over dP
  if (bt.rng != nullptr) {  // p = P Z, dp = dS
    if (wants_ds)
      gemm<T>(false, true, rows, cols, g.Ev, T(1), dout, g.Ev, bt.v + j0 * g.Ev, g.Ev, T(0), dp,
              cols);
    for (int64_t r = 0; r < rows; ++r)
      bt.drop_grad_row(p + r * cols, dp + r * cols, cols, i0 + r, j0, t.D[i0 + r], wants_ds,
                       w.draws);
    ds = dp;
  }
  if (t.dv != nullptr)
    gemm<T>(true, false, cols, g.Ev, rows, T(1), p, cols, dout, g.Ev, T(1), t.dv + j0 * g.Ev, g.Ev);
  if (!wants_ds) return;
  if (bt.rng == nullptr) {
    gemm<T>(false, true, rows, cols, g.Ev, T(1), dout, g.Ev, bt.v + j0 * g.Ev, g.Ev, T(0), dp,
            cols);
    for (int64_t r = 0; r < rows; ++r) {  // dS = P (dP - D), into p
      const T d = t.D[i0 + r];
      T *pr = p + r * cols, *dpr = dp + r * cols;
      for (int64_t j = 0; j < cols; ++j) pr[j] *= dpr[j] - d;
    }
  }
  if (t.dk != nullptr)
    gemm<T>(true, false, cols, g.E, rows, scale, ds, cols, bt.q + i0 * g.E, g.E, T(1),
            t.dk + j0 * g.E, g.E);
  if (t.dq != nullptr)
    gemm<T>(false, false, rows, g.E, cols, scale, ds, cols, bt.k + j0 * g.E, g.E, T(1),
            t.dq + i0 * g.E, g.E);
}

// The gradients' contributions of key tiles [tile_lo, tile_hi) of one batch entry.
template <class T>
void backward_keys(const Batch<T>& bt, const GradTargets<T>& t, int64_t tile_lo, int64_t tile_hi,
                   BackwardTile<T>& w) {
  const AttentionGeometry& g = bt.g;
  for (int64_t jt = tile_lo; jt < tile_hi; ++jt) {
    const int64_t j0 = jt * kKeyTile, cols = std::min(kKeyTile, g.S - j0);
    // Causal: only queries i >= j0 see this tile.
    const int64_t first = g.causal ? j0 / kQueryTile * kQueryTile : 0;
    for (int64_t i0 = first; i0 < g.L; i0 += kQueryTile)
      backward_pair(bt, t, i0, std::min(kQueryTile, g.L - i0), j0, cols, w);
  }
}

// D[row] = sum(out_grad * out) over each of the batch * L rows.
template <class T>
void rowsum_dout_out(const AttentionGeometry& g, const T* dout, const T* o, T* D,
                     int32_t threads) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(g.Ev, 1));
  parallel_rows(g.batch * g.L, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      double acc = 0;
      for (int64_t c = 0; c < g.Ev; ++c) acc += double(dout[r * g.Ev + c]) * o[r * g.Ev + c];
      D[r] = static_cast<T>(acc);
    }
  });
}

// The gradient in `slot`, zeroed; null where it is not asked for or holds no element (n is 0).
template <class T> T* zeroed(const Slots& out, int32_t slot, int64_t n) {
  if (!out.has(slot) || n == 0) return nullptr;
  T* p = out(slot).data<T>();
  std::fill_n(p, n, T(0));
  return p;
}

// How the backward splits its work: shares of the key tiles per batch entry, enough tasks for
// every thread; with several, each share but the first sums its q_grad into a copy of its own
// (`partial`), added up after. Its workspace: D, the partial q_grads, a BackwardTile per thread.
struct BackwardPlan {
  BackwardPlan(const AttentionGeometry& g, int32_t dtype, int32_t threads) {
    const int64_t key_tiles = (g.S + kKeyTile - 1) / kKeyTile;
    const int64_t batch = std::max<int64_t>(g.batch, 1);  // (none: one share of nothing)
    shares = std::clamp<int64_t>((threads + batch - 1) / batch, 1, std::max<int64_t>(key_tiles, 1));
    const bool f64 = dtype == PC_FLOAT64;
    const int64_t q_size = g.batch * g.L * g.E;
    d_bytes = f64 ? slice_bytes<double>(g.batch * g.L) : slice_bytes<float>(g.batch * g.L);
    partial_bytes = f64 ? slice_bytes<double>((shares - 1) * q_size)
                        : slice_bytes<float>((shares - 1) * q_size);
    tile_bytes = f64 ? BackwardTile<double>::kBytes : BackwardTile<float>::kBytes;
    workspace = d_bytes + partial_bytes + tile_bytes * static_cast<size_t>(threads);
  }
  int64_t shares = 1;
  size_t d_bytes = 0, partial_bytes = 0, tile_bytes = 0, workspace = 0;
};

// rng (null: no dropout) is the forward's dropout stream; ws the backward's workspace.
template <class T>
void attention_backward(const AttentionGeometry& g, const BackwardPlan& plan, const Slots& in,
                        const Slots& out, const Random* rng, char* ws, int32_t threads) {
  T* dq = zeroed<T>(out, 0, g.batch * g.L * g.E);
  T* dk = zeroed<T>(out, 1, g.batch * g.S * g.E);
  T* dv = zeroed<T>(out, 2, g.batch * g.S * g.Ev);
  // No gradient of an element to compute, no task: the tasks go by batch entry and walk the
  // pairs of queries and keys, which tensors of no element may still count 2^40 of
  // ([2^40, 0, E], [..., 2^40, 0]: the op runs for rng_state's sake).
  if (dq == nullptr && dk == nullptr && dv == nullptr) return;
  const T *o = in(3).data<T>(), *lse = in(4).data<T>(), *dout = in(5).data<T>();
  T* D = reinterpret_cast<T*>(ws);
  rowsum_dout_out(g, dout, o, D, threads);
  const int64_t key_tiles = (g.S + kKeyTile - 1) / kKeyTile;
  const int64_t shares = plan.shares;
  const int64_t q_size = g.batch * g.L * g.E;
  T* partial = dq != nullptr && shares > 1 ? reinterpret_cast<T*>(ws + plan.d_bytes) : nullptr;
  if (partial) std::fill_n(partial, (shares - 1) * q_size, T(0));
  char* tiles = ws + plan.d_bytes + plan.partial_bytes;
  BlasOneThread blas;
  parallel_rows(g.batch * shares, threads, 1, [&](int64_t lo, int64_t hi) {
    BackwardTile<T> w(thread_slot(tiles, plan.tile_bytes));
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t b = task / shares, share = task % shares;
      T* dq_share = dq == nullptr ? nullptr
                    : share == 0    ? dq
                                    : partial + (share - 1) * q_size;
      const GradTargets<T> t{dq_share == nullptr ? nullptr : dq_share + b * g.L * g.E,
                             dk == nullptr ? nullptr : dk + b * g.S * g.E,
                             dv == nullptr ? nullptr : dv + b * g.S * g.Ev,
                             dout + b * g.L * g.Ev, lse + b * g.L, D + b * g.L};
      backward_keys(Batch<T>(g, in, kAttentionGradMaskSlot, b, rng), t,
                    key_tiles * share / shares, key_tiles * (share + 1) / shares, w);
    }
  });
  if (!partial) return;
  parallel_for(q_size, threads, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t s = 0; s + 1 < shares; ++s)
      for (int64_t e = lo; e < hi; ++e) dq[e] += partial[s * q_size + e];
  });
}

// -- the kernels -----------------------------------------------------------------------------

class Attention {
 public:
  static constexpr pc::Signature signature{"111?", "11?"};
  using DTypes = Floats;
  Attention(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : g_(check_attention(attrs, in, out)),
        seed_(attrs.l("seed")),
        ws_(ctx, forward_workspace(in(0).dtype(), ctx.num_threads())) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, seed_);
    if (g_.drops) {
      int64_t* state = out(kAttentionStateSlot).data<int64_t>();
      state[0] = static_cast<int64_t>(rng.key());
      state[1] = static_cast<int64_t>(rng.run());
    }
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      attention_forward<decltype(t)>(g_, in, out, g_.drops ? &rng : nullptr, ws_.data(ctx),
                                     ctx.num_threads());
    });
  }

 private:
  AttentionGeometry g_;
  int64_t seed_;
  pc::Workspace ws_;
};

class AttentionGrad {
 public:
  static constexpr pc::Signature signature{"111111??", "???"};
  using DTypes = Floats;
  AttentionGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : g_(check_attention_grad(attrs, in, out)),
        plan_(g_, in(0).dtype(), ctx.num_threads()),
        ws_(ctx, plan_.workspace) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Random rng = g_.drops ? attention_stream(in(kAttentionGradStateSlot).data<int64_t>())
                                : Random(uint64_t{0}, uint64_t{0});
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      attention_backward<decltype(t)>(g_, plan_, in, out, g_.drops ? &rng : nullptr,
                                      ws_.data(ctx), ctx.num_threads());
    });
  }

 private:
  AttentionGeometry g_;
  BackwardPlan plan_;
  pc::Workspace ws_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Attention>("scaled_dot_product_attention"),
    pc::kernel<AttentionGrad>("scaled_dot_product_attention_grad"));

}  // namespace paddle_ops_nn
