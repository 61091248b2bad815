// The Winograd convolution engine: F(2x2, 3x3) and F(4x4, 3x3) for float32 3x3 convolutions
// of stride 1, their forward passes, input gradients and filter gradients, on channels-last or
// nChw8c activations (plain NCHW ones staged in nChw8c). oneDNN has Winograd on AVX-512 only;
// on AVX2 its direct kernels do 2.25x (F(2x2)) or 4x (F(4x4)) the multiplications. Each M x M
// block of outputs ("tile") comes from an (M + 2) x (M + 2) block of inputs in (M + 2)^2
// products instead of 9 M^2. Three steps per block of tiles:
//   V[e][t][c] = (B^T d B)[e]   the input tiles transformed (d: tile t's inputs of channel c)
//   M[e] = V[e] U[e]            a GEMM per e (OpenBLAS); U[e][c][k] = (G g G^T)[e], the filter's
//   y's tile = A^T m A          per output channel, then the epilogue (bias, residual, act)
// with the matrices of Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"
// (2016). The input gradient is the forward pass of dy through the filter mirrored (rotated
// 180 degrees, its channels and filters swapped). The filter gradient is the forward pass's
// adjoint in the filter, with the transposed transforms: dw = G^T (sum over tiles of
// (A dy A^T) (B^T d B)) G, a GEMM per e summing over the tiles. The transformed filter of an
// inference is kept between calls (keep_filter) as oneDNN's converted filter is. Compiled for
// AVX2+FMA: made only where use_avx2() (conv_cpu.cpp).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "blas.hpp"
#include "common.hpp"
#include "conv.hpp"
#include "engine.hpp"
#include "layout.hpp"

