// The Winograd convolution engine: F(2x2, 3x3) for float32 3x3 convolutions of stride 1, their
// forward passes and input gradients, on channels-last or nChw8c activations (plain NCHW ones
// staged in nChw8c). oneDNN has Winograd on AVX-512 only; on AVX2 its direct kernels do 2.25x
// the multiplications. Each 2x2 block of outputs ("tile") comes from a 4x4 block of inputs in
// 16 products instead of 36. Three steps per block of tiles:
//   V[e][t][c] = (B^T d B)[e]   the input tiles transformed (d: tile t's 4x4 inputs of c)
//   M[e] = V[e] U[e]            16 GEMMs (OpenBLAS); U[e][c][k] = (G g G^T)[e], the filter's
//   y's tile = A^T m A          per output channel, then the epilogue (bias, residual, act)
// with the matrices of Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"
// (2016). The input gradient is the forward pass of dy through the filter mirrored (rotated
// 180 degrees, its channels and filters swapped). The filter gradient comes from another
// engine. The transformed filter of an inference is kept between calls (keep_filter) as
// oneDNN's converted filter is. Compiled for AVX2+FMA: made only where use_avx2() (conv_cpu.cpp).
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

constexpr int kTaps = 16;  // the 4x4 transformed values of a tile
// Tiles per block: the transformed inputs of a block (16 x tiles x channels floats) within
// about 4 MB, so that they and the GEMMs' outputs stay in the last-level cache.
constexpr int64_t kBlockBytes = int64_t{4} << 20;

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
class WinogradPass {
 public:
  WinogradPass(const ConvShape& s, int in_layout, int out_layout, const ConvEpilogue& epilogue)
      : s_(s), epilogue_(epilogue),
        in_(in_layout, s.batch, s.channels, s.h.in, s.w.in),
        out_(out_layout, s.batch, s.filters, s.h.out, s.w.out) {
    tiles_h_ = (s.h.out + 1) / 2, tiles_w_ = (s.w.out + 1) / 2;
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

 private:
  struct Out {
    float* y;
    const float* bias;      // null without one
    const float* residual;  // null without one; placed as y
    ConvEpilogue::Activation activation;
  };

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
      const float* at[4][4];  // each input's first 8 channels, null in the padding
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
          const int64_t yy = top + r, xx = left + c;
          at[r][c] = yy >= 0 && yy < H && xx >= 0 && xx < W ? x + in_.at(t.n, yy, xx, 0) : nullptr;
        }
      for (int64_t ch = 0; ch < C; ch += 8) {
        const int64_t to = ch / 8 * in_.block;
        __m256 d[4][4];
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c)
            d[r][c] = at[r][c] ? _mm256_loadu_ps(at[r][c] + to) : _mm256_setzero_ps();
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
          for (int c = 0; c < cols; ++c) {
            const int64_t place = out_.at(t.n, t.row + r, t.col + c, k);
            const float* residual = out.residual ? out.residual + place : nullptr;
            _mm256_storeu_ps(out.y + place, epilogue(o[c], out, bias, residual));
          }
        }
      }
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

class WinogradConv final : public ConvEngine {
 public:
  WinogradConv(const ConvShape& s, unsigned passes, bool bias, Layouts layout,
               const ConvEpilogue& epilogue, bool keep_filter, std::unique_ptr<ConvEngine> weights)
      : s_(s), bias_(bias), keep_(keep_filter && (passes & kForward)),
        weights_(std::move(weights)) {
    filter_floats_ = kTaps * s.channels * s.filters;
    if (passes & kForward) forward_.emplace(s, layout.x, layout.out, epilogue);
    if (passes & kBackwardData)
      backward_.emplace(input_gradient_shape(s), layout.out, layout.x, ConvEpilogue{});
    if (keep_) kept_.resize(static_cast<size_t>(filter_floats_));
  }

