// scaled_dot_product_attention and its gradient on the CPU, fused and blocked (FlashAttention-2's
// order of work): no [L, S] matrix is ever held, only one [128, 256] tile of scores per thread.
// Geometry, checks and the masked score are attention.hpp's (shared with the CUDA kernels).
// packed_attention and its gradient are the same kernels on q, k and v where qkv [B, L, 3, H, E]
// holds them, their rows strided (Rows, below).
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
// Memory contract: every tensor is C-contiguous and checked in prepare (packed_attention's q, k,
// v and out, and their gradients, are rows of qkv, out and qkv_grad, whose shapes prepare
// checks); each thread works in its tiles (128 KB in float32 forward, 256 KB backward: within a
// core's L2); the backward's partial q_grad sums (threads / batch contiguous copies of q_grad at
// most) exist only when batch < threads. Tiles, D and the partial sums lie in the kernel's
// workspace. Float32 row loops run attention_avx2.cpp on CPUs with AVX2 and FMA. OpenBLAS runs
// one thread inside each of ours.
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

// Where an operand's rows lie: those of batch entry b (of batch * heads) begin at entry(b) and
// are `row` apart. scaled_dot_product_attention's operands are C-contiguous [..., rows, cols];
// packed_attention's are views of qkv [B, L, 3, H, E] and out [B, L, H, E] (attention.hpp).
struct Rows {
  int64_t heads = 1, outer = 0, inner = 0, row = 0, offset = 0;
  int64_t entry(int64_t b) const { return offset + b / heads * outer + b % heads * inner; }
};

// The rows of q, k, v and out; their gradients' lie as they do.
struct Layout {
  Rows q, k, v, out;
};

// scaled_dot_product_attention's: each operand contiguous.
inline Layout contiguous_layout(const AttentionGeometry& g) {
  auto rows = [](int64_t n, int64_t cols) { return Rows{1, n * cols, 0, cols, 0}; };
  return {rows(g.L, g.E), rows(g.S, g.E), rows(g.S, g.Ev), rows(g.L, g.Ev)};
}

// packed_attention's: heads H of qkv [B, L, 3, H, E] and out [B, L, H, E].
inline Layout packed_layout(const AttentionGeometry& g, int64_t heads) {
  const int64_t width = heads * g.E;  // (E == Ev, L == S)
  const Rows q{heads, g.L * 3 * width, g.E, 3 * width, 0};
  Rows k = q, v = q;
  k.offset = width, v.offset = 2 * width;
  return {q, k, v, Rows{heads, g.L * width, g.E, width, 0}};
}

// The inputs q, k, v (the same tensor, qkv, when packed) and the mask (null: none).
template <class T> struct Operands {
  const T *q, *k, *v;
  const void* mask;
};

// The tensors of one batch entry (b of batch * heads), and what its tiles share.
template <class T> struct Batch {
  const AttentionGeometry& g;
  const T *q, *k, *v;
  int64_t qr, kr, vr;  // their rows' distances
  const void* mask;    // at the batch's first element, or null
  const Random* rng;   // the dropout's stream, or null: no dropout
  int64_t b;

  Batch(const AttentionGeometry& geo, const Layout& lay, const Operands<T>& in, int64_t b,
        const Random* stream)
      : g(geo),
        q(in.q + lay.q.entry(b)),
        k(in.k + lay.k.entry(b)),
        v(in.v + lay.v.entry(b)),
        qr(lay.q.row),
        kr(lay.k.row),
        vr(lay.v.row),
        mask(nullptr),
        rng(stream),
        b(b) {
    if (geo.mask == MaskKind::kBool)
      mask = static_cast<const uint8_t*>(in.mask) + geo.mask_offset(b);
    if (geo.mask == MaskKind::kFloat) mask = static_cast<const T*>(in.mask) + geo.mask_offset(b);
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
    gemm<T>(false, true, rows, cols, g.E, T(1), q + i0 * qr, qr, k + j0 * kr, kr, T(0), scores,
            cols);
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

// out (rows `ldo` apart) and logsumexp of queries [i0, i0 + rows) of one batch entry.
template <class T>
void forward_tile(const Batch<T>& bt, int64_t i0, int64_t rows, T* out, int64_t ldo, T* lse,
                  ForwardTile<T>& w) {
  const AttentionGeometry& g = bt.g;
  T* o = out + i0 * ldo;
  for (int64_t r = 0; r < rows; ++r) std::fill_n(o + r * ldo, g.Ev, T(0));
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
      online_softmax_row(w, row, cols, r, row_max, o + r * ldo, g.Ev);
      if (bt.rng != nullptr) bt.drop_row(row, cols, i0 + r, j0, w.draws);
    }
    gemm<T>(false, false, rows, g.Ev, cols, T(1), scores, cols, bt.v + j0 * bt.vr, bt.vr, T(1), o,
            ldo);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const bool any = w.l[r] > T(0);
    const T inv = any ? T(1) / w.l[r] : T(0);
    for (int64_t c = 0; c < g.Ev; ++c) o[r * ldo + c] *= inv;
    lse[i0 + r] = any ? w.m[r] + std::log(w.l[r]) : kNegInf<T>;
  }
}

