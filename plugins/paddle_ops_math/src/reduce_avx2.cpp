// AVX2 builds of the hottest loops of reduce_cpu.cpp and extreme_cpu.cpp, for float32: the full
// blocks of a contiguous fold (fold_run) for sums (and means), maxima and minima, and the fold of
// rows into per-column sums (fold_rows). Kernels call them where use_avx2() said so when they
// were prepared.
//
// Memory contract: as documented on each function; nothing is allocated. The arithmetic is
// exactly that of the generic loops in reduce_cpu.cpp (float lanes of 8 elements, added into
// double accumulators, in the same order), so results do not depend on the CPU.
#include <immintrin.h>

#include <cstdint>

namespace paddle_ops_math {

namespace {
// acc[0, 8) += the 8 float lanes of v, in double.
inline void add_wide(double* acc, __m256 v) {
  _mm256_storeu_pd(acc, _mm256_add_pd(_mm256_loadu_pd(acc), _mm256_cvtps_pd(_mm256_castps256_ps128(v))));
  _mm256_storeu_pd(acc + 4, _mm256_add_pd(_mm256_loadu_pd(acc + 4), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
}
}  // namespace

// Reads x[0, 256 * blocks); updates wide[0, 32). Per block of 256 elements, 32 float lanes
// each add 8 elements (lane k: elements k, k + 32, ...), then are added into wide in double.
// No software prefetch here: with AVX2 the hardware prefetchers keep up (measured faster).
void sum_blocks_f32_avx2(const float* x, int64_t blocks, double* wide) {
  __m256d w[8];
  for (int q = 0; q < 8; ++q) w[q] = _mm256_loadu_pd(wide + 4 * q);
  for (int64_t b = 0; b < blocks; ++b, x += 256) {
    __m256 lane[4];
    for (int q = 0; q < 4; ++q) lane[q] = _mm256_setzero_ps();
    for (int j = 0; j < 256; j += 32)
      for (int q = 0; q < 4; ++q) lane[q] = _mm256_add_ps(lane[q], _mm256_loadu_ps(x + j + 8 * q));
    for (int q = 0; q < 4; ++q) {
      w[2 * q] = _mm256_add_pd(w[2 * q], _mm256_cvtps_pd(_mm256_castps256_ps128(lane[q])));
      w[2 * q + 1] =
          _mm256_add_pd(w[2 * q + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(lane[q], 1)));
    }
  }
  for (int q = 0; q < 8; ++q) _mm256_storeu_pd(wide + 4 * q, w[q]);
}

namespace {
template <bool kMax> bool extreme_blocks(const float* x, int64_t blocks, float* wide) {
  __m256 w[4], nan = _mm256_setzero_ps();
  for (int q = 0; q < 4; ++q) w[q] = _mm256_loadu_ps(wide + 8 * q);
  for (int64_t b = 0; b < blocks * 8; ++b, x += 32) {
    for (int q = 0; q < 4; ++q) {
      const __m256 v = _mm256_loadu_ps(x + 8 * q);
      w[q] = kMax ? _mm256_max_ps(v, w[q]) : _mm256_min_ps(v, w[q]);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  if (_mm256_movemask_ps(nan)) return false;
  for (int q = 0; q < 4; ++q) _mm256_storeu_ps(wide + 8 * q, w[q]);
  return true;
}
}  // namespace

// Reads x[0, 256 * blocks); wide[0, 32) = the running maxima (or minima) of its 32 lanes
// (lane k: elements k, k + 32, ...), unless x holds a NaN: then wide is left alone and the
// result is false, so that the caller's generic loop gives NaN with the payload it always
// gives. Ties keep the earlier value, as the generic step does (vmaxps and vminps return their
// second operand on equality, so -0 and +0 come out the same way).
bool max_blocks_f32(const float* x, int64_t blocks, float* wide) {
  return extreme_blocks<true>(x, blocks, wide);
}
bool min_blocks_f32(const float* x, int64_t blocks, float* wide) {
  return extreme_blocks<false>(x, blocks, wide);
}

// Reads rows[r][0, w) for r < n; acc[c] += ((0 + rows[0][c]) + rows[1][c]) + ..., the sum
// in float, then added in double.
void sum_rows_f32_avx2(const float* const* rows, int n, int64_t w, double* acc) {
  int64_t c = 0;
  for (; c + 8 <= w; c += 8) {
    __m256 lane = _mm256_setzero_ps();
    for (int r = 0; r < n; ++r) lane = _mm256_add_ps(lane, _mm256_loadu_ps(rows[r] + c));
    add_wide(acc + c, lane);
  }
  for (; c < w; ++c) {
    float lane = 0;
    for (int r = 0; r < n; ++r) lane += rows[r][c];
    acc[c] += lane;
  }
}

}  // namespace paddle_ops_math
