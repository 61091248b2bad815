// Box-Muller in double, four lanes at a time (random_avx2.hpp): the log and the cosine that
// took 85% of gaussian_random's time through libm, element by element.
// This file is compiled with -mavx2 -mfma; random_cpu.cpp calls it only where use_avx2().
//
// ln u: u = 2^e m with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(s), s = (m - 1) / (m + 1),
// |s| < 0.1716, as the odd series 2 (s + s^3/3 + ... + s^23/23) (the next term is below
// 1e-18 of the sum); e ln 2 with ln 2 in two parts. cos(2 pi u): u's quadrant q = round(4u)
// is taken out exactly (u has at most 32 significant bits), leaving r = u - q/4 in [-1/8, 1/8]
// and t = 2 pi r in [-pi/4, pi/4], where the Taylor series of cos and sin to degree 16 and
// 17 err by less than 1e-17. Measured over 4M random pairs against long double: 3.8 ulps at
// most where |z| > 1e-3, and 1e-15 absolute everywhere (libm's: 6000 ulps near cos's zeros).
#include "random_avx2.hpp"

#include <immintrin.h>
#include <paddle_core/avx2.hpp>

#include <cstdint>

namespace paddle_ops_nn::avx2 {

namespace {

// ln x for x in (0, 1] (normal doubles; Random's u1 is at least 2^-32).
inline __m256d log4(__m256d x) {
  const __m256i bits = _mm256_castpd_si256(x);
  const __m256i mantissa = _mm256_set1_epi64x(0x000FFFFFFFFFFFFF);
  const __m256i exponent_0 = _mm256_set1_epi64x(0x3FF0000000000000);
  __m256d m = _mm256_castsi256_pd(_mm256_or_si256(_mm256_and_si256(bits, mantissa), exponent_0));
  // The biased exponent (0 .. 2046) as a double: its bits added to 2^52's, then 2^52 taken off.
  const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
  const __m256i biased = _mm256_or_si256(_mm256_srli_epi64(bits, 52), _mm256_castpd_si256(two52));
  __m256d e = _mm256_sub_pd(_mm256_castsi256_pd(biased), _mm256_set1_pd(4503599627370496.0 + 1023));
  const __m256d big = _mm256_cmp_pd(m, _mm256_set1_pd(1.4142135623730951), _CMP_GT_OQ);
  m = _mm256_blendv_pd(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
  e = _mm256_add_pd(e, _mm256_and_pd(big, _mm256_set1_pd(1.0)));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d s = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));  // m - 1 exact
  const __m256d s2 = _mm256_mul_pd(s, s);
  __m256d p = _mm256_set1_pd(1.0 / 23);
  for (int k = 21; k >= 3; k -= 2) p = _mm256_fmadd_pd(p, s2, _mm256_set1_pd(1.0 / k));
  p = _mm256_mul_pd(p, s2);                                   // s^2/3 + s^4/5 + ...
  const __m256d two_s = _mm256_add_pd(s, s);
  const __m256d log_m = _mm256_fmadd_pd(two_s, p, two_s);    // 2s + 2s (s^2/3 + ...)
  const __m256d ln2_hi = _mm256_set1_pd(0x1.62e42fefa3800p-1);  // 43 bits: e ln2_hi is exact
  const __m256d ln2_lo = _mm256_set1_pd(0x1.ef35793c76730p-45);
  return _mm256_fmadd_pd(e, ln2_hi, _mm256_fmadd_pd(e, ln2_lo, log_m));
}

// cos(2 pi u) for u in [0, 1) with at most 32 significant bits.
inline __m256d cos_2pi4(__m256d u) {
  const __m256d q = _mm256_round_pd(_mm256_mul_pd(u, _mm256_set1_pd(4.0)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d r = _mm256_fnmadd_pd(q, _mm256_set1_pd(0.25), u);  // exact
  const __m256d t = _mm256_mul_pd(r, _mm256_set1_pd(6.283185307179586));
  const __m256d t2 = _mm256_mul_pd(t, t);
  // cos t = sum over j <= 8 of (-1)^j t^2j / (2j)!, sin t = t sum of (-1)^j t^2j / (2j + 1)!.
  double inv_fact[18] = {1.0};
  for (int k = 1; k < 18; ++k) inv_fact[k] = inv_fact[k - 1] / k;
  __m256d c = _mm256_set1_pd(inv_fact[16]), s = _mm256_set1_pd(inv_fact[17]);
  for (int j = 7; j >= 0; --j) {
    const double sign = j % 2 ? -1.0 : 1.0;
    c = _mm256_fmadd_pd(c, t2, _mm256_set1_pd(sign * inv_fact[2 * j]));
    s = _mm256_fmadd_pd(s, t2, _mm256_set1_pd(sign * inv_fact[2 * j + 1]));
  }
  s = _mm256_mul_pd(s, t);
  // cos(t + q pi / 2): q = 0, 4: cos t; 1: -sin t; 2: -cos t; 3: sin t.
  const __m256i quadrant = _mm256_and_si256(
      _mm256_castpd_si256(_mm256_add_pd(q, _mm256_set1_pd(4503599627370496.0))),
      _mm256_set1_epi64x(3));
  const __m256i one = _mm256_set1_epi64x(1);
  const __m256i low = _mm256_and_si256(quadrant, one);
  const __m256d odd = _mm256_castsi256_pd(_mm256_cmpeq_epi64(low, one));  // sin
  const __m256i flip = _mm256_xor_si256(_mm256_srli_epi64(quadrant, 1), low);  // q = 1, 2
  const __m256d negate = _mm256_castsi256_pd(_mm256_slli_epi64(flip, 63));
  return _mm256_xor_pd(_mm256_blendv_pd(c, s, odd), negate);
}

// The eight unsigned 32-bit lanes of w as doubles (exact), four at a time.
inline void to_doubles(__m256i w, __m256d& first, __m256d& second) {
  const __m256i flipped = _mm256_xor_si256(w, _mm256_set1_epi32(INT32_MIN));  // w - 2^31, signed
  const __m256d offset = _mm256_set1_pd(2147483648.0);
  first = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(flipped)), offset);
  second = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(flipped, 1)), offset);
}

}  // namespace