namespace paddle_ops_nn {
namespace {

// Tiles per block: the transformed inputs of a block (taps x tiles x channels floats) within
// about 4 MB, so that they stay in the last-level cache for the GEMMs (whose outputs, taps x
// tiles x filters floats, are as large where there are as many filters as channels).
constexpr int64_t kBlockBytes = int64_t{4} << 20;

inline __m256 add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m256 sub(__m256 a, __m256 b) { return _mm256_sub_ps(a, b); }
inline __m256 mul(float c, __m256 a) { return _mm256_mul_ps(_mm256_set1_ps(c), a); }
inline __m256 madd(float c, __m256 a, __m256 b) {  // c a + b
  return _mm256_fmadd_ps(_mm256_set1_ps(c), a, b);
}

// F(M x M, 3x3): M x M outputs a tile, from (M + 2) x (M + 2) inputs, in (M + 2)^2 products
// per channel pair. Each transform is a 1-D one applied to the columns, then to the rows:
// input (B^T d), filter (G g), output (A^T m), over 8 channels at a time.
template <int M> struct Winograd;

template <> struct Winograd<2> {
  static constexpr int kIn = 4;
  static void input(const __m256 d[4], __m256 r[4]) {
    r[0] = sub(d[0], d[2]), r[1] = add(d[1], d[2]), r[2] = sub(d[2], d[1]);
    r[3] = sub(d[1], d[3]);
  }
  static void filter(const __m256 g[3], __m256 r[4]) {
    const __m256 outer = add(g[0], g[2]);
    r[0] = g[0], r[1] = mul(0.5f, add(outer, g[1])), r[2] = mul(0.5f, sub(outer, g[1]));
    r[3] = g[2];
  }
  static void output(const __m256 m[4], __m256 r[2]) {
    r[0] = add(add(m[0], m[1]), m[2]), r[1] = sub(sub(m[1], m[2]), m[3]);
  }
  // The filter gradient's: output's transpose (A d) and filter's (G^T m).
  static void expand(const __m256 d[2], __m256 r[4]) {
    r[0] = d[0], r[1] = add(d[0], d[1]), r[2] = sub(d[0], d[1]), r[3] = mul(-1.f, d[1]);
  }
  static void reduce(const __m256 m[4], __m256 r[3]) {
    const __m256 half_sum = mul(0.5f, add(m[1], m[2]));
    r[0] = add(m[0], half_sum), r[1] = mul(0.5f, sub(m[1], m[2])), r[2] = add(half_sum, m[3]);
  }
};

// Points 0, 1, -1, 2, -2 and infinity (Lavin and Gray's F(4x4, 3x3)).
template <> struct Winograd<4> {
  static constexpr int kIn = 6;
  static void input(const __m256 d[6], __m256 r[6]) {
    const __m256 a = madd(-4.f, d[2], d[4]), b = madd(-4.f, d[1], d[3]);  // d4 - 4 d2, d3 - 4 d1
    const __m256 c = sub(d[4], d[2]), e = mul(2.f, sub(d[3], d[1]));    // d4 - d2, 2 (d3 - d1)
    r[0] = add(madd(4.f, d[0], d[4]), mul(-5.f, d[2]));
    r[1] = add(a, b), r[2] = sub(a, b), r[3] = add(c, e), r[4] = sub(c, e);
    r[5] = add(madd(4.f, d[1], d[5]), mul(-5.f, d[3]));
  }
  static void filter(const __m256 g[3], __m256 r[6]) {
    const __m256 outer = add(g[0], g[2]);
    r[0] = mul(0.25f, g[0]);
    r[1] = mul(-1.f / 6, add(outer, g[1])), r[2] = mul(-1.f / 6, sub(outer, g[1]));
    const __m256 even = madd(1.f / 24, g[0], mul(1.f / 6, g[2])), odd = mul(1.f / 12, g[1]);
    r[3] = add(even, odd), r[4] = sub(even, odd);
    r[5] = g[2];
  }
  static void output(const __m256 m[6], __m256 r[4]) {
    const __m256 a = add(m[1], m[2]), b = sub(m[1], m[2]);
    const __m256 c = add(m[3], m[4]), e = sub(m[3], m[4]);
    r[0] = add(add(m[0], a), c), r[1] = madd(2.f, e, b), r[2] = madd(4.f, c, a);
    r[3] = add(madd(8.f, e, b), m[5]);
  }
  // The filter gradient's: output's transpose (A d) and filter's (G^T m).
  static void expand(const __m256 d[4], __m256 r[6]) {
    const __m256 even = add(d[0], d[2]), odd = add(d[1], d[3]);               // d0 + d2, d1 + d3
    const __m256 even4 = madd(4.f, d[2], d[0]), odd8 = madd(8.f, d[3], mul(2.f, d[1]));
    r[0] = d[0], r[1] = add(even, odd), r[2] = sub(even, odd);
    r[3] = add(even4, odd8), r[4] = sub(even4, odd8), r[5] = d[3];
  }
  static void reduce(const __m256 m[6], __m256 r[3]) {
    const __m256 a = add(m[1], m[2]), b = sub(m[1], m[2]);
    const __m256 c = add(m[3], m[4]), e = sub(m[3], m[4]);
    r[0] = madd(1.f / 24, c, madd(-1.f / 6, a, mul(0.25f, m[0])));
    r[1] = madd(1.f / 12, e, mul(-1.f / 6, b));
    r[2] = add(mul(1.f / 6, sub(c, a)), m[5]);
  }
};

size_t aligned(int64_t floats) {
  return (static_cast<size_t>(floats) * sizeof(float) + 63) / 64 * 64;
}

// An activation as this engine reads or writes it: where the 8 channels from `ch` (a multiple
// of 8) of position (n, y, x) lie, channels last or nChw8c; a plain NCHW one is staged in nChw8c.
struct Placement {
  Activation shape;  // its logical sizes, and the nChw8c staging of a plain one
  bool plain = false;
  int64_t image = 0, row = 0, col = 0, block = 0;  // strides, in floats

