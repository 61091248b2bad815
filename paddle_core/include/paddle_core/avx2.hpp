// paddle_core/avx2.hpp: float32 vector math for kernels, eight lanes at a time with AVX2+FMA.
//
// Include it only from files compiled with -mavx2 -mfma (name them *_avx2.cpp, say), and call
// what they export only on CPUs that have both (__builtin_cpu_supports("avx2") and ("fma")):
// portable wheels never build for -march=native. Every function is inline, and every file
// that includes this header is an AVX2 one, so no copy built for a lesser CPU can stand in.
//
// exp8(x): e^x with a max error of 1.05 float32 ulps against a float64 reference (1.02 over
// every float with 1e-9 <= |x| <= 104): Cephes' reduction x = n ln2 + r, then a degree-6
// polynomial in r with FMA. exp8 = inf above 88.72283 and at +inf; denormal results for
// -103.97 < x < -87.34, rounded once; 0 below and at -inf; NaN gives NaN. Denormal inputs are
// used as they are (no flush to zero).
// log8(x): log x with a max error of 0.75 float32 ulps (0.743 over all 2^32 bit patterns,
// against glibc's float64 log): log(+-0) = -inf, log(x < 0) = NaN (-inf included),
// log(inf) = inf, NaN gives NaN, denormal x exact like any other.
// normal_tail8(t): Q(t) = P(Z > t) = erfc(t / sqrt 2) / 2 for t >= 0, as gauss8(t) = e^(-t^2/2)
// times mills8(t), the Mills ratio over sqrt(2 pi) (one polynomial, relative error 1e-8): a few
// ulps, into the denormals (the exact gelu's and erf's tails).
// map(x, out, n, f): a loop of f over n floats; first_lanes(k): the mask of its last, partial
// eight.
// philox8(key0, key1, c): Philox4x32-10 (paddle_core/random.hpp) of eight counters at once,
// bit for bit; random_bits8(...) the eight blocks of a Random's consecutive indices.
#ifndef PADDLE_CORE_AVX2_HPP_
#define PADDLE_CORE_AVX2_HPP_

#if !defined(__AVX2__) || !defined(__FMA__)
#error "paddle_core/avx2.hpp needs a file compiled with -mavx2 -mfma"
#endif

#include <immintrin.h>

#include <cmath>
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

// -- log ---------------------------------------------------------------------------------
//
// x = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f), z = s^2:
// log(1 + f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(z)), R(z) = z (a1 + a2 z + a3 z^2), the
// minimax fit of (2 atanh(s) - 2s) / s for relative error over |s| <= 0.1716 (8e-10 of the
// result). f and k ln2 are added last, with the rounding error of k ln2_hi + f kept
// (Fast2Sum): the only roundings of the result's size are the final ones.

constexpr float kSqrtHalf = 0x1.6a09e6p-1f;  // sqrt(1/2), rounded down
constexpr float kLn2Hi = 0.693359375f;  // 9 bits: k kLn2Hi is exact for any float's k
constexpr float kLn2Lo = -2.12194440e-4f;  // ln 2 - kLn2Hi

// log x for normal positive finite x, whose exponent is taken to be kbias more than it is
// (kbias: 0, or -23 for denormals scaled by 2^23 first).
inline __m256 log8_normal(__m256 x, __m256 kbias) {
  const __m256i half = _mm256_castps_si256(set1(kSqrtHalf));
  const __m256i ix = _mm256_sub_epi32(_mm256_castps_si256(x), half);
  // ix >> 23 is k with m in [sqrt(1/2), sqrt(2)); m keeps x's mantissa bits.
  const __m256 k = _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_srai_epi32(ix, 23)), kbias);
  const __m256 m = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_and_si256(ix, _mm256_set1_epi32(0x007fffff)), half));
  const __m256 f = _mm256_sub_ps(m, set1(1.0f));
  const __m256 s = _mm256_div_ps(f, _mm256_add_ps(f, set1(2.0f)));
  const __m256 z = _mm256_mul_ps(s, s);
  __m256 r = set1(0.29871755838394165f);
  r = _mm256_fmadd_ps(r, z, set1(0.3997754156589508f));
  r = _mm256_fmadd_ps(r, z, set1(0.6666677594184875f));
  r = _mm256_mul_ps(r, z);
  const __m256 hf = _mm256_mul_ps(f, set1(0.5f));  // exact
  const __m256 hfsq = _mm256_mul_ps(hf, f);
  // k ln2_hi + f exactly as sum + err (Fast2Sum: |k ln2_hi| >= |f| unless k = 0).
  const __m256 hi = _mm256_mul_ps(k, set1(kLn2Hi));
  const __m256 sum = _mm256_add_ps(hi, f);
  const __m256 err = _mm256_sub_ps(f, _mm256_sub_ps(sum, hi));
  // The small terms, smallest first: s (f^2/2 + R) + k ln2_lo + err - f^2/2.
  __m256 c = _mm256_fmadd_ps(k, set1(kLn2Lo), _mm256_mul_ps(s, _mm256_add_ps(hfsq, r)));
  c = _mm256_fnmadd_ps(hf, f, _mm256_add_ps(c, err));
  return _mm256_add_ps(sum, c);
}

