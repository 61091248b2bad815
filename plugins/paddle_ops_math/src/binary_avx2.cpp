// float32 mod with AVX2+FMA: Mod::float_mod (functors.hpp) eight lanes at a time, in double.
// This file is compiled with -mavx2 -mfma; binary_cpu.cpp calls it only where use_avx2().
//
// Memory contract: a and b hold n floats at strides sa and sb (0: one broadcast value), out n
// floats; any alignment. The results are float_mod's bit for bit: lanes it declines (b = 0, an
// infinite or NaN operand, a quotient of 2^29 or more) and the last n % 8 elements go through
// `scalar`, the caller's Mod, compiled for every CPU (not here, where it would be built for
// AVX2 and could stand in for the portable copy at link time).
#include <immintrin.h>

#include <cstdint>

namespace paddle_ops_math::avx2 {

namespace {

// The floor modulo of the lanes of a and b (float_mod's arithmetic), and in *ok a bit per lane
// whose result it is (float_mod's conditions).
inline __m256 mod8(__m256 a, __m256 b, int* ok) {
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  __m128 half[2];
  int bits = 0;
  for (int h = 0; h < 2; ++h) {
    const __m128 a4 = h ? _mm256_extractf128_ps(a, 1) : _mm256_castps256_ps128(a);
    const __m128 b4 = h ? _mm256_extractf128_ps(b, 1) : _mm256_castps256_ps128(b);
    const __m256d x = _mm256_cvtps_pd(a4), y = _mm256_cvtps_pd(b4);
    const __m256d q = _mm256_div_pd(x, y);
    const __m256d n = _mm256_round_pd(q, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    half[h] = _mm256_cvtpd_ps(_mm256_fnmadd_pd(n, y, x));  // x - n y: exact, so fmod(a, b)
    const __m256d small = _mm256_cmp_pd(_mm256_and_pd(q, abs_mask),
                                        _mm256_set1_pd(536870912.0), _CMP_LT_OQ);
    const __m256d finite_b = _mm256_cmp_pd(_mm256_and_pd(y, abs_mask),
                                           _mm256_set1_pd(3.4028234663852886e38), _CMP_LE_OQ);
    const __m256d nonzero_b = _mm256_cmp_pd(y, _mm256_setzero_pd(), _CMP_NEQ_OQ);
    bits |= _mm256_movemask_pd(_mm256_and_pd(small, _mm256_and_pd(finite_b, nonzero_b)))
            << (4 * h);
  }
  *ok = bits;
  const __m256 f = _mm256_set_m128(half[1], half[0]);
  // A nonzero f of the other sign than b gains b; the result, zero included, has b's sign.
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 differ = _mm256_castsi256_ps(
      _mm256_srai_epi32(_mm256_castps_si256(_mm256_xor_ps(f, b)), 31));
  const __m256 nonzero = _mm256_cmp_ps(f, _mm256_setzero_ps(), _CMP_NEQ_OQ);
  const __m256 r = _mm256_add_ps(f, _mm256_and_ps(_mm256_and_ps(differ, nonzero), b));
  return _mm256_or_ps(_mm256_andnot_ps(sign, r), _mm256_and_ps(sign, b));
}

}  // namespace

void mod_f32(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n,
             float (*scalar)(float, float)) {
  int64_t i = 0;
  if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
    for (; i + 8 <= n; i += 8) {
      const __m256 va = sa ? _mm256_loadu_ps(a + i) : _mm256_set1_ps(a[0]);
      const __m256 vb = sb ? _mm256_loadu_ps(b + i) : _mm256_set1_ps(b[0]);
      int ok;
      _mm256_storeu_ps(out + i, mod8(va, vb, &ok));
      if (ok != 0xFF) {  // rare: b = 0, inf, NaN, huge quotients
        for (int k = 0; k < 8; ++k)
          if (!(ok >> k & 1)) out[i + k] = scalar(a[(i + k) * sa], b[(i + k) * sb]);
      }
    }
  }
  for (; i < n; ++i) out[i] = scalar(a[i * sa], b[i * sb]);
}

}  // namespace paddle_ops_math::avx2