  Placement(int layout, int64_t n, int64_t c, int64_t h, int64_t w) : plain(layout == 0) {
    shape.n = n, shape.c = c, shape.h = h, shape.w = w, shape.block = 8;
    if (layout == kChannelsLast)
      image = h * w * c, row = w * c, col = c, block = 8;
    else
      image = c * h * w, row = w * 8, col = 8, block = h * w * 8;
  }
  int64_t floats() const { return shape.n * shape.c * shape.h * shape.w; }
  int64_t at(int64_t n, int64_t y, int64_t x, int64_t ch) const {
    return n * image + y * row + x * col + ch / 8 * block;
  }
};

// One Winograd convolution from s.channels to s.filters channels, given U: a forward pass, or
// an input gradient (the convolution of dy into dx through the mirrored filter's U).
template <int M> class WinogradPass {
  static constexpr int kIn = Winograd<M>::kIn, kTaps = kIn * kIn;

 public:
  WinogradPass(const ConvShape& s, int in_layout, int out_layout, const ConvEpilogue& epilogue)
      : s_(s), epilogue_(epilogue),
        in_(in_layout, s.batch, s.channels, s.h.in, s.w.in),
        out_(out_layout, s.batch, s.filters, s.h.out, s.w.out) {
    tiles_h_ = (s.h.out + M - 1) / M, tiles_w_ = (s.w.out + M - 1) / M;
    tiles_ = s.batch * tiles_h_ * tiles_w_;
    block_ = std::min(tiles_, std::max<int64_t>(16, kBlockBytes / (kTaps * s.channels * 4)));
  }

  // Staged plain activations, V and M.
  size_t scratch_bytes() const {
    return aligned(in_.plain ? in_.floats() : 0) + aligned(out_.plain ? out_.floats() : 0) +
           aligned(kTaps * block_ * s_.channels) + aligned(kTaps * block_ * s_.filters);
  }

  void run(const float* x, const float* u, const float* bias, const float* residual, float* y,
           char* scratch, int threads) const {
    const float* in = x;
    if (in_.plain) {
      float* staged = reinterpret_cast<float*>(scratch);
      to_blocked(in_.shape, x, staged, threads);
      in = staged, scratch += aligned(in_.floats());
    }
    float* out = y;
    if (out_.plain) out = reinterpret_cast<float*>(scratch), scratch += aligned(out_.floats());
    float* v = reinterpret_cast<float*>(scratch);
    float* m = reinterpret_cast<float*>(scratch + aligned(kTaps * block_ * s_.channels));
    // A plain out gets the residual and the activation after it is unstaged (elementwise).
    const Out o{out, bias, out_.plain ? nullptr : residual,
                out_.plain ? ConvEpilogue::kNone : epilogue_.activation};
    const int64_t C = s_.channels, K = s_.filters;
    BlasOneThread blas;  // each of our threads runs its own GEMMs
    for (int64_t first = 0; first < tiles_; first += block_) {
      const int64_t count = std::min(block_, tiles_ - first);
#pragma omp parallel num_threads(threads)
      {
        const int64_t p = omp_get_thread_num(), q = omp_get_num_threads();
        transform_input(in, v, first, count * p / q, count * (p + 1) / q);
#pragma omp barrier
        for (int64_t e = p; e < kTaps; e += q)
          gemm<float>(false, false, count, K, C, 1.f, v + e * block_ * C, C, u + e * C * K, K, 0.f,
                      m + e * block_ * K, K);
#pragma omp barrier
        transform_output(m, o, first, count * p / q, count * (p + 1) / q);
      }
    }
    if (out_.plain) {
      to_plain(out_.shape, out, y, threads);
      if (epilogue_.activation != ConvEpilogue::kNone || residual != nullptr)
        apply_epilogue(PC_FLOAT32, epilogue_, residual, y, out_.floats(), threads);
    }
  }

  // Staged plain x and dy, V and Z of a block, and M: filter_gradient's scratch.
  size_t filter_gradient_bytes() const {
    return aligned(in_.plain ? in_.floats() : 0) + aligned(out_.plain ? out_.floats() : 0) +
           aligned(kTaps * block_ * s_.channels) + aligned(kTaps * block_ * s_.filters) +
           aligned(kTaps * s_.filters * s_.channels);
  }

  // This convolution's filter gradient dw [K, C, 3, 3] (where not null) and bias gradient db
  // (where not null) from x and out's gradient dy. The forward pass's adjoint in the filter:
  // dw = G^T M G, M[e] the sum over the tiles of Z[e]^T V[e], with V = B^T d B the input tiles
  // transformed as the forward pass does and Z = A dy A^T the tiles of dy.
  void filter_gradient(const float* x, const float* dy, float* dw, float* db, char* scratch,
                       int threads) const {
    const float* in = x;
    const float* grad = dy;
    if (in_.plain && dw != nullptr) {
      float* staged = reinterpret_cast<float*>(scratch);
      to_blocked(in_.shape, x, staged, threads);
      in = staged;
    }
    scratch += aligned(in_.plain ? in_.floats() : 0);
    if (out_.plain) {
      float* staged = reinterpret_cast<float*>(scratch);
      to_blocked(out_.shape, dy, staged, threads);
      grad = staged;
    }
    scratch += aligned(out_.plain ? out_.floats() : 0);
    if (db != nullptr) bias_gradient(grad, db, threads);
    if (dw == nullptr) return;
    const int64_t C = s_.channels, K = s_.filters;
    float* v = reinterpret_cast<float*>(scratch);
    float* z = v + aligned(kTaps * block_ * C) / sizeof(float);
    float* m = z + aligned(kTaps * block_ * K) / sizeof(float);
    if (tiles_ == 0) std::fill_n(m, kTaps * K * C, 0.f);
    BlasOneThread blas;  // each of our threads runs its own GEMMs
    for (int64_t first = 0; first < tiles_; first += block_) {
      const int64_t count = std::min(block_, tiles_ - first);
      const float beta = first == 0 ? 0.f : 1.f;
#pragma omp parallel num_threads(threads)
      {
        const int64_t p = omp_get_thread_num(), q = omp_get_num_threads();
        transform_input(in, v, first, count * p / q, count * (p + 1) / q);
        transform_gradient(grad, z, first, count * p / q, count * (p + 1) / q);
#pragma omp barrier
        for (int64_t e = p; e < kTaps; e += q)
          gemm<float>(true, false, K, C, count, 1.f, z + e * block_ * K, K, v + e * block_ * C, C,
                      beta, m + e * K * C, C);
      }
    }
    reduce_filter(m, dw, threads);
  }

 private:
  struct Out {
    float* y;
    const float* bias;      // null without one
    const float* residual;  // null without one; placed as y
    ConvEpilogue::Activation activation;
  };

  // A tile's image, its first output row and column, and its rows and columns inside the
  // output (M, or fewer at the bottom and right edges).
  struct Tile {
    int64_t n, row, col;
    int rows, cols;
  };
  Tile tile(int64_t t) const {
    const int64_t per_image = tiles_h_ * tiles_w_, r = t % per_image;
    const int64_t row = r / tiles_w_ * M, col = r % tiles_w_ * M;
    return {t / per_image, row, col, static_cast<int>(std::min<int64_t>(M, s_.h.out - row)),
            static_cast<int>(std::min<int64_t>(M, s_.w.out - col))};
  }

  // V for tiles [begin, end) of the block starting at tile `first`, 8 channels at a time.
  void transform_input(const float* x, float* v, int64_t first, int64_t begin, int64_t end) const {
    const int64_t C = s_.channels, H = s_.h.in, W = s_.w.in, step = block_ * C;
    for (int64_t i = begin; i < end; ++i) {
      const Tile t = tile(first + i);
      const int64_t top = t.row - s_.h.pad_before, left = t.col - s_.w.pad_before;
      const float* at[kIn][kIn];  // each input's first 8 channels, null in the padding
      for (int r = 0; r < kIn; ++r)
        for (int c = 0; c < kIn; ++c) {
          const int64_t yy = top + r, xx = left + c;
          at[r][c] = yy >= 0 && yy < H && xx >= 0 && xx < W ? x + in_.at(t.n, yy, xx, 0) : nullptr;
        }
      for (int64_t ch = 0; ch < C; ch += 8) {
        const int64_t to = ch / 8 * in_.block;
        __m256 d[kIn][kIn], column[kIn], s[kIn][kIn];  // s = B^T d
        for (int c = 0; c < kIn; ++c) {
          for (int r = 0; r < kIn; ++r)
            column[r] = at[r][c] ? _mm256_loadu_ps(at[r][c] + to) : _mm256_setzero_ps();
          Winograd<M>::input(column, d[c]);  // (d[c]: column c of B^T d)
        }
        for (int r = 0; r < kIn; ++r)
          for (int c = 0; c < kIn; ++c) s[r][c] = d[c][r];
        float* o = v + i * C + ch;
        for (int r = 0; r < kIn; ++r) {  // (B^T d) B
          __m256 row[kIn];
          Winograd<M>::input(s[r], row);
          for (int c = 0; c < kIn; ++c) _mm256_storeu_ps(o + (r * kIn + c) * step, row[c]);
        }
      }
    }
  }

  // out = act(value + bias + residual), 8 channels of one output position.
  __m256 epilogue(__m256 value, const Out& out, const float* bias, const float* residual) const {
    if (bias) value = _mm256_add_ps(value, _mm256_loadu_ps(bias));
    if (residual) value = _mm256_add_ps(value, _mm256_loadu_ps(residual));
    switch (out.activation) {
      // (_mm256_max_ps(a, b) is b where either is NaN: NaN goes through, as in the ops)
      case ConvEpilogue::kRelu:
        return _mm256_max_ps(_mm256_setzero_ps(), value);
      case ConvEpilogue::kLeakyRelu: {  // x > 0 ? x : alpha x, as oneDNN's relu post-op
        const __m256 scaled = _mm256_mul_ps(value, _mm256_set1_ps(epilogue_.alpha));
        const __m256 positive = _mm256_cmp_ps(value, _mm256_setzero_ps(), _CMP_GT_OQ);
        return _mm256_blendv_ps(scaled, value, positive);
      }
      case ConvEpilogue::kClip:
        return _mm256_min_ps(_mm256_set1_ps(epilogue_.beta),
                             _mm256_max_ps(_mm256_set1_ps(epilogue_.alpha), value));
      case ConvEpilogue::kNone:
        break;
    }
    return value;
  }

  // y's M x M outputs of tiles [begin, end) of the block (those inside the image).
  void transform_output(const float* m, const Out& out, int64_t first, int64_t begin,
                        int64_t end) const {
    const int64_t K = s_.filters, step = block_ * K;
    for (int64_t i = begin; i < end; ++i) {
      const Tile t = tile(first + i);
      for (int64_t k = 0; k < K; k += 8) {
        const float* at = m + i * K + k;
        __m256 a[kIn][M];  // a[c]: column c of A^T m
        for (int c = 0; c < kIn; ++c) {
          __m256 column[kIn];
          for (int r = 0; r < kIn; ++r) column[r] = _mm256_loadu_ps(at + (r * kIn + c) * step);
          Winograd<M>::output(column, a[c]);
        }
        const float* bias = out.bias ? out.bias + k : nullptr;
        for (int r = 0; r < t.rows; ++r) {
          __m256 row[kIn], o[M];  // (A^T m) A
          for (int c = 0; c < kIn; ++c) row[c] = a[c][r];
          Winograd<M>::output(row, o);
          for (int c = 0; c < t.cols; ++c) {
            const int64_t place = out_.at(t.n, t.row + r, t.col + c, k);
            const float* residual = out.residual ? out.residual + place : nullptr;
            _mm256_storeu_ps(out.y + place, epilogue(o[c], out, bias, residual));
          }
        }
      }
    }
  }

  // Z for tiles [begin, end) of the block starting at tile `first`: A dy A^T of each tile's
  // M x M gradients (zeros past the output's edge), 8 filters at a time.
  void transform_gradient(const float* dy, float* z, int64_t first, int64_t begin,
                          int64_t end) const {
    const int64_t K = s_.filters, step = block_ * K;
    for (int64_t i = begin; i < end; ++i) {
      const Tile t = tile(first + i);
      for (int64_t k = 0; k < K; k += 8) {
        __m256 a[M][kIn];  // a[c]: column c of A dy
        for (int c = 0; c < M; ++c) {
          __m256 column[M];
          for (int r = 0; r < M; ++r)
            column[r] = r < t.rows && c < t.cols
                            ? _mm256_loadu_ps(dy + out_.at(t.n, t.row + r, t.col + c, k))
                            : _mm256_setzero_ps();
          Winograd<M>::expand(column, a[c]);
        }
        float* o = z + i * K + k;
        for (int r = 0; r < kIn; ++r) {  // (A dy) A^T
          __m256 row[M], expanded[kIn];
          for (int c = 0; c < M; ++c) row[c] = a[c][r];
          Winograd<M>::expand(row, expanded);
          for (int c = 0; c < kIn; ++c) _mm256_storeu_ps(o + (r * kIn + c) * step, expanded[c]);
        }
      }
    }
  }

  // dw[k][c] = G^T M[.][k][c] G for every filter k, 8 channels at a time.
  void reduce_filter(const float* m, float* dw, int threads) const {
    const int64_t C = s_.channels, K = s_.filters, plane = K * C;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; c += 8) {
        __m256 q[kIn][3];  // q[j]: column j of G^T M
        for (int j = 0; j < kIn; ++j) {
          __m256 column[kIn];
          for (int i = 0; i < kIn; ++i)
            column[i] = _mm256_loadu_ps(m + (i * kIn + j) * plane + k * C + c);
          Winograd<M>::reduce(column, q[j]);
        }
        alignas(32) float taps[9][8];  // (G^T M) G, tap by tap
        for (int u = 0; u < 3; ++u) {
          __m256 row[kIn], reduced[3];
          for (int j = 0; j < kIn; ++j) row[j] = q[j][u];
          Winograd<M>::reduce(row, reduced);
          for (int w = 0; w < 3; ++w) _mm256_store_ps(taps[u * 3 + w], reduced[w]);
        }
        for (int lane = 0; lane < 8; ++lane)
          for (int tap = 0; tap < 9; ++tap) dw[(k * C + c + lane) * 9 + tap] = taps[tap][lane];
      }
  }

