// The AVX2 loops of half_cpu.cpp's conversions between float32 and the 16-bit floats. This file
// is compiled with -mavx2 -mfma -mf16c; half_cpu.cpp calls it only on CPUs with AVX2 and F16C.
//
// Memory contract: src and dst hold n elements (any alignment). Results are bit for bit the
// SDK's scalar conversions (paddle_core/half.hpp), which the last n % 8 elements go through:
// float16 by F16C's VCVTPH2PS / VCVTPS2PH (round to nearest even; subnormals converted, not
// flushed; NaN quieted with the top of its payload kept), bfloat16 by integer arithmetic on the
// bits (a float's top half, rounded to nearest even; NaN quieted the same way). AVX512-BF16's
// VCVTNEPS2BF16 is not used: it flushes subnormals to zero, so results would depend on the CPU.
#include <immintrin.h>

#include "half.hpp"

namespace paddle_ops_math::avx2 {

void widen_f16(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = pc::float16::from_bits(src[i]);
}

void narrow_f16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = pc::float16(src[i]).bits;
}

void widen_bf16(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(w));
  }
  for (; i < n; ++i) dst[i] = pc::bfloat16::from_bits(src[i]);
}

void narrow_bf16(const float* src, uint16_t* dst, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(src + i);
    const __m256i b = _mm256_castps_si256(x);
    // Round to nearest even: add 0x7fff plus the kept part's lowest bit, keep the top half
    // (a carry moves to the next binade, or to infinity).
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), one);
    const __m256i sum = _mm256_add_epi32(b, _mm256_add_epi32(bias, lsb));
    const __m256i rounded = _mm256_srli_epi32(sum, 16);
    // NaN: the top half, quieted.
    const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(b, 16), quiet);
    const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m256i r = _mm256_blendv_epi8(rounded, nan, is_nan);
    // 8 values of at most 0xffff: packing with unsigned saturation keeps them as they are.
    const __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_packus_epi32(lo, hi));
  }
  for (; i < n; ++i) dst[i] = pc::bfloat16(src[i]).bits;
}

}  // namespace paddle_ops_math::avx2
