// The float32 loops of silu, gelu (exact and tanh), elu and softplus, and of the gradients of
// silu, gelu and softplus, with AVX2+FMA. This file is compiled with -mavx2 -mfma; the CPU
// kernels use it only on CPUs that have both (common.hpp's use_avx2).
//
// silu, the tanh gelu and those gradients follow activation.hpp operation for operation
// (sigmoid from e = e^-|x|, so nothing overflows and sigmoid(-x) keeps its tail), with the
// SDK's exp8 (1.05 ulps) where the portable loops call libm's exp. Where they call erfc, expm1
// and log1p, this file has its own: the exact gelu's Phi from the normal tail
// Q(t) = erfc(t / sqrt 2) / 2 = e^(-t^2/2) m(t) (normal_cdf8, with the SDK's gauss8 and
// mills8), expm1_negative8 and log1p_unit8. Results agree with the portable loops to a few ulps
// times the formulas' condition number. Tails go through masked loads and stores: nothing
// outside [0, n) is read or written.
#include <paddle_core/avx2.hpp>

#include <cstdint>

#include "activation_avx2.hpp"

namespace paddle_ops_nn::avx2 {
namespace {

using paddle_core::avx2::exp8;
using paddle_core::avx2::first_lanes;
using paddle_core::avx2::gauss8;
using paddle_core::avx2::kTailEnd;
using paddle_core::avx2::log8;
using paddle_core::avx2::map;
using paddle_core::avx2::mills8;
using paddle_core::avx2::set1;

constexpr float kTwoSqrt2OverPi = static_cast<float>(2 * 0.79788456080286535588);
constexpr float kInvSqrt2Pi = static_cast<float>(0.39894228040143267794);
constexpr float kGeluCubic = static_cast<float>(0.044715);
constexpr float kThreeGeluCubic = static_cast<float>(3 * 0.044715);

// sigmoid(x) into p and sigmoid(-x) into q: r = 1 / (1 + e), then e r and r, by x's sign.
inline void logistic8(__m256 x, __m256& p, __m256& q) {
  const __m256 e = exp8(_mm256_or_ps(x, set1(-0.0f)));  // e^-|x|
  const __m256 r = _mm256_div_ps(set1(1.0f), _mm256_add_ps(set1(1.0f), e));
  const __m256 er = _mm256_mul_ps(e, r);
  p = _mm256_blendv_ps(r, er, x);  // er where x's sign bit is set
  q = _mm256_blendv_ps(er, r, x);
}

// The tanh gelu's 2u = 2 sqrt(2/pi) x (1 + 0.044715 x^2), in activation.hpp's order.
inline __m256 gelu_2u(__m256 x) {
  const __m256 cubic =
      _mm256_add_ps(set1(1.0f), _mm256_mul_ps(_mm256_mul_ps(set1(kGeluCubic), x), x));
  return _mm256_mul_ps(_mm256_mul_ps(set1(kTwoSqrt2OverPi), x), cubic);
}

// Phi(x), the normal distribution function: Q(|x|) for x < 0 (relative accuracy into the
// denormals), 1 - Q(x) otherwise; and the density phi(x) = e^(-x^2/2) / sqrt(2 pi) in pdf. NaN
// gives a finite Phi (|x| clamps to kTailEnd): the callers multiply by x, which keeps the NaN.
inline __m256 normal_cdf8(__m256 x, __m256& pdf) {
  const __m256 t = _mm256_min_ps(_mm256_andnot_ps(set1(-0.0f), x), set1(kTailEnd));
  const __m256 g = gauss8(t);
  const __m256 q = _mm256_mul_ps(g, mills8(t));
  pdf = _mm256_mul_ps(g, set1(kInvSqrt2Pi));
  return _mm256_blendv_ps(_mm256_sub_ps(set1(1.0f), q), q, x);  // q where x's sign bit is set
}

// e^x - 1 for x <= 0 (elu's negative side): x P(x) above -0.5, P expm1's Taylor series over x
// to degree 8 (its remainder: 1.1e-9 of the result), so nothing cancels near 0; e^x - 1 below
// (at least 0.39 in size: the subtraction costs at most a few ulps).
inline __m256 expm1_negative8(__m256 x) {
  constexpr float kTaylor[] = {1.0f,       1.0f / 2,    1.0f / 6,     1.0f / 24,     1.0f / 120,
                               1.0f / 720, 1.0f / 5040, 1.0f / 40320, 1.0f / 362880};
  __m256 p = set1(kTaylor[8]);
  for (int k = 7; k >= 0; --k) p = _mm256_fmadd_ps(p, x, set1(kTaylor[k]));
  const __m256 near = _mm256_mul_ps(x, p);
  const __m256 far = _mm256_sub_ps(exp8(x), set1(1.0f));
  return _mm256_blendv_ps(far, near, _mm256_cmp_ps(x, set1(-0.5f), _CMP_GT_OQ));
}

// log(1 + u) for u in [0, 1]: with w = 1 + u rounded, log(w) u / (w - 1) puts back what the
// rounding of w lost (Goldberg); u itself where w rounds to 1.
inline __m256 log1p_unit8(__m256 u) {
  const __m256 w = _mm256_add_ps(set1(1.0f), u);
  const __m256 d = _mm256_sub_ps(w, set1(1.0f));
  const __m256 y = _mm256_mul_ps(log8(w), _mm256_div_ps(u, d));
  return _mm256_blendv_ps(y, u, _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_EQ_OQ));
}

template <class F> void map2(const float* v, const float* g, float* dx, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dx + i, f(_mm256_loadu_ps(v + i), _mm256_loadu_ps(g + i)));
  if (i < n) {
    const __m256i mask = first_lanes(static_cast<int>(n - i));
    const __m256 vt = _mm256_maskload_ps(v + i, mask), gt = _mm256_maskload_ps(g + i, mask);
    _mm256_maskstore_ps(dx + i, mask, f(vt, gt));
  }
}

