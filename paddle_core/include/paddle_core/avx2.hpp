// paddle_core/avx2.hpp: float32 vector math for kernels, eight lanes at a time with AVX2+FMA.
//
// Include it only from files compiled with -mavx2 -mfma (name them *_avx2.cpp, say), and call
// what they export only on CPUs that have both (__builtin_cpu_supports("avx2") and ("fma")):
// portable wheels never build for -march=native. Every function is inline, and every file
// that includes this header is an AVX2 one, so no copy built for a lesser CPU can stand in.
//
// first_lanes(k): the mask of a loop's last, partial eight; map(x, out, n, f): a loop of f.
// exp8(x): e^x with a max error of 1.05 float32 ulps against a float64 reference (1.02 over
// every float with 1e-9 <= |x| <= 104): Cephes' reduction x = n ln2 + r, then a degree-6
// polynomial in r with FMA. exp8 = inf above 88.72283 and at +inf; denormal results for
// -103.97 < x < -87.34, rounded once; 0 below and at -inf; NaN gives NaN. Denormal inputs are
// used as they are (no flush to zero).
#ifndef PADDLE_CORE_AVX2_HPP_
#define PADDLE_CORE_AVX2_HPP_

#if !defined(__AVX2__) || !defined(__FMA__)
#error "paddle_core/avx2.hpp needs a file compiled with -mavx2 -mfma"
#endif

#include <immintrin.h>

#include <cstdint>

namespace paddle_core::avx2 {

inline __m256 set1(float v) { return _mm256_set1_ps(v); }

// The mask of the first `left` lanes (0 <= left <= 8), for _mm256_maskload_ps and
// _mm256_maskstore_ps on the last n % 8 elements of a loop: nothing past n is touched.
inline __m256i first_lanes(int left) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, n,
                                       // which then sits in the low mantissa bits
constexpr float kMinFast = -87.3365402f;  // just above ln(FLT_MIN): e^x is a normal float
constexpr float kMaxFast = 88.7228317f;   // largest x with a finite e^x

// e^r for x = n ln2 + r, |r| <= ln2 / 2: 1 + r + r^2 P(r), P of degree 4 fitted for relative
// error (4e-9, well under float rounding). `t` receives kShift + n.
inline __m256 exp_reduced(__m256 x, __m256& t) {
  t = _mm256_fmadd_ps(x, set1(1.44269504088896341f), set1(kShift));
  const __m256 n = _mm256_sub_ps(t, set1(kShift));
  // r = x - n ln2, ln2 split in two so that n * 0.693359375 is exact (Cephes).
  __m256 r = _mm256_fnmadd_ps(n, set1(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, set1(-2.12194440e-4f), r);
  __m256 p = set1(1.3814364793e-3f);
  p = _mm256_fmadd_ps(p, r, set1(8.3687817678e-3f));
  p = _mm256_fmadd_ps(p, r, set1(4.1668396443e-2f));
  p = _mm256_fmadd_ps(p, r, set1(1.6666519642e-1f));
  p = _mm256_fmadd_ps(p, r, set1(4.9999994040e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  return _mm256_add_ps(p, set1(1.0f));
}

// 2^k for integer lanes k in [-126, 127], built in the exponent bits.
inline __m256 pow2(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// e^x for any x: overflow to inf, denormal results, 0, NaN.
inline __m256 exp8_exact(__m256 x) {
  // Past these bounds e^x is inf or 0 anyway; clamping keeps n within [-150, 128].
  const __m256 xc = _mm256_min_ps(_mm256_max_ps(x, set1(-104.0f)), set1(89.0f));
  __m256 t;
  const __m256 p = exp_reduced(xc, t);
  const __m256i n = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(set1(kShift)));
  // 2^n as 2^(n/2) * 2^(n - n/2): both factors are normal floats, so the results near
  // overflow and the denormal ones come out of the last multiply, rounded once.
  const __m256i n1 = _mm256_srai_epi32(n, 1);
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, pow2(n1)), pow2(_mm256_sub_epi32(n, n1)));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

// e^x for kMinFast <= x <= kMaxFast (normal results): 2^n added straight into the exponent
// bits of e^r. Other lanes get garbage.
inline __m256 exp8_fast(__m256 x) {
  __m256 t;
  const __m256i p = _mm256_castps_si256(exp_reduced(x, t));
  // (kShift + n) << 23 is n << 23: kShift's own bits shift out.
  return _mm256_castsi256_ps(_mm256_add_epi32(p, _mm256_slli_epi32(_mm256_castps_si256(t), 23)));
}

// e^x: the fast path when every lane allows it (nearly always), else the exact one.
inline __m256 exp8(__m256 x) {
  const __m256 fast = _mm256_and_ps(_mm256_cmp_ps(x, set1(kMinFast), _CMP_GE_OQ),
                                    _mm256_cmp_ps(x, set1(kMaxFast), _CMP_LE_OQ));
  if (__builtin_expect(_mm256_movemask_ps(fast) == 0xFF, 1)) return exp8_fast(x);
  return exp8_exact(x);
}

// out[i] = f(x[i]) for i in [0, n), f taking and returning eight lanes; the last n % 8
// elements through masked loads and stores, so nothing outside [0, n) is read or written. x and
// out may be unaligned, and out may be x.
template <class F> void map(const float* x, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = first_lanes(static_cast<int>(n - i));
    _mm256_maskstore_ps(out + i, mask, f(_mm256_maskload_ps(x + i, mask)));
  }
}

}  // namespace paddle_core::avx2

#endif  // PADDLE_CORE_AVX2_HPP_
