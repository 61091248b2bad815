// float32 exp, tanh and sigmoid with AVX2+FMA intrinsics. This file is compiled with -mavx2
// -mfma; unary_cpu.cpp calls it only on CPUs that have both.
//
// Memory contract: x and out hold n floats (any alignment). The last n % 8 elements go
// through the same vector code with masked loads and stores: nothing outside [0, n) is read
// or written, and an element's result does not depend on where it sits.
//
// Accuracy: max error against a float64 reference, in float32 ulps of the reference. Bounds
// asserted by tests/test_math_unary.py over a few million points; "every float" figures
// measured once over all floats with 1e-9 <= |x| <= 104 (tanh: 1e-6 <= |x| <= 10):
//   exp      1.05 ulp (every float: 1.02)  Cephes reduction, degree-6 polynomial with FMA
//   tanh     1.5 ulp  (every float: 1.33)  odd polynomial below |x| = 0.625, else
//                                          1 - 2 / (e^(2|x|) + 1)
//   sigmoid  2.5 ulp  (every float: 2.40)  from e^-|x|, one division
// Special values: exp(x) = inf above 88.72283 and at +inf; denormal results for
// -103.97 < x < -87.34, rounded once; 0 below and at -inf. sigmoid(x) = e^x / (1 + e^x) for
// x < 0, so it stays accurate down to the denormals. tanh keeps the sign of -0 and saturates
// to +-1. NaN gives NaN. Denormal inputs are used as they are (no flush to zero).
#include <immintrin.h>

#include "unary.hpp"

namespace pom::avx2 {
namespace {

inline __m256 set1(float v) { return _mm256_set1_ps(v); }

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

// 1 / (1 + e^-x). With e = e^-|x| (at most 1, never overflows): 1 / (1 + e) for x >= 0 and
// e / (1 + e) for x < 0, one division either way.
inline __m256 sigmoid8(__m256 x) {
  const __m256 e = exp8(_mm256_or_ps(x, set1(-0.0f)));
  const __m256 num = _mm256_blendv_ps(set1(1.0f), e, x);  // e where x's sign bit is set
  return _mm256_div_ps(num, _mm256_add_ps(set1(1.0f), e));
}

// tanh, odd: computed on t = |x|, then x's sign put back (so tanh(-0) = -0).
inline __m256 tanh8(__m256 x) {
  const __m256 sign = _mm256_and_ps(x, set1(-0.0f));
  const __m256 t = _mm256_andnot_ps(set1(-0.0f), x);
  // t < 0.625: t + t^3 P(t^2) (Cephes tanhf), where 1 - 2 / (...) would cancel.
  const __m256 z = _mm256_mul_ps(t, t);
  __m256 p = set1(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, z, set1(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, z, set1(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, z, set1(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, z, set1(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), t, t);
  // Otherwise 1 - 2 / (e^(2t) + 1), with t clamped to 10 (where this rounds to 1) so that
  // e^(2t) stays on exp8's fast path. NaN becomes 10 here (min returns its second operand
  // then), and the blend below picks `small`, which is NaN.
  const __m256 tc = _mm256_min_ps(t, set1(10.0f));
  const __m256 e = exp8_fast(_mm256_add_ps(tc, tc));
  const __m256 large =
      _mm256_sub_ps(set1(1.0f), _mm256_div_ps(set1(2.0f), _mm256_add_ps(e, set1(1.0f))));
  const __m256 y = _mm256_blendv_ps(large, small, _mm256_cmp_ps(t, set1(0.625f), _CMP_NGE_UQ));
  return _mm256_or_ps(y, sign);
}

// out[i] = f(x[i]), eight at a time; the tail through masked loads and stores.
template <class F> void map(const float* x, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), lane);
    _mm256_maskstore_ps(out + i, mask, f(_mm256_maskload_ps(x + i, mask)));
  }
}

}  // namespace

void exp_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return exp8(v); });
}
void tanh_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return tanh8(v); });
}
void sigmoid_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return sigmoid8(v); });
}

}  // namespace pom::avx2