// silu: x sigmoid(x); its gradient g sigmoid(x) (1 + x sigmoid(-x)).
void silu_loop(const Map&, const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) {
    __m256 p, q;
    logistic8(v, p, q);
    return _mm256_mul_ps(v, p);
  });
}
void silu_grad_loop(const GradMap&, const float* x, const float* g, float* dx, int64_t n) {
  map2(x, g, dx, n, [](__m256 v, __m256 gv) {
    __m256 p, q;
    logistic8(v, p, q);
    return _mm256_mul_ps(_mm256_mul_ps(gv, p), _mm256_add_ps(set1(1.0f), _mm256_mul_ps(v, q)));
  });
}

// tanh gelu: x sigmoid(2u); its gradient g (s + x s (1 - s) d(2u)/dx), or g s where s (1 - s)
// is 0 (there d(2u)/dx may be inf).
void gelu_tanh_loop(const Map&, const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) {
    __m256 p, q;
    logistic8(gelu_2u(v), p, q);
    return _mm256_mul_ps(v, p);
  });
}
void gelu_tanh_grad_loop(const GradMap&, const float* x, const float* g, float* dx, int64_t n) {
  map2(x, g, dx, n, [](__m256 v, __m256 gv) {
    __m256 p, q;
    logistic8(gelu_2u(v), p, q);
    const __m256 pq = _mm256_mul_ps(p, q);
    const __m256 du = _mm256_mul_ps(
        set1(kTwoSqrt2OverPi),
        _mm256_add_ps(set1(1.0f), _mm256_mul_ps(_mm256_mul_ps(set1(kThreeGeluCubic), v), v)));
    const __m256 full = _mm256_add_ps(p, _mm256_mul_ps(_mm256_mul_ps(v, pq), du));
    const __m256 zero = _mm256_cmp_ps(pq, _mm256_setzero_ps(), _CMP_EQ_OQ);
    return _mm256_mul_ps(gv, _mm256_blendv_ps(full, p, zero));
  });
}

// exact gelu: x Phi(x); its gradient g (Phi(x) + x phi(x)).
void gelu_loop(const Map&, const float* x, float* out, int64_t n) {
  map(x, out, n, [](__m256 v) {
    __m256 pdf;
    return _mm256_mul_ps(v, normal_cdf8(v, pdf));
  });
}
void gelu_grad_loop(const GradMap&, const float* x, const float* g, float* dx, int64_t n) {
  map2(x, g, dx, n, [](__m256 v, __m256 gv) {
    __m256 pdf;
    const __m256 cdf = normal_cdf8(v, pdf);
    return _mm256_mul_ps(gv, _mm256_fmadd_ps(v, pdf, cdf));
  });
}

// elu: x above 0, alpha (e^x - 1) at and below.
void elu_loop(const Map& m, const float* x, float* out, int64_t n) {
  const __m256 alpha = set1(m.a);
  map(x, out, n, [alpha](__m256 v) {
    // min returns its second operand for -0 (kept, as expm1(-0) = -0) and NaN (kept).
    const __m256 below = _mm256_min_ps(_mm256_setzero_ps(), v);
    const __m256 negative = _mm256_mul_ps(alpha, expm1_negative8(below));
    return _mm256_blendv_ps(negative, v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
  });
}

// softplus: max(x, 0) + log1p(e^-|beta x|) / beta, or x where beta x > threshold.
void softplus_loop(const Map& m, const float* x, float* out, int64_t n) {
  const __m256 beta = set1(m.a), threshold = set1(m.b);
  map(x, out, n, [beta, threshold](__m256 v) {
    const __m256 z = _mm256_mul_ps(beta, v);
    const __m256 e = exp8(_mm256_or_ps(z, set1(-0.0f)));  // e^-|z|
    const __m256 relu = _mm256_and_ps(v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
    const __m256 y = _mm256_add_ps(relu, _mm256_div_ps(log1p_unit8(e), beta));
    return _mm256_blendv_ps(y, v, _mm256_cmp_ps(z, threshold, _CMP_GT_OQ));
  });
}

// softplus's gradient: g sigmoid(beta x), or g where beta x > threshold.
void softplus_grad_loop(const GradMap& m, const float* x, const float* g, float* dx, int64_t n) {
  const __m256 beta = set1(m.a), threshold = set1(m.b);
  map2(x, g, dx, n, [beta, threshold](__m256 v, __m256 gv) {
    const __m256 z = _mm256_mul_ps(beta, v);
    __m256 p, q;
    logistic8(z, p, q);
    const __m256 above = _mm256_cmp_ps(z, threshold, _CMP_GT_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(gv, p), gv, above);
  });
}

}  // namespace

Map silu() { return {&silu_loop}; }
GradMap silu_grad() { return {&silu_grad_loop}; }
Map gelu() { return {&gelu_loop}; }
GradMap gelu_grad() { return {&gelu_grad_loop}; }
Map gelu_tanh() { return {&gelu_tanh_loop}; }
GradMap gelu_tanh_grad() { return {&gelu_tanh_grad_loop}; }
Map elu(float alpha) { return {&elu_loop, alpha}; }
Map softplus(float beta, float threshold) { return {&softplus_loop, beta, threshold}; }
GradMap softplus_grad(float beta, float threshold) {
  return {&softplus_grad_loop, beta, threshold};
}

}  // namespace paddle_ops_nn::avx2
