// The Winograd convolution engine: F(2x2, 3x3) for float32 3x3 convolutions of stride 1,
// forward only, on channels-last activations (the inference layout of oneDNN's AVX2 kernels,
// which oneDNN itself computes directly: it has Winograd on AVX-512 only). Each 2x2 block of
// outputs ("tile") comes from a 4x4 block of inputs in 16 products instead of 36, so the
// multiplications are 2.25x fewer. Three steps per block of tiles:
//   V[e][t][c] = (B^T d B)[e]   the input tiles transformed (d: tile t's 4x4 inputs of c)
//   M[e] = V[e] U[e]            16 GEMMs (OpenBLAS); U[e][c][k] = (G g G^T)[e], the filter's
//   y's tile = A^T m A          per output channel, then the epilogue (bias, residual, act)
// with the matrices of Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"
// (2016). The transformed filter U is kept between calls (keep_filter) as oneDNN's converted
// filter is. Compiled for AVX2+FMA: made only where use_avx2() (conv_cpu.cpp).
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "blas.hpp"
#include "common.hpp"
#include "conv.hpp"
#include "engine.hpp"

namespace paddle_ops_nn {
namespace {

constexpr int kTaps = 16;  // the 4x4 transformed values of a tile
// Tiles per block: the transformed inputs of a block (16 x tiles x channels floats) within
// about 4 MB, so that they and the GEMMs' outputs stay in the last-level cache.
constexpr int64_t kBlockBytes = int64_t{4} << 20;

class WinogradConv final : public ConvEngine {
 public:
  WinogradConv(const ConvShape& s, bool bias, const ConvEpilogue& epilogue, bool keep_filter)
      : s_(s), bias_(bias), epilogue_(epilogue), keep_(keep_filter) {
    tiles_h_ = (s.h.out + 1) / 2, tiles_w_ = (s.w.out + 1) / 2;
    tiles_ = s.batch * tiles_h_ * tiles_w_;
    block_ = std::min(tiles_, std::max<int64_t>(16, kBlockBytes / (kTaps * s.channels * 4)));
    filter_floats_ = kTaps * s.channels * s.filters;
    v_floats_ = kTaps * block_ * s.channels;
    m_floats_ = kTaps * block_ * s.filters;
    if (keep_) kept_.resize(static_cast<size_t>(filter_floats_));
  }

  size_t workspace_bytes() const override {
    return aligned(keep_ ? 0 : filter_floats_) + aligned(v_floats_) + aligned(m_floats_);
  }
  size_t state_bytes() const override { return kept_.size() * sizeof(float); }

  void forward(const void* x, const void* w, const void* b, const void* residual, void* y, char* ws,
               int threads, bool same_filter) const override {
    float* u = keep_ ? kept_.data() : reinterpret_cast<float*>(ws);
    char* rest = ws + (keep_ ? 0 : aligned(filter_floats_));
    float* v = reinterpret_cast<float*>(rest);
    float* m = reinterpret_cast<float*>(rest + aligned(v_floats_));
    if (!(keep_ && same_filter && filter_ready_)) {
      transform_filter(static_cast<const float*>(w), u);
      filter_ready_ = keep_;
    }
    const Out out{static_cast<float*>(y), bias_ ? static_cast<const float*>(b) : nullptr,
                  static_cast<const float*>(residual)};
    BlasOneThread blas;  // each of our threads runs its own GEMMs
    for (int64_t first = 0; first < tiles_; first += block_) {
      const int64_t count = std::min(block_, tiles_ - first);
#pragma omp parallel num_threads(threads)
      {
        const int64_t p = omp_get_thread_num(), q = omp_get_num_threads();
        transform_input(static_cast<const float*>(x), v, first, count * p / q, count * (p + 1) / q);
#pragma omp barrier
        for (int64_t e = p; e < kTaps; e += q)
          gemm<float>(false, false, count, s_.filters, s_.channels, 1.f,
                      v + e * block_ * s_.channels, s_.channels, u + e * s_.channels * s_.filters,
                      s_.filters, 0.f, m + e * block_ * s_.filters, s_.filters);
#pragma omp barrier
        transform_output(m, out, first, count * p / q, count * (p + 1) / q);
      }
    }
  }

  void backward_data(const void*, const void*, void*, char*, int) const override {
    fail("the Winograd convolution engine computes forward passes only");
  }
  void backward_weights(const void*, const void*, void*, void*, char*, int) const override {
    fail("the Winograd convolution engine computes forward passes only");
  }

 private:
  struct Out {
    float* y;
    const float* bias;      // null without one
    const float* residual;  // null without one; channels last as y
  };

  static size_t aligned(int64_t floats) {
    return (static_cast<size_t>(floats) * sizeof(float) + 63) / 64 * 64;
  }

  // U[e][c][k] = (G g G^T)[e] for the filter g = w[k][c] (3x3).
  void transform_filter(const float* w, float* u) const {
    const int64_t C = s_.channels, K = s_.filters;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) {
        const float* g = w + (k * C + c) * 9;
        float t[4][3];  // G g
        for (int j = 0; j < 3; ++j) {
          t[0][j] = g[j];
          t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
          t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
          t[3][j] = g[6 + j];
        }
        for (int i = 0; i < 4; ++i) {  // (G g) G^T
          const float row[4] = {t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                                0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2]};
          for (int j = 0; j < 4; ++j) u[((i * 4 + j) * C + c) * K + k] = row[j];
        }
      }
  }