  // db[k] = the sum of dy's filter k over every position, 8 filters at a time (a row's sum in
  // float, the rows' in double).
  void bias_gradient(const float* dy, float* db, int threads) const {
    const int64_t K = s_.filters;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < K; k += 8) {
      double sums[8] = {};
      for (int64_t n = 0; n < s_.batch; ++n)
        for (int64_t y = 0; y < s_.h.out; ++y) {
          __m256 row = _mm256_setzero_ps();
          for (int64_t x = 0; x < s_.w.out; ++x)
            row = _mm256_add_ps(row, _mm256_loadu_ps(dy + out_.at(n, y, x, k)));
          alignas(32) float part[8];
          _mm256_store_ps(part, row);
          for (int lane = 0; lane < 8; ++lane) sums[lane] += part[lane];
        }
      for (int lane = 0; lane < 8; ++lane) db[k + lane] = static_cast<float>(sums[lane]);
    }
  }

  ConvShape s_;
  ConvEpilogue epilogue_;
  Placement in_, out_;
  int64_t tiles_h_ = 0, tiles_w_ = 0, tiles_ = 0, block_ = 0;
};

// The convolution whose forward pass is `s`'s input gradient: from s's filters to its
// channels, over s's output, padded so that it gives s's input.
ConvShape input_gradient_shape(const ConvShape& s) {
  ConvShape m = s;
  m.channels = s.filters, m.filters = s.channels;
  for (Axis* a : {&m.h, &m.w}) {
    std::swap(a->in, a->out);
    a->pad_before = 2 - a->pad_before, a->pad_after = 2 - a->pad_after;
  }
  return m;
}

