// The float32 row loops of the attention kernels with AVX2+FMA, eight scores at a time. This
// file is compiled with -mavx2 -mfma; attention_cpu.cpp calls it only on CPUs that have both
// (use_avx2 of common.hpp). e^x is the SDK's exp8 (1.05 ulp; exp(-inf) = 0). Tails go through
// masked loads and stores: nothing outside [0, n) is read or written.
#include <paddle_core/avx2.hpp>

#include <cmath>

#include "attention_avx2.hpp"

namespace paddle_ops_nn::avx2 {
namespace {

using paddle_core::avx2::exp8;
using paddle_core::avx2::first_lanes;
using paddle_core::avx2::set1;

inline float hmax(__m256 m) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

inline float hsum(__m256 s) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}

// f(v) on each group of eight of row[0, n), with the tail's missing lanes loaded as `fill`;
// f's result is stored back (masked on the tail).
template <class F> void for_groups(float* row, int64_t n, float fill, F&& f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(row + i, f(_mm256_loadu_ps(row + i), true));
  if (i < n) {
    const __m256i mask = first_lanes(static_cast<int>(n - i));
    const __m256 v = _mm256_blendv_ps(set1(fill), _mm256_maskload_ps(row + i, mask),
                                      _mm256_castsi256_ps(mask));
    _mm256_maskstore_ps(row + i, mask, f(v, false));
  }
}

}  // namespace

float scale_max_f32(float* row, int64_t n, float scale) {
  const __m256 vs = set1(scale);
  __m256 m = set1(-INFINITY);
  // The tail's missing lanes are -inf, which scaling keeps below every score (scale > 0) or
  // makes +inf (scale < 0): they are left out of the max by blending in -inf again.
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(row + i), vs);
    _mm256_storeu_ps(row + i, v);
    m = _mm256_max_ps(m, v);
  }
  if (i < n) {
    const __m256i mask = first_lanes(static_cast<int>(n - i));
    const __m256 v = _mm256_mul_ps(_mm256_maskload_ps(row + i, mask), vs);
    _mm256_maskstore_ps(row + i, mask, v);
    m = _mm256_max_ps(m, _mm256_blendv_ps(set1(-INFINITY), v, _mm256_castsi256_ps(mask)));
  }
  return hmax(m);
}

float exp_sum_f32(float* row, int64_t n, float m) {
  const __m256 vm = set1(m);
  __m256 sum = _mm256_setzero_ps();
  for_groups(row, n, -INFINITY, [&](__m256 v, bool) {
    const __m256 e = exp8(_mm256_sub_ps(v, vm));
    sum = _mm256_add_ps(sum, e);  // the tail's lanes are exp(-inf) = 0
    return e;
  });
  return hsum(sum);
}

void exp_affine_f32(float* row, int64_t n, float a, float b) {
  const __m256 va = set1(a), vb = set1(b);
  for_groups(row, n, 0.0f, [&](__m256 v, bool) { return exp8(_mm256_fmsub_ps(va, v, vb)); });
}

}  // namespace paddle_ops_nn::avx2
