// layer_norm's float32 rows for AVX2 (norm_avx2.hpp), forward and backward. The same operations
// in the same order as norm_cpu.cpp's normalize_row, x_grad_row and scale and bias sums, eight
// or four lanes at a time, so the same bits: the row sums in double, as eight interleaved
// partial sums (sum_of's), each lane of the two accumulators one of them; then y (or x_grad) in
// float. Both files are compiled with -ffp-contract=off (CMakeLists.txt): a fused multiply-add
// rounds once where two operations round twice.
#include "norm_avx2.hpp"

#include <immintrin.h>

#include <cmath>

namespace paddle_ops_nn::avx2 {
namespace {

// sum_of's order: element i + k of each block of eight into partial k, the rest into partial 0,
// then ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)). lanes(i) gives what is summed of
// elements [i, i + 4) as four doubles, one(i) that of element i.
template <class Lanes, class One>
double sum_of_lanes(int64_t n, const Lanes& lanes, const One& one) {
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    low = _mm256_add_pd(low, lanes(i));
    high = _mm256_add_pd(high, lanes(i + 4));
  }
  alignas(32) double s[8];
  _mm256_store_pd(s, low);
  _mm256_store_pd(s + 4, high);
  for (; i < n; ++i) s[0] += one(i);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// Four floats from p, widened to doubles.
inline __m256d wide4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }

// sum_of over x[0, n), f mapping a float, or four widened to doubles, to what is summed.
template <class F> double sum_of_f32(const float* x, int64_t n, const F& f) {
  return sum_of_lanes(
      n, [&](int64_t i) { return f(wide4(x + i)); }, [&](int64_t i) { return f(x[i]); });
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

void layer_norm_grad_row_f32(const float* x, const float* dy, const float* scale, float* dx,
                             int64_t cols, double m, double inv) {
  // g = dy * scale in double for the sums (norm_cpu.cpp's x_grad_row), in float for dx.
  const auto g4 = [&](int64_t i) {
    return scale ? _mm256_mul_pd(wide4(dy + i), wide4(scale + i)) : wide4(dy + i);
  };
  const auto g1 = [&](int64_t i) { return scale ? double(dy[i]) * scale[i] : double(dy[i]); };
  const __m256d ms = _mm256_set1_pd(m);
  const double sum_g = sum_of_lanes(cols, g4, g1);
  const double sum_gx =
      sum_of_lanes(
          cols, [&](int64_t i) { return _mm256_mul_pd(g4(i), _mm256_sub_pd(wide4(x + i), ms)); },
          [&](int64_t i) { return g1(i) * (x[i] - m); }) *
      inv;
  // LayerNormGradAt<float> of norm.hpp, lane by lane: inv * g + shift + tilt * (x - mean).
  const double d = static_cast<double>(cols);
  const float mean = static_cast<float>(m), fi = static_cast<float>(inv);
  const float shift = static_cast<float>(-inv * sum_g / d);
  const float tilt = static_cast<float>(-inv * inv * sum_gx / d);
  const __m256 means = _mm256_set1_ps(mean), invs = _mm256_set1_ps(fi);
  const __m256 shifts = _mm256_set1_ps(shift), tilts = _mm256_set1_ps(tilt);
  int64_t j = 0;
  for (; j + 8 <= cols; j += 8) {
    __m256 g = _mm256_loadu_ps(dy + j);
    if (scale) g = _mm256_mul_ps(g, _mm256_loadu_ps(scale + j));
    const __m256 centred = _mm256_sub_ps(_mm256_loadu_ps(x + j), means);
    _mm256_storeu_ps(dx + j, _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(invs, g), shifts),
                                           _mm256_mul_ps(tilts, centred)));
  }
  for (; j < cols; ++j) {
    const float g = scale ? dy[j] * scale[j] : dy[j];
    dx[j] = fi * g + shift + tilt * (x[j] - mean);
  }
}

void layer_norm_param_grad_row_f32(const float* x, const float* dy, int64_t lo, int64_t hi,
                                   double m, double inv, double* acc_scale, double* acc_bias) {
  const __m256d ms = _mm256_set1_pd(m), invs = _mm256_set1_pd(inv);
  int64_t j = lo;
  for (; j + 4 <= hi; j += 4) {
    const __m256d g = wide4(dy + j);
    const __m256d xhat = _mm256_mul_pd(_mm256_sub_pd(wide4(x + j), ms), invs);
    double* b = acc_bias + (j - lo);
    double* s = acc_scale + (j - lo);
    _mm256_storeu_pd(b, _mm256_add_pd(_mm256_loadu_pd(b), g));
    _mm256_storeu_pd(s, _mm256_add_pd(_mm256_loadu_pd(s), _mm256_mul_pd(g, xhat)));
  }
  for (; j < hi; ++j) {
    acc_bias[j - lo] += dy[j];
    acc_scale[j - lo] += dy[j] * ((x[j] - m) * inv);
  }
}

}  // namespace paddle_ops_nn::avx2