template <int M> class WinogradConv final : public ConvEngine {
  static constexpr int kIn = Winograd<M>::kIn, kTaps = kIn * kIn;

 public:
  WinogradConv(const ConvShape& s, unsigned passes, bool bias, Layouts layout,
               const ConvEpilogue& epilogue, bool keep_filter)
      : s_(s), bias_(bias), keep_(keep_filter && (passes & kForward)) {
    filter_floats_ = kTaps * s.channels * s.filters;
    if (passes & kForward) forward_.emplace(s, layout.x, layout.out, epilogue);
    if (passes & kBackwardData)
      backward_.emplace(input_gradient_shape(s), layout.out, layout.x, ConvEpilogue{});
    if (passes & kBackwardWeights) filter_grad_.emplace(s, layout.x, layout.out, ConvEpilogue{});
    if (keep_) kept_.resize(static_cast<size_t>(filter_floats_));
  }

  size_t workspace_bytes() const override {
    const size_t u = aligned(filter_floats_);
    size_t bytes = 0;
    if (forward_) bytes = std::max(bytes, (keep_ ? 0 : u) + forward_->scratch_bytes());
    if (backward_) bytes = std::max(bytes, u + backward_->scratch_bytes());
    if (filter_grad_) bytes = std::max(bytes, filter_grad_->filter_gradient_bytes());
    return bytes;
  }
  size_t state_bytes() const override { return kept_.size() * sizeof(float); }

  void forward(const void* x, const void* w, const void* b, const void* residual, void* y, char* ws,
               int threads, bool same_filter) const override {
    if (!forward_) fail("this Winograd engine was made without the forward pass");
    float* u = keep_ ? kept_.data() : reinterpret_cast<float*>(ws);
    if (!(keep_ && same_filter && filter_ready_)) {
      transform_filter(static_cast<const float*>(w), u, false, threads);
      filter_ready_ = keep_;
    }
    forward_->run(static_cast<const float*>(x), u, bias_ ? static_cast<const float*>(b) : nullptr,
                  static_cast<const float*>(residual), static_cast<float*>(y),
                  ws + (keep_ ? 0 : aligned(filter_floats_)), threads);
  }

  void backward_data(const void* dy, const void* w, void* dx, char* ws,
                     int threads) const override {
    if (!backward_) fail("this Winograd engine was made without the input gradient");
    float* u = reinterpret_cast<float*>(ws);
    transform_filter(static_cast<const float*>(w), u, true, threads);
    backward_->run(static_cast<const float*>(dy), u, nullptr, nullptr, static_cast<float*>(dx),
                   ws + aligned(filter_floats_), threads);
  }

  void backward_weights(const void* x, const void* dy, void* dw, void* db, char* ws,
                        int threads) const override {
    if (!filter_grad_) fail("this Winograd engine was made without the filter gradient");
    filter_grad_->filter_gradient(static_cast<const float*>(x), static_cast<const float*>(dy),
                                  static_cast<float*>(dw),
                                  bias_ ? static_cast<float*>(db) : nullptr, ws, threads);
  }

 private:
  // U[e][c][k] = (G g G^T)[e] for the filter g = w[k][c] (3x3); mirrored, U[e][k][c] for the
  // filter mirrored (g's taps in reverse order). Eight filters at a time, or eight channels
  // mirrored: a vector of each tap gathered, the transformed values stored whole.
  void transform_filter(const float* w, float* u, bool mirrored, int threads) const {
    const int64_t C = s_.channels, K = s_.filters, plane = C * K;
    const int lane = static_cast<int>(mirrored ? 9 : C * 9);  // floats between two lanes' taps
    const __m256i apart = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                             _mm256_set1_epi32(lane));
    if (!mirrored) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t k = 0; k < K; k += 8)
        for (int64_t c = 0; c < C; ++c)
          transform_taps(w + (k * C + c) * 9, apart, u + c * K + k, plane, false);
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t c = 0; c < C; c += 8)
          transform_taps(w + (k * C + c) * 9, apart, u + k * C + c, plane, true);
    }
  }

  // Eight 3x3 filters' transforms (their taps from `first`, `apart` floats apart; mirrored, in
  // reverse order), value e of each stored at out + e * plane.
  static void transform_taps(const float* first, __m256i apart, float* out, int64_t plane,
                             bool mirrored) {
    __m256 g[3][3], t[3][kIn];  // t[j]: column j of G g
    for (int tap = 0; tap < 9; ++tap) {
      const int at = mirrored ? 8 - tap : tap;
      g[tap % 3][tap / 3] = _mm256_i32gather_ps(first + at, apart, 4);  // (column-major)
    }
    for (int j = 0; j < 3; ++j) Winograd<M>::filter(g[j], t[j]);
    for (int i = 0; i < kIn; ++i) {  // (G g) G^T
      const __m256 row[3] = {t[0][i], t[1][i], t[2][i]};
      __m256 u[kIn];
      Winograd<M>::filter(row, u);
      for (int j = 0; j < kIn; ++j) _mm256_storeu_ps(out + (i * kIn + j) * plane, u[j]);
    }
  }

  ConvShape s_;
  bool bias_, keep_;
  int64_t filter_floats_ = 0;
  // The forward pass, the input gradient's (dy through the mirrored filter) and the
  // filter gradient's (the forward pass's geometry).
  std::optional<WinogradPass<M>> forward_, backward_, filter_grad_;
  mutable std::vector<float> kept_;      // U between calls (keep_filter)
  mutable bool filter_ready_ = false;
};

}  // namespace

