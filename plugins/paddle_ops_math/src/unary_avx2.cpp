// float32 exp, tanh, sigmoid, log, sin, cos, erf, floor, ceil, round and sign with AVX2+FMA
// intrinsics.
// This file is compiled with -mavx2 -mfma; unary_cpu.cpp calls it only on CPUs that have both.
//
// Memory contract: x and out hold n floats (any alignment). The last n % 8 elements go
// through the same vector code with masked loads and stores: nothing outside [0, n) is read
// or written, and an element's result does not depend on where it sits.
//
// Accuracy: max error against a float64 reference, in float32 ulps of the reference. Bounds
// asserted by tests/plugins/math/test_unary.py over a few million points; "every float"
// figures measured once over all floats with 1e-9 <= |x| <= 104 (tanh: 1e-6 <= |x| <= 10;
// log, sin, cos: all 2^32 bit patterns, against glibc's float64 log, sin, cos):
//   exp      1.05 ulp (every float: 1.02)  exp8 of the SDK's paddle_core/avx2.hpp
//   tanh     1.5 ulp  (every float: 1.33)  odd polynomial below |x| = 0.625, else
//                                          1 - 2 / (e^(2|x|) + 1)
//   sigmoid  2.5 ulp  (every float: 2.40)  from e^-|x|, one division
//   log      0.75 ulp (every float: 0.743) log8 of the SDK's paddle_core/avx2.hpp
//   sin, cos 0.501 ulp (every float: 0.5004) in float64: reduction by pi (two-part, exact
//                                          where it cancels), degree-11 odd minimax, one
//                                          rounding to float32; |x| >= 2^24 in scalar code
//   erf      1.4 ulp  (measured: 1.36, just above |x| = 1)  odd polynomial below |x| = 1,
//                                          else 1 - 2 Q(|x| sqrt 2) (the SDK's normal_tail8)
//   floor, ceil, round: exact (vroundps); sign: exact
// Special values: exp(x) = inf above 88.72283 and at +inf; denormal results for
// -103.97 < x < -87.34, rounded once; 0 below and at -inf. sigmoid(x) = e^x / (1 + e^x) for
// x < 0, so it stays accurate down to the denormals. tanh keeps the sign of -0 and saturates
// to +-1. log(+-0) = -inf, log(x < 0) = NaN (-inf included), log(inf) = inf, denormal x
// exact like any other. sin and erf keep the sign of -0; sin and cos of +-inf are NaN; erf of
// +-inf is +-1. NaN gives
// NaN. Denormal inputs are used as they are (no flush to zero).
#include <immintrin.h>
#include <paddle_core/avx2.hpp>

#include <cmath>

#include "unary.hpp"