  // A tile's image and its first output row and column.
  struct Tile {
    int64_t n, row, col;
  };
  Tile tile(int64_t t) const {
    const int64_t per_image = tiles_h_ * tiles_w_, r = t % per_image;
    return {t / per_image, r / tiles_w_ * 2, r % tiles_w_ * 2};
  }

  // V for tiles [begin, end) of the block starting at tile `first`, 8 channels at a time.
  void transform_input(const float* x, float* v, int64_t first, int64_t begin, int64_t end) const {
    const int64_t C = s_.channels, H = s_.h.in, W = s_.w.in, step = block_ * C;
    for (int64_t i = begin; i < end; ++i) {
      const Tile t = tile(first + i);
      const int64_t top = t.row - s_.h.pad_before, left = t.col - s_.w.pad_before;
      const float* at[4][4];  // each input's channels, null in the padding
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
          const int64_t yy = top + r, xx = left + c;
          at[r][c] =
              yy >= 0 && yy < H && xx >= 0 && xx < W ? x + ((t.n * H + yy) * W + xx) * C : nullptr;
        }
      for (int64_t ch = 0; ch < C; ch += 8) {
        __m256 d[4][4];
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c)
            d[r][c] = at[r][c] ? _mm256_loadu_ps(at[r][c] + ch) : _mm256_setzero_ps();
        __m256 s[4][4];  // B^T d
        for (int c = 0; c < 4; ++c) {
          s[0][c] = _mm256_sub_ps(d[0][c], d[2][c]);
          s[1][c] = _mm256_add_ps(d[1][c], d[2][c]);
          s[2][c] = _mm256_sub_ps(d[2][c], d[1][c]);
          s[3][c] = _mm256_sub_ps(d[1][c], d[3][c]);
        }
        float* o = v + i * C + ch;
        for (int r = 0; r < 4; ++r) {  // (B^T d) B
          _mm256_storeu_ps(o + (r * 4 + 0) * step, _mm256_sub_ps(s[r][0], s[r][2]));
          _mm256_storeu_ps(o + (r * 4 + 1) * step, _mm256_add_ps(s[r][1], s[r][2]));
          _mm256_storeu_ps(o + (r * 4 + 2) * step, _mm256_sub_ps(s[r][2], s[r][1]));
          _mm256_storeu_ps(o + (r * 4 + 3) * step, _mm256_sub_ps(s[r][1], s[r][3]));
        }
      }
    }
  }

  // out = act(value + bias + residual), 8 channels of one output position.
  __m256 epilogue(__m256 value, const float* bias, const float* residual) const {
    if (bias) value = _mm256_add_ps(value, _mm256_loadu_ps(bias));
    if (residual) value = _mm256_add_ps(value, _mm256_loadu_ps(residual));
    switch (epilogue_.activation) {
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

  // y's 2x2 outputs of tiles [begin, end) of the block (those inside the image).
  void transform_output(const float* m, const Out& out, int64_t first, int64_t begin,
                        int64_t end) const {
    const int64_t K = s_.filters, OH = s_.h.out, OW = s_.w.out, step = block_ * K;
    for (int64_t i = begin; i < end; ++i) {
      const Tile t = tile(first + i);
      const int rows = std::min<int64_t>(2, OH - t.row), cols = std::min<int64_t>(2, OW - t.col);
      for (int64_t k = 0; k < K; k += 8) {
        const float* at = m + i * K + k;
        __m256 a[2][4];  // A^T m
        for (int c = 0; c < 4; ++c) {
          const __m256 m0 = _mm256_loadu_ps(at + (0 + c) * step);
          const __m256 m1 = _mm256_loadu_ps(at + (4 + c) * step);
          const __m256 m2 = _mm256_loadu_ps(at + (8 + c) * step);
          const __m256 m3 = _mm256_loadu_ps(at + (12 + c) * step);
          a[0][c] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
          a[1][c] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
        }
        const float* bias = out.bias ? out.bias + k : nullptr;
        for (int r = 0; r < rows; ++r) {
          const __m256 o[2] = {_mm256_add_ps(_mm256_add_ps(a[r][0], a[r][1]), a[r][2]),
                               _mm256_sub_ps(_mm256_sub_ps(a[r][1], a[r][2]), a[r][3])};
          const int64_t place = ((t.n * OH + t.row + r) * OW + t.col) * K + k;
          for (int c = 0; c < cols; ++c) {
            const float* residual = out.residual ? out.residual + place + c * K : nullptr;
            _mm256_storeu_ps(out.y + place + c * K, epilogue(o[c], bias, residual));
          }
        }
      }
    }
  }

  ConvShape s_;
  bool bias_;
  ConvEpilogue epilogue_;
  bool keep_;
  int64_t tiles_h_ = 0, tiles_w_ = 0, tiles_ = 0, block_ = 0;
  int64_t filter_floats_ = 0, v_floats_ = 0, m_floats_ = 0;
  mutable std::vector<float> kept_;  // U between calls (keep_filter)
  mutable bool filter_ready_ = false;
};

}  // namespace

std::unique_ptr<ConvEngine> make_winograd_conv(const ConvShape& shape, bool bias,
                                               const ConvEpilogue& epilogue, bool keep_filter) {
  count_winograd_engine();
  return std::make_unique<WinogradConv>(shape, bias, epilogue, keep_filter);
}

}  // namespace paddle_ops_nn