std::unique_ptr<ConvEngine> make_winograd_conv(const ConvShape& shape, unsigned passes, bool bias,
                                               Layouts layout, const ConvEpilogue& epilogue,
                                               bool keep_filter) {
  // F(4x4, 3x3) where its tiles are at least as many as the filters: then its transformed
  // filter (36 values a channel pair, transformed at every training step) is no larger than
  // the transformed input (36 a tile and channel), and its GEMMs are tall enough. Measured
  // against F(2x2, 3x3), 1 and 2 threads: 0.62-0.75x the forward time and 0.83-0.89x the
  // training step's gradient time at 64 channels over 56x56 (batch 1 and 8) and 8x8 (batch
  // 32); 1.7x the forward time for 256 channels over 14x14 at batch 1 (16 tiles).
  const int64_t tiles = shape.batch * ((shape.h.out + 3) / 4) * ((shape.w.out + 3) / 4);
  const int outputs = tiles >= shape.filters ? 4 : 2;
  count_winograd_engine(outputs);
  if (outputs == 4)
    return std::make_unique<WinogradConv<4>>(shape, passes, bias, layout, epilogue, keep_filter);
  return std::make_unique<WinogradConv<2>>(shape, passes, bias, layout, epilogue, keep_filter);
}

}  // namespace paddle_ops_nn