// The forward's workspace: a ForwardTile per thread.
inline size_t forward_workspace(int32_t dtype, int32_t threads) {
  const size_t tile =
      dtype == PC_FLOAT64 ? ForwardTile<double>::kBytes : ForwardTile<float>::kBytes;
  return tile * static_cast<size_t>(threads);
}

// out and logsumexp (out's slots 0 and 1); rng (null: no dropout) is the dropout's stream, ws
// the forward's workspace.
template <class T>
void attention_forward(const AttentionGeometry& g, const Layout& lay, const Operands<T>& in,
                       const Slots& out, const Random* rng, char* ws, int32_t threads) {
  const int64_t tiles = (g.L + kQueryTile - 1) / kQueryTile;
  T* o = out(0).data<T>();
  T* lse = out(1).data<T>();
  if (featureless(g)) {  // out has no column: each row's logsumexp, its keys not walked
    parallel_rows(g.batch * g.L, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const Batch<T> bt(g, lay, in, row / g.L, nullptr);
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
      forward_tile(Batch<T>(g, lay, in, b, rng), i0, std::min(kQueryTile, g.L - i0),
                   o + lay.out.entry(b), lay.out.row, lse + b * g.L, w);
    }
  });
}

// -- backward --------------------------------------------------------------------------------

// Where one task of the backward writes: its batch entry's gradients (null: not wanted), and
// the rows of D = rowsum(out_grad * out).
template <class T> struct GradTargets {
  T *dq, *dk, *dv;        // at the batch entry (null: not wanted)
  int64_t dqr, dkr, dvr;  // their rows' distances
  const T* dout;
  int64_t doutr;
  const T *lse, *D;
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
  const T* dout = t.dout + i0 * t.doutr;
  const T* v = bt.v + j0 * bt.vr;
  const bool wants_ds = t.dq != nullptr || t.dk != nullptr;
  T* ds = p;  // dS is written over P; with dropout, which reads P after dP, over dP
  if (bt.rng != nullptr) {  // p = P Z, dp = dS
    if (wants_ds)
      gemm<T>(false, true, rows, cols, g.Ev, T(1), dout, t.doutr, v, bt.vr, T(0), dp, cols);
    for (int64_t r = 0; r < rows; ++r)
      bt.drop_grad_row(p + r * cols, dp + r * cols, cols, i0 + r, j0, t.D[i0 + r], wants_ds,
                       w.draws);
    ds = dp;
  }
  if (t.dv != nullptr)
    gemm<T>(true, false, cols, g.Ev, rows, T(1), p, cols, dout, t.doutr, T(1), t.dv + j0 * t.dvr,
            t.dvr);
  if (!wants_ds) return;
  if (bt.rng == nullptr) {
    gemm<T>(false, true, rows, cols, g.Ev, T(1), dout, t.doutr, v, bt.vr, T(0), dp, cols);
    for (int64_t r = 0; r < rows; ++r) {  // dS = P (dP - D), into p
      const T d = t.D[i0 + r];
      T *pr = p + r * cols, *dpr = dp + r * cols;
      for (int64_t j = 0; j < cols; ++j) pr[j] *= dpr[j] - d;
    }
  }
  if (t.dk != nullptr)
    gemm<T>(true, false, cols, g.E, rows, scale, ds, cols, bt.q + i0 * bt.qr, bt.qr, T(1),
            t.dk + j0 * t.dkr, t.dkr);
  if (t.dq != nullptr)
    gemm<T>(false, false, rows, g.E, cols, scale, ds, cols, bt.k + j0 * bt.kr, bt.kr, T(1),
            t.dq + i0 * t.dqr, t.dqr);
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

// D[row] = sum(out_grad * out) over each of the batch * L rows (out's and out_grad's rows
// lie as `rows` says).
template <class T>
void rowsum_dout_out(const AttentionGeometry& g, const Rows& rows, const T* dout, const T* o,
                     T* D, int32_t threads) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(g.Ev, 1));
  parallel_rows(g.batch * g.L, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t at = rows.entry(r / g.L) + r % g.L * rows.row;
      double acc = 0;
      for (int64_t c = 0; c < g.Ev; ++c) acc += double(dout[at + c]) * o[at + c];
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
// every thread; with several, each share but the first sums its q_grad into a contiguous copy
// of its own (`partial`), added up after. Its workspace: D, the partial q_grads, a BackwardTile
// per thread.
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

// The gradients' bases (null: not wanted; the layout's offsets not applied), zeroed.
template <class T> struct Gradients {
  T *dq, *dk, *dv;
};

// The gradients, from the forward's out and logsumexp and from out_grad. rng (null: no
// dropout) is the forward's dropout stream; ws the backward's workspace.
template <class T>
void attention_backward(const AttentionGeometry& g, const Layout& lay, const BackwardPlan& plan,
                        const Operands<T>& in, const T* o, const T* lse, const T* dout,
                        const Gradients<T>& grads, const Random* rng, char* ws,
                        int32_t threads) {
  T *dq = grads.dq, *dk = grads.dk, *dv = grads.dv;
  // No gradient of an element to compute, no task: the tasks go by batch entry and walk the
  // pairs of queries and keys, which tensors of no element may still count 2^40 of
  // ([2^40, 0, E], [..., 2^40, 0]: the op runs for rng_state's sake).
  if (dq == nullptr && dk == nullptr && dv == nullptr) return;
  T* D = reinterpret_cast<T*>(ws);
  rowsum_dout_out(g, lay.out, dout, o, D, threads);
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
      T* dq_entry = dq == nullptr ? nullptr
                    : share == 0  ? dq + lay.q.entry(b)
                                  : partial + (share - 1) * q_size + b * g.L * g.E;
      const GradTargets<T> t{dq_entry,
                             dk == nullptr ? nullptr : dk + lay.k.entry(b),
                             dv == nullptr ? nullptr : dv + lay.v.entry(b),
                             share == 0 ? lay.q.row : g.E,
                             lay.k.row,
                             lay.v.row,
                             dout + lay.out.entry(b),
                             lay.out.row,
                             lse + b * g.L,
                             D + b * g.L};
      backward_keys(Batch<T>(g, lay, in, b, rng), t, key_tiles * share / shares,
                    key_tiles * (share + 1) / shares, w);
    }
  });
  if (!partial) return;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(g.E, 1));
  parallel_rows(g.batch * g.L, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      T* row = dq + lay.q.entry(r / g.L) + r % g.L * lay.q.row;
      for (int64_t s = 0; s + 1 < shares; ++s) {
        const T* part = partial + s * q_size + r * g.E;
        for (int64_t e = 0; e < g.E; ++e) row[e] += part[e];
      }
    }
  });
}

