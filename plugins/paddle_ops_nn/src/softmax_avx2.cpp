// The float32 softmax lanes with AVX2+FMA, eight elements at a time. This file is compiled with
// -mavx2 -mfma; the CPU kernels call it only on CPUs that have both (use_avx2 of
// common.hpp), for lanes along the last axis.
//
// The arithmetic is that of softmax.hpp's portable lane functions: the lane's max subtracted
// first, the exponentials summed in double, softmax = e / sum and log-softmax =
// (x - max) - log(sum). What differs: e^x is the SDK's exp8 (1.05 ulp), the sum's order, and
// softmax scales by 1 / sum rounded to float; so softmax is within 3 ulp of the portable
// result. Special values are the same: a NaN anywhere in a lane, or a +inf, or a lane of
// -inf, makes the whole lane NaN. Tails go through masked loads and stores: nothing outside
// [0, n) is read or written.
#include <paddle_core/avx2.hpp>

#include <cmath>

#include "softmax_avx2.hpp"

namespace paddle_ops_nn::avx2 {
namespace {

using paddle_core::avx2::exp8;
using paddle_core::avx2::first_lanes;
using paddle_core::avx2::map;
using paddle_core::avx2::set1;

// The mask of a loop's last n - i (< 8) elements, and those elements (the other lanes: fill).
inline __m256i tail_mask(int64_t n, int64_t i) { return first_lanes(static_cast<int>(n - i)); }
inline __m256 load_tail(const float* x, __m256i mask, __m256 fill) {
  return _mm256_blendv_ps(fill, _mm256_maskload_ps(x, mask), _mm256_castsi256_ps(mask));
}

// The largest of x[0, n), n >= 1 (with a NaN in x: some element or NaN; either makes the sum
// of exponentials NaN).
float lane_max(const float* x, int64_t n) {
  const __m256 lowest = set1(-INFINITY);
  __m256 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // four chains: max's latency, not its throughput, bounds one
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + i + 8));
    m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + i + 16));
    m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + i + 24));
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + i));
  if (i < n) m1 = _mm256_max_ps(m1, load_tail(x + i, tail_mask(n, i), lowest));
  const __m256 m = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

// sum += the eight lanes of e, in double.
inline void add_wide(__m256d& s0, __m256d& s1, __m256 e) {
  s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
  s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

// The sum of e^(x - m) over x[0, n), in double; each e^(x - m) also stored in y when Store.
template <bool Store> double exp_sum(const float* x, float* y, int64_t n, float m) {
  const __m256 vm = set1(m);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    if constexpr (Store) _mm256_storeu_ps(y + i, e);
    add_wide(s0, s1, e);
  }
  if (i < n) {
    const __m256i mask = tail_mask(n, i);
    const __m256 e = _mm256_and_ps(exp8(_mm256_sub_ps(load_tail(x + i, mask, vm), vm)),
                                   _mm256_castsi256_ps(mask));  // other lanes: 0
    if constexpr (Store) _mm256_maskstore_ps(y + i, mask, e);
    add_wide(s0, s1, e);
  }
  const __m256d s = _mm256_add_pd(s0, s1);
  const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

}  // namespace

float softmax_f32(const float* x, float* y, int64_t n, double& log_sum) {
  const float m = lane_max(x, n);
  const double sum = exp_sum<true>(x, y, n, m);
  const __m256 inv = set1(static_cast<float>(1 / sum));
  map(y, y, n, [inv](__m256 e) { return _mm256_mul_ps(e, inv); });
  log_sum = std::log(sum);
  return m;
}

void log_softmax_f32(const float* x, float* y, int64_t n) {
  const float m = lane_max(x, n);
  const __m256 vm = set1(m), ls = set1(static_cast<float>(std::log(exp_sum<false>(x, y, n, m))));
  map(x, y, n, [vm, ls](__m256 v) { return _mm256_sub_ps(_mm256_sub_ps(v, vm), ls); });
}

}  // namespace paddle_ops_nn::avx2