// log x for any x: denormals scaled by 2^23 first; log 0 = -inf, log of x < 0 = NaN,
// log inf = inf, NaN stays NaN.
inline __m256 log8_exact(__m256 x) {
  const __m256 denormal = _mm256_cmp_ps(x, set1(0x1p-126f), _CMP_LT_OQ);
  const __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, set1(0x1p23f)), denormal);
  const __m256 kbias = _mm256_and_ps(denormal, set1(-23.0f));
  __m256 y = log8_normal(xs, kbias);
  y = _mm256_blendv_ps(y, set1(-INFINITY), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
  y = _mm256_blendv_ps(y, set1(NAN), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
  // +inf and NaN: x itself
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, set1(INFINITY), _CMP_NLT_UQ));
}

// log x: the plain path when every lane is a normal positive float (nearly always).
inline __m256 log8(__m256 x) {
  const __m256 normal = _mm256_and_ps(_mm256_cmp_ps(x, set1(0x1p-126f), _CMP_GE_OQ),
                                      _mm256_cmp_ps(x, set1(0x1.fffffep127f), _CMP_LE_OQ));
  if (__builtin_expect(_mm256_movemask_ps(normal) == 0xFF, 1)) {
    return log8_normal(x, _mm256_setzero_ps());
  }
  return log8_exact(x);
}

// -- the normal distribution's tail --------------------------------------------------------
//
// Q(t) = P(Z > t) = erfc(t / sqrt 2) / 2 = gauss8(t) * mills8(t), for t >= 0.

// m(t) = Q(t) e^(t^2/2), the Mills ratio over sqrt(2 pi): 0.5 at 0, then falling like 0.4 / t.
// One formula for all t in [0, kTailEnd], without branches: with s = 1 / (1 + t/4) and
// v = 1 - s = (t/4) s, m = s P(v - kCenter), P of degree 9 fitted (weighted least squares on
// Chebyshev nodes, coefficients rounded to float one at a time, the rest refitted) for relative
// error below 1e-8, a sixth of a float32 ulp. v is formed as (t/4) s, not 1 - s, so that it
// keeps its accuracy near t = 0; s keeps its own where t is large. Past 14.5, Q is below half
// the smallest float32 denormal.
constexpr float kCenter = 0.3918918967247009f;
constexpr float kMills[] = {0.22671030461788177f,  -0.4019900858402252f,   0.525698721408844f,
                            -0.48291659355163574f, 0.26222315430641174f,  -0.0125202015042305f,
                            -0.08866129070520401f, 0.03319702297449112f,  0.027890056371688843f,
                            -0.01686934567987919f};
constexpr float kTailEnd = 14.5f;

// m(t) for t in [0, kTailEnd] (or NaN: NaN).
inline __m256 mills8(__m256 t) {
  const __m256 quarter = _mm256_mul_ps(t, set1(0.25f));  // exact
  const __m256 s = _mm256_div_ps(set1(1.0f), _mm256_add_ps(set1(1.0f), quarter));
  const __m256 u = _mm256_fmsub_ps(quarter, s, set1(kCenter));
  __m256 p = set1(kMills[9]);
  for (int k = 8; k >= 0; --k) p = _mm256_fmadd_ps(p, u, set1(kMills[k]));
  return _mm256_mul_ps(s, p);
}