// -- the kernels -----------------------------------------------------------------------------

// The mask (slot `slot` of `in`, where g has one), or null.
template <class T> const void* mask_of(const AttentionGeometry& g, const Slots& in, int32_t slot) {
  if (g.mask == MaskKind::kBool) return in(slot).data<uint8_t>();
  if (g.mask == MaskKind::kFloat) return in(slot).data<T>();
  return nullptr;
}

// What the two ops differ in. scaled_dot_product_attention: q, k, v (slots 0-2), each
// contiguous, and a gradient of each.
struct Separate {
  static constexpr pc::Signature forward{"111?", "11?"}, backward{"111111??", "???"};
  // The mask's slots; the gradient's out, logsumexp and out_grad are its inputs kOut to kOut + 2.
  static constexpr int32_t kMask = kAttentionMaskSlot, kGradMask = kAttentionGradMaskSlot,
                           kGradState = kAttentionGradStateSlot, kOut = 3;
  static AttentionGeometry check(const Attrs& a, const Slots& in, const Slots& out) {
    return check_attention(a, in, out);
  }
  static AttentionGeometry check_grad(const Attrs& a, const Slots& in, const Slots& out) {
    return check_attention_grad(a, in, out);
  }
  static Layout layout(const AttentionGeometry& g, const Slots&) { return contiguous_layout(g); }
  template <class T>
  static Operands<T> operands(const AttentionGeometry& g, const Slots& in, int32_t mask_slot) {
    return {in(0).data<T>(), in(1).data<T>(), in(2).data<T>(), mask_of<T>(g, in, mask_slot)};
  }
  template <class T> static Gradients<T> gradients(const AttentionGeometry& g, const Slots& out) {
    return {zeroed<T>(out, 0, g.batch * g.L * g.E), zeroed<T>(out, 1, g.batch * g.S * g.E),
            zeroed<T>(out, 2, g.batch * g.S * g.Ev)};
  }
};