namespace paddle_ops_math::avx2 {
namespace {

using paddle_core::avx2::exp8;
using paddle_core::avx2::exp8_fast;
using paddle_core::avx2::log8;
using paddle_core::avx2::map;
using paddle_core::avx2::normal_tail8;
using paddle_core::avx2::set1;

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

// erf, odd. |x| < 1: x (c0 + z Q(z)), z = x^2, with 2 / sqrt(pi) = c0 split in two floats
// (kErfHi + kErfLo: c0 alone, rounded, is 0.9 ulp off) and Q of degree 5 fitted for relative
// error 1.5e-9 of the result. Beyond: 1 - 2 Q(|x| sqrt 2), the normal tail of the SDK, with x's
// sign; it rounds to +-1 from |x| = 3.92 on. NaN takes the first branch and stays NaN.
constexpr float kErfHi = 1.128379225730896f;
constexpr float kErfLo = -5.8635382771399236e-08f;
constexpr float kErfQ[] = {-0.3761262893676758f,  0.1128360778093338f,
                           -0.02685454674065113f, 0.005189510062336922f,
                           -0.0008019423694349825f, 7.8817545727361e-05f};

inline __m256 erf8(__m256 x) {
  const __m256 t = _mm256_andnot_ps(set1(-0.0f), x);  // computed on |x|, x's sign put back
  const __m256 z = _mm256_mul_ps(t, t);
  __m256 q = set1(kErfQ[5]);
  for (int k = 4; k >= 0; --k) q = _mm256_fmadd_ps(q, z, set1(kErfQ[k]));
  const __m256 small =
      _mm256_fmadd_ps(t, set1(kErfHi), _mm256_mul_ps(t, _mm256_fmadd_ps(z, q, set1(kErfLo))));
  const __m256 tail = normal_tail8(_mm256_mul_ps(t, set1(1.41421356237309505f)));
  const __m256 large = _mm256_fnmadd_ps(set1(2.0f), tail, set1(1.0f));
  const __m256 y = _mm256_blendv_ps(large, small, _mm256_cmp_ps(t, set1(1.0f), _CMP_NGE_UQ));
  return _mm256_or_ps(y, _mm256_and_ps(x, set1(-0.0f)));
}

// -- sin, cos ------------------------------------------------------------------------------
//
// In double precision, four lanes at a time, rounded to float once at the end. sin: n =
// round(x / pi), r = x - n pi; cos: n = round(x / pi - 1/2), r = x - (n + 1/2) pi. Then
// |r| <= pi/2 and the result is +-sin(r). pi is split in two: kPiA has 29 bits, so for
// |x| >= 1 both x and h kPiA are multiples of 2^-29 and x - h kPiA is exact whenever it
// cancels (below 1 there is no cancellation); kPiB, the next 53 bits, costs one rounding
// (FMA), and the part of pi left out (3.3e-26) times |h| < 2^23 is below 2^-62. The floats
// below 2^24 come no closer to a multiple of pi/2 than 4.2e-9 (2^-27.8, at x = 252.9), so r
// keeps a relative error near 2^-52 for all of them. sin(r) = r (1 + r^2 P(r^2)), P the
// minimax fit for relative error (2.4e-11) over |r| <= pi/2. So the float result is within 0.5 ulp
// plus a hair, and exactly x for tiny x (sin(-0) = -0).
// For |x| >= kTrigMax = 2^24 (and inf, NaN) the lane is recomputed in scalar code:
// std::sin/std::cos of the double, rounded to float (glibc: within 0.5 ulp there too).

constexpr float kTrigMax = 0x1p24f;
constexpr double kInvPi = 0x1.45f306dc9c883p-2;
constexpr double kPiA = 0x1.921fb54000000p+1;
constexpr double kPiB = 0x1.10b4611a62633p-29;
constexpr double kRound = 0x1.8p52;  // adding it rounds to an integer, in the low bits

inline __m256d set1d(double v) { return _mm256_set1_pd(v); }

// sin (kCos false) or cos (kCos true) of four doubles holding floats with |x| < 2^24.
template <bool kCos> inline __m256d sincos4(__m256d x) {
  __m256d t;
  __m256d h;  // r = x - h pi
  if constexpr (kCos) {
    t = _mm256_add_pd(_mm256_fmadd_pd(x, set1d(kInvPi), set1d(-0.5)), set1d(kRound));
    h = _mm256_add_pd(_mm256_sub_pd(t, set1d(kRound)), set1d(0.5));
  } else {
    t = _mm256_fmadd_pd(x, set1d(kInvPi), set1d(kRound));
    h = _mm256_sub_pd(t, set1d(kRound));  // +0 for x = -0, so that r keeps x's sign
  }
  __m256d r = _mm256_fnmadd_pd(h, set1d(kPiA), x);
  r = _mm256_fnmadd_pd(h, set1d(kPiB), r);
  const __m256d u = _mm256_mul_pd(r, r);
  __m256d p = set1d(-0x1.9a688551cc938p-26);
  p = _mm256_fmadd_pd(p, u, set1d(0x1.71708009dd4dfp-19));
  p = _mm256_fmadd_pd(p, u, set1d(-0x1.a017d99f7da29p-13));
  p = _mm256_fmadd_pd(p, u, set1d(0x1.11110c49febc4p-7));
  p = _mm256_fmadd_pd(p, u, set1d(-0x1.55555547695ebp-3));
  // r (1 + u P), not r + r u P: that would add -0 and +0 for r = -0, giving +0.
  const __m256d y = _mm256_mul_pd(r, _mm256_fmadd_pd(p, u, set1d(1.0)));
  // sin(x) = (-1)^n sin(r); cos(x) = (-1)^(n+1) sin(r). n's parity is t's lowest bit.
  __m256i sign = _mm256_slli_epi64(_mm256_castpd_si256(t), 63);
  if constexpr (kCos) sign = _mm256_xor_si256(sign, _mm256_castpd_si256(set1d(-0.0)));
  return _mm256_xor_pd(y, _mm256_castsi256_pd(sign));
}

// Lanes set in `bad` (|x| >= 2^24, inf, NaN) recomputed one at a time.
template <bool kCos>
[[gnu::noinline, gnu::cold]] __m256 sincos8_scalar(__m256 x, __m256 y, int bad) {
  alignas(32) float xs[8];
  alignas(32) float ys[8];
  _mm256_store_ps(xs, x);
  _mm256_store_ps(ys, y);
  for (int j = 0; j < 8; ++j) {
    if (!(bad >> j & 1)) continue;
    const double v = xs[j];
    if (!std::isfinite(v)) {
      ys[j] = xs[j] - xs[j];  // NaN, without touching errno
    } else {
      ys[j] = static_cast<float>(kCos ? std::cos(v) : std::sin(v));
    }
  }
  return _mm256_load_ps(ys);
}

template <bool kCos> inline __m256 sincos8(__m256 x) {
  const __m256d lo = sincos4<kCos>(_mm256_cvtps_pd(_mm256_castps256_ps128(x)));
  const __m256d hi = sincos4<kCos>(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
  const __m256 y = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  const __m256 ax = _mm256_andnot_ps(set1(-0.0f), x);
  const int bad = ~_mm256_movemask_ps(_mm256_cmp_ps(ax, set1(kTrigMax), _CMP_LT_OQ)) & 0xFF;
  if (__builtin_expect(bad != 0, 0)) return sincos8_scalar<kCos>(x, y, bad);
  return y;
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
void log_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return log8(v); });
}
void sin_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return sincos8<false>(v); });
}
void cos_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return sincos8<true>(v); });
}
void erf_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) { return erf8(v); });
}
// vroundps: exact, as std::floor, std::ceil and std::nearbyint (halves to even) are; -0, the
// infinities and NaN come out as they go in, and no exception is raised.
void floor_f32(const float* x, float* out, int64_t n) {
  map(x, out, n,
      [](__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); });
}
void ceil_f32(const float* x, float* out, int64_t n) {
  map(x, out, n,
      [](__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); });
}
void round_f32(const float* x, float* out, int64_t n) {
  map(x, out, n,
      [](__m256 v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); });
}
// (x > 0) - (x < 0), as floats; NaN passes through (NumPy's sign), and -0 gives +0.
void sign_f32(const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) {
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    const __m256 pos = _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GT_OQ), one);
    const __m256 neg = _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_LT_OQ), one);
    return _mm256_blendv_ps(_mm256_sub_ps(pos, neg), v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  });
}

}  // namespace paddle_ops_math::avx2