void normal_uniforms(uint32_t key0, uint32_t key1, uint64_t run, uint64_t first, int64_t n,
                     double* u1, double* u2) {
  const __m256d one = _mm256_set1_pd(1.0), scale = _mm256_set1_pd(1.0 / 4294967296.0);
  for (int64_t j = 0; j + 8 <= n; j += 8) {
    __m256i w[4];
    paddle_core::avx2::random_bits8(key0, key1, run, first + static_cast<uint64_t>(j), w);
    __m256d a[2], b[2];
    to_doubles(w[0], a[0], a[1]);
    to_doubles(w[1], b[0], b[1]);
    for (int h = 0; h < 2; ++h) {
      _mm256_storeu_pd(u1 + j + 4 * h, _mm256_mul_pd(_mm256_add_pd(a[h], one), scale));  // (0, 1]
      _mm256_storeu_pd(u2 + j + 4 * h, _mm256_mul_pd(b[h], scale));                      // [0, 1)
    }
  }
}

void float_uniforms(uint32_t key0, uint32_t key1, uint64_t run, uint64_t first, int64_t blocks,
                    float* u) {
  const __m256 scale = _mm256_set1_ps(1.0f / 16777216.0f);
  for (int64_t j = 0; j + 8 <= blocks; j += 8) {
    __m256i w[4];
    paddle_core::avx2::random_bits8(key0, key1, run, first + static_cast<uint64_t>(j), w);
    // Lane b of w[k] is word k of block b; the output wants each block's four words together.
    const __m256i t0 = _mm256_unpacklo_epi32(w[0], w[1]), t1 = _mm256_unpackhi_epi32(w[0], w[1]);
    const __m256i t2 = _mm256_unpacklo_epi32(w[2], w[3]), t3 = _mm256_unpackhi_epi32(w[2], w[3]);
    const __m256i b04 = _mm256_unpacklo_epi64(t0, t2), b15 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i b26 = _mm256_unpacklo_epi64(t1, t3), b37 = _mm256_unpackhi_epi64(t1, t3);
    const __m256i blocks_in_order[4] = {
        _mm256_permute2x128_si256(b04, b15, 0x20), _mm256_permute2x128_si256(b26, b37, 0x20),
        _mm256_permute2x128_si256(b04, b15, 0x31), _mm256_permute2x128_si256(b26, b37, 0x31)};
    for (int q = 0; q < 4; ++q) {  // 24 random bits, as floats in [0, 1)
      const __m256 v = _mm256_cvtepi32_ps(_mm256_srli_epi32(blocks_in_order[q], 8));
      _mm256_storeu_ps(u + 4 * j + 8 * q, _mm256_mul_ps(v, scale));
    }
  }
}

void box_muller(const double* u1, const double* u2, double* z, int64_t n) {
  for (int64_t i = 0; i + 4 <= n; i += 4) {
    const __m256d ln_u1 = log4(_mm256_loadu_pd(u1 + i));
    const __m256d radius = _mm256_sqrt_pd(_mm256_mul_pd(_mm256_set1_pd(-2.0), ln_u1));
    _mm256_storeu_pd(z + i, _mm256_mul_pd(radius, cos_2pi4(_mm256_loadu_pd(u2 + i))));
  }
}

}  // namespace paddle_ops_nn::avx2