// packed_attention: qkv [B, L, 3, H, E] (slot 0) holds q, k and v; qkv_grad all three
// gradients.
struct Packed {
  static constexpr pc::Signature forward{"1?", "11?"}, backward{"1111??", "1"};
  static constexpr int32_t kMask = kPackedMaskSlot, kGradMask = kPackedGradMaskSlot,
                           kGradState = kPackedGradStateSlot, kOut = 1;
  static AttentionGeometry check(const Attrs& a, const Slots& in, const Slots& out) {
    return check_packed_attention(a, in, out);
  }
  static AttentionGeometry check_grad(const Attrs& a, const Slots& in, const Slots& out) {
    return check_packed_attention_grad(a, in, out);
  }
  static Layout layout(const AttentionGeometry& g, const Slots& in) {
    return packed_layout(g, in(0).dim(3));
  }
  template <class T>
  static Operands<T> operands(const AttentionGeometry& g, const Slots& in, int32_t mask_slot) {
    const T* qkv = in(0).data<T>();
    return {qkv, qkv, qkv, mask_of<T>(g, in, mask_slot)};
  }
  template <class T> static Gradients<T> gradients(const AttentionGeometry& g, const Slots& out) {
    T* d = zeroed<T>(out, 0, g.batch * g.L * 3 * g.E);
    return {d, d, d};
  }
};

template <class Form> class Attention {
 public:
  static constexpr pc::Signature signature = Form::forward;
  using DTypes = Floats;
  Attention(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : g_(Form::check(attrs, in, out)),
        layout_(Form::layout(g_, in)),
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
      using T = decltype(t);
      attention_forward<T>(g_, layout_, Form::template operands<T>(g_, in, Form::kMask), out,
                           g_.drops ? &rng : nullptr, ws_.data(ctx), ctx.num_threads());
    });
  }

 private:
  AttentionGeometry g_;
  Layout layout_;
  int64_t seed_;
  pc::Workspace ws_;
};

template <class Form> class AttentionGrad {
 public:
  static constexpr pc::Signature signature = Form::backward;
  using DTypes = Floats;
  AttentionGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : g_(Form::check_grad(attrs, in, out)),
        layout_(Form::layout(g_, in)),
        plan_(g_, in(0).dtype(), ctx.num_threads()),
        ws_(ctx, plan_.workspace) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Random rng = g_.drops ? attention_stream(in(Form::kGradState).template data<int64_t>())
                                : Random(uint64_t{0}, uint64_t{0});
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      const int32_t o = Form::kOut;
      attention_backward<T>(g_, layout_, plan_, Form::template operands<T>(g_, in, Form::kGradMask),
                            in(o).data<T>(), in(o + 1).data<T>(), in(o + 2).data<T>(),
                            Form::template gradients<T>(g_, out), g_.drops ? &rng : nullptr,
                            ws_.data(ctx), ctx.num_threads());
    });
  }

 private:
  AttentionGeometry g_;
  Layout layout_;
  BackwardPlan plan_;
  pc::Workspace ws_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Attention<Separate>>("scaled_dot_product_attention"),
    pc::kernel<AttentionGrad<Separate>>("scaled_dot_product_attention_grad"),
    pc::kernel<Attention<Packed>>("packed_attention"),
    pc::kernel<AttentionGrad<Packed>>("packed_attention_grad"));

}  // namespace paddle_ops_nn
