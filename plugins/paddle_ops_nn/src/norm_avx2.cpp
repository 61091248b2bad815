// layer_norm's float32 row for AVX2 (norm_avx2.hpp). The same operations in the same order as
// norm_cpu.cpp's normalize_row, eight or four lanes at a time, so the same bits: the sums in
// double, as eight interleaved partial sums (sum_of's), each lane of the two accumulators one
// of them; then y in float. Both files are compiled with -ffp-contract=off (CMakeLists.txt): a
// fused multiply-add rounds once where two operations round twice.
#include "norm_avx2.hpp"

#include <immintrin.h>

#include <cmath>

namespace paddle_ops_nn::avx2 {
namespace {

// sum_of's order: element i + k of each block of eight into partial k, the rest into partial 0,
// then ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)). f maps a float, or four widened to
// doubles, to what is summed.
template <class F> double sum_of_f32(const float* x, int64_t n, const F& f) {
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    low = _mm256_add_pd(low, f(_mm256_cvtps_pd(_mm_loadu_ps(x + i))));
    high = _mm256_add_pd(high, f(_mm256_cvtps_pd(_mm_loadu_ps(x + i + 4))));
  }
  alignas(32) double s[8];
  _mm256_store_pd(s, low);
  _mm256_store_pd(s + 4, high);
  for (; i < n; ++i) s[0] += f(x[i]);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

struct Widened {
  __m256d operator()(__m256d v) const { return v; }
  double operator()(float x) const { return x; }
};

struct SquaredDeviation {
  double m;
  __m256d operator()(__m256d v) const {
    const __m256d dev = _mm256_sub_pd(v, _mm256_set1_pd(m));
    return _mm256_mul_pd(dev, dev);
  }
  double operator()(float x) const { return (x - m) * (x - m); }
};

}  // namespace

void layer_norm_row_f32(const float* x, const float* scale, const float* bias, float* y,
                        int64_t cols, double epsilon, float& mean, float& var) {
  const double d = static_cast<double>(cols);
  const double m = sum_of_f32(x, cols, Widened{}) / d;
  const double v = sum_of_f32(x, cols, SquaredDeviation{m}) / d;
  mean = static_cast<float>(m);
  var = static_cast<float>(v);
  // Normalize<float>(m, inv_std_of(v, epsilon), 0) of norm.hpp, lane by lane.
  const float hi = static_cast<float>(m), lo = static_cast<float>(m - hi);
  const float factor = static_cast<float>(1 / std::sqrt(v + epsilon));
  const __m256 his = _mm256_set1_ps(hi), los = _mm256_set1_ps(lo), fs = _mm256_set1_ps(factor);
  const __m256 zero = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 h = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), his), los);
    h = _mm256_add_ps(_mm256_mul_ps(h, fs), zero);  // (+ 0: -0 becomes 0, as in Normalize)
    if (scale) h = _mm256_mul_ps(h, _mm256_loadu_ps(scale + j));
    if (bias) h = _mm256_add_ps(h, _mm256_loadu_ps(bias + j));
    _mm256_storeu_ps(y + j, h);
  }
  for (; j < cols; ++j) {
    float h = ((x[j] - hi) - lo) * factor + 0.f;
    if (scale) h *= scale[j];
    if (bias) h += bias[j];
    y[j] = h;
  }
}

}  // namespace paddle_ops_nn::avx2
