// The float32 copies between plain NCHW and channel-blocked activations (layout_avx2.hpp),
// compiled for AVX2: each tile a transpose of [b, plane] into [plane, b] or back, in 8x8
// blocks loaded as 8 rows, transposed in registers and stored as 8 rows. The scalar loops
// (layout.hpp) read 8 rows a plane apart for every 8 floats they write: 3-4x this time.
#include "layout_avx2.hpp"

#include <immintrin.h>

namespace paddle_ops_nn::avx2 {
namespace {

// dst[c * dst_row + r] = src[r * src_row + c] for r, c in [0, 8).
void transpose8(const float* src, int64_t src_row, float* dst, int64_t dst_row) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_row);
  for (int i = 0; i < 8; i += 2)
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  for (int i = 0; i < 8; i += 4) {  // (row pairs to quadruples, within each 128-bit half)
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {  // (the halves: rows 0-3 with rows 4-7)
    _mm256_storeu_ps(dst + i * dst_row, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * dst_row, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

// One tile: [rows, cols] at src into [cols, rows] at dst, rows a multiple of 8; the columns
// past the last multiple of 8 one at a time.
void transpose_tile(const float* src, float* dst, int64_t rows, int64_t cols) {
  const int64_t whole = cols / 8 * 8;
  for (int64_t r = 0; r < rows; r += 8) {
    for (int64_t c = 0; c < whole; c += 8)
      transpose8(src + r * cols + c, cols, dst + c * rows + r, rows);
    for (int64_t c = whole; c < cols; ++c)
      for (int64_t i = r; i < r + 8; ++i) dst[c * rows + i] = src[i * cols + c];
  }
}

}  // namespace

void to_blocked_f32(const float* plain, float* blocked, int64_t b, int64_t plane, int64_t lo,
                    int64_t hi) {
  for (int64_t t = lo; t < hi; ++t)
    transpose_tile(plain + t * b * plane, blocked + t * b * plane, b, plane);
}

void to_plain_f32(const float* blocked, float* plain, int64_t b, int64_t plane, int64_t lo,
                  int64_t hi) {
  // [plane, b] into [b, plane]: rows a multiple of 8 only where the plane is; else the
  // transposed direction's tail (the plane's last rows) one at a time.
  const int64_t whole = plane / 8 * 8;
  for (int64_t t = lo; t < hi; ++t) {
    const float* src = blocked + t * b * plane;
    float* dst = plain + t * b * plane;
    for (int64_t s = 0; s < whole; s += 8)
      for (int64_t j = 0; j < b; j += 8)
        transpose8(src + s * b + j, b, dst + j * plane + s, plane);
    for (int64_t s = whole; s < plane; ++s)
      for (int64_t j = 0; j < b; ++j) dst[j * plane + s] = src[s * b + j];
  }
}

}  // namespace paddle_ops_nn::avx2
