// The logistic-based activations' float32 loops with AVX2+FMA: silu, the tanh gelu, and the
// gradients of those and of softplus. This file is compiled with -mavx2 -mfma; the CPU
// kernels use it only on CPUs that have both (common.hpp's use_avx2).
//
// The formulas are activation.hpp's, operation for operation (sigmoid from e = e^-|x|, so
// nothing overflows and sigmoid(-x) keeps its tail); e^x is the SDK's exp8 (1.05 ulps) where
// the portable loops call libm, so results agree with them to a few ulps. Tails go through
// masked loads and stores: nothing outside [0, n) is read or written.
#include <paddle_core/avx2.hpp>

#include "activation_avx2.hpp"

namespace pon::avx2 {
namespace {

using paddle_core::avx2::exp8;
using paddle_core::avx2::first_lanes;
using paddle_core::avx2::set1;

constexpr float kTwoSqrt2OverPi = static_cast<float>(2 * 0.79788456080286535588);
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

template <class F> void map(const float* x, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i mask = first_lanes(static_cast<int>(n - i));
    _mm256_maskstore_ps(out + i, mask, f(_mm256_maskload_ps(x + i, mask)));
  }
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
Map gelu_tanh() { return {&gelu_tanh_loop}; }
GradMap gelu_tanh_grad() { return {&gelu_tanh_grad_loop}; }
GradMap softplus_grad(float beta, float threshold) {
  return {&softplus_grad_loop, beta, threshold};
}

}  // namespace pon::avx2