  size_t workspace_bytes() const override {
    const size_t u = aligned(filter_floats_);
    size_t bytes = weights_ ? weights_->workspace_bytes() : 0;
    if (forward_) bytes = std::max(bytes, (keep_ ? 0 : u) + forward_->scratch_bytes());
    if (backward_) bytes = std::max(bytes, u + backward_->scratch_bytes());
    return bytes;
  }
  size_t state_bytes() const override {
    return kept_.size() * sizeof(float) + (weights_ ? weights_->state_bytes() : 0);
  }

  void forward(const void* x, const void* w, const void* b, const void* residual, void* y, char* ws,
               int threads, bool same_filter) const override {
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
    float* u = reinterpret_cast<float*>(ws);
    transform_filter(static_cast<const float*>(w), u, true, threads);
    backward_->run(static_cast<const float*>(dy), u, nullptr, nullptr, static_cast<float*>(dx),
                   ws + aligned(filter_floats_), threads);
  }

  void backward_weights(const void* x, const void* dy, void* dw, void* db, char* ws,
                        int threads) const override {
    weights_->backward_weights(x, dy, dw, db, ws, threads);
  }

 private:
  // U[e][c][k] = (G g G^T)[e] for the filter g = w[k][c] (3x3); mirrored, U[e][k][c] of the
  // filter mirrored, whose transform is g's with rows and columns 0 and 3 swapped (G times the
  // reversal is G with rows 0 and 3 swapped). Eight filters at a time, or eight channels
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

  // Eight 3x3 filters' transforms (their taps from `first`, `apart` floats apart), value e of
  // each stored at out + e * plane (mirrored: at e with rows and columns 0 and 3 swapped).
  static void transform_taps(const float* first, __m256i apart, float* out, int64_t plane,
                             bool mirrored) {
    constexpr int kSwap[4] = {3, 1, 2, 0};
    const __m256 half = _mm256_set1_ps(0.5f);
    __m256 g[9];
    for (int j = 0; j < 9; ++j) g[j] = _mm256_i32gather_ps(first + j, apart, 4);
    __m256 t[4][3];  // G g
    for (int j = 0; j < 3; ++j) {
      const __m256 outer = _mm256_add_ps(g[j], g[6 + j]);
      t[0][j] = g[j];
      t[1][j] = _mm256_mul_ps(half, _mm256_add_ps(outer, g[3 + j]));
      t[2][j] = _mm256_mul_ps(half, _mm256_sub_ps(outer, g[3 + j]));
      t[3][j] = g[6 + j];
    }
    for (int i = 0; i < 4; ++i) {  // (G g) G^T
      const __m256 outer = _mm256_add_ps(t[i][0], t[i][2]);
      const __m256 row[4] = {t[i][0], _mm256_mul_ps(half, _mm256_add_ps(outer, t[i][1])),
                             _mm256_mul_ps(half, _mm256_sub_ps(outer, t[i][1])), t[i][2]};
      for (int j = 0; j < 4; ++j) {
        const int e = mirrored ? kSwap[i] * 4 + kSwap[j] : i * 4 + j;
        _mm256_storeu_ps(out + e * plane, row[j]);
      }
    }
  }

  ConvShape s_;
  bool bias_, keep_;
  int64_t filter_floats_ = 0;
  std::optional<WinogradPass> forward_, backward_;
  std::unique_ptr<ConvEngine> weights_;  // the filter gradient's engine, or null
  mutable std::vector<float> kept_;      // U between calls (keep_filter)
  mutable bool filter_ready_ = false;
};

}  // namespace

std::unique_ptr<ConvEngine> make_winograd_conv(const ConvShape& shape, unsigned passes, bool bias,
                                               Layouts layout, const ConvEpilogue& epilogue,
                                               bool keep_filter,
                                               std::unique_ptr<ConvEngine> weights) {
  count_winograd_engine();
  return std::make_unique<WinogradConv>(shape, passes, bias, layout, epilogue, keep_filter,
                                        std::move(weights));
}

}  // namespace paddle_ops_nn