// e^(-t^2/2): t t rounds to p with error e (exact, by FMA), and e^(-t^2/2) = e^(-p/2) (1 - e/2)
// to far below float rounding, so the square's rounding (up to 100 ulps of e^(-p/2) at t = 14)
// is not amplified.
// (exp8's fast path in [0, 13.2], then its exact one: denormals, then 0.)
inline __m256 gauss8(__m256 t) {
  const __m256 p = _mm256_mul_ps(t, t);
  const __m256 e = _mm256_fmsub_ps(t, t, p);
  const __m256 g = exp8(_mm256_mul_ps(p, set1(-0.5f)));
  return _mm256_fnmadd_ps(_mm256_mul_ps(g, e), set1(0.5f), g);
}

// Q(t) for t >= 0, to relative accuracy (a few ulps) into the denormals; t is clamped to
// kTailEnd, beyond which Q is below half the smallest denormal.
inline __m256 normal_tail8(__m256 t) {
  const __m256 tc = _mm256_min_ps(t, set1(kTailEnd));
  return _mm256_mul_ps(gauss8(tc), mills8(tc));
}

// -- Philox ------------------------------------------------------------------------------

// The high and low 32 bits of m times each 32-bit lane of a (Philox's mulhilo).
inline __m256i mulhilo8(uint32_t m, __m256i a, __m256i& lo) {
  const __m256i mv = _mm256_set1_epi32(static_cast<int>(m));
  const __m256i even = _mm256_mul_epu32(a, mv);  // lanes 0, 2, 4, 6: 64-bit products
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), mv);  // lanes 1, 3, 5, 7
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// Philox4x32-10 with key (key0, key1) of eight counters: lane j of c[0..3] holds counter j's
// four words, and is replaced by its block's (random.hpp's Philox::block, eight at a time).
inline void philox8(uint32_t key0, uint32_t key1, __m256i c[4]) {
  __m256i k0 = _mm256_set1_epi32(static_cast<int>(key0));
  __m256i k1 = _mm256_set1_epi32(static_cast<int>(key1));
  for (int round = 0; round < 10; ++round) {
    __m256i lo0, lo1;
    const __m256i hi0 = mulhilo8(0xD2511F53u, c[0], lo0);
    const __m256i hi1 = mulhilo8(0xCD9E8D57u, c[2], lo1);
    c[0] = _mm256_xor_si256(_mm256_xor_si256(hi1, c[1]), k0);
    c[2] = _mm256_xor_si256(_mm256_xor_si256(hi0, c[3]), k1);
    c[1] = lo1;
    c[3] = lo0;
    k0 = _mm256_add_epi32(k0, _mm256_set1_epi32(static_cast<int>(0x9E3779B9u)));
    k1 = _mm256_add_epi32(k1, _mm256_set1_epi32(static_cast<int>(0xBB67AE85u)));
  }
}

// The words of blocks first .. first + 7 of a Random with key (key0, key1) and run counter
// `run` (Random::philox().key and Random::run(), passed as numbers): w[k] lane j is word k of
// block first + j, as Random::bits(first + j) gives it.
inline void random_bits8(uint32_t key0, uint32_t key1, uint64_t run, uint64_t first,
                         __m256i w[4]) {
  const __m256i lanes = _mm256_setr_epi64x(0, 1, 2, 3);
  __m256i lo = _mm256_add_epi64(_mm256_set1_epi64x(static_cast<int64_t>(first)), lanes);
  __m256i hi = _mm256_add_epi64(lo, _mm256_set1_epi64x(4));  // indices first + 4 .. first + 7
  // 64-bit indices -> their low and high words, lanes in order.
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  lo = _mm256_permutevar8x32_epi32(lo, order);  // low words of 0..3, then high words
  hi = _mm256_permutevar8x32_epi32(hi, order);
  w[0] = _mm256_permute2x128_si256(lo, hi, 0x20);
  w[1] = _mm256_permute2x128_si256(lo, hi, 0x31);
  w[2] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(run)));
  w[3] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(run >> 32)));
  philox8(key0, key1, w);
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
