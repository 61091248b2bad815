// The float32 cells of lstm and gru for AVX2+FMA (rnn_avx2.hpp), eight units at a time: the
// formulas of rnn.hpp, with sigmoid and tanh from exp8 of a non-positive argument (nothing
// overflows). tanh(x) = (1 - e) / (1 + e) with e = e^(-2|x|) is off by about one float32 ulp
// of 1 near 0, where std::tanh is exact: a few 1e-8 in absolute terms, on values the cell
// then adds to terms of order 1. The last H % 8 units go through masked loads and stores.
#include "rnn_avx2.hpp"

#include <immintrin.h>

#include <paddle_core/avx2.hpp>

namespace paddle_ops_nn::avx2 {
namespace {

using paddle_core::avx2::exp8;
using paddle_core::avx2::first_lanes;
using paddle_core::avx2::set1;

inline __m256 abs8(__m256 x) { return _mm256_andnot_ps(set1(-0.0f), x); }

// 1 / (1 + e^-x), from e = e^-|x|: r = 1 / (1 + e) for x >= 0, e r below.
inline __m256 sigmoid8(__m256 x) {
  const __m256 e = exp8(_mm256_or_ps(x, set1(-0.0f)));
  const __m256 r = _mm256_div_ps(set1(1.0f), _mm256_add_ps(set1(1.0f), e));
  return _mm256_blendv_ps(r, _mm256_mul_ps(e, r), x);  // e r where x's sign bit is set
}

inline __m256 tanh8(__m256 x) {
  const __m256 e = exp8(_mm256_mul_ps(set1(-2.0f), abs8(x)));
  const __m256 t = _mm256_div_ps(_mm256_sub_ps(set1(1.0f), e), _mm256_add_ps(set1(1.0f), e));
  return _mm256_or_ps(t, _mm256_and_ps(x, set1(-0.0f)));  // x's sign
}

inline __m256 one_minus(__m256 v) { return _mm256_sub_ps(set1(1.0f), v); }

// Loads and stores of the block of eight units from j; the last block of a row, masked
// (AMD's masked stores take several times a plain one's time: masking every block had the cells
// cost twice what they do).
template <bool kMasked>
struct Lanes {
  int64_t j;
  __m256i m;
  __m256 operator()(const float* p) const {
    if constexpr (kMasked) return _mm256_maskload_ps(p + j, m);
    return _mm256_loadu_ps(p + j);
  }
  void put(float* p, __m256 v) const {
    if constexpr (kMasked)
      _mm256_maskstore_ps(p + j, m, v);
    else
      _mm256_storeu_ps(p + j, v);
  }
};

// f(lanes) for the eight-unit blocks of [0, n), the last one masked.
template <class F>
void blocks(int64_t n, F&& f) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) f(Lanes<false>{j, __m256i{}});
  if (j < n) f(Lanes<true>{j, first_lanes(static_cast<int>(n - j))});
}

}  // namespace

void lstm_row(int64_t H, float* gates, const float* hproj, const float* b_hh, const float* c_prev,
              float* h, float* c) {
  blocks(H, [&](auto at) {
    auto pre = [&](int64_t k) {
      return _mm256_add_ps(_mm256_add_ps(at(gates + k * H), at(hproj + k * H)), at(b_hh + k * H));
    };
    const __m256 i = sigmoid8(pre(0)), f = sigmoid8(pre(1)), g = tanh8(pre(2)),
                 o = sigmoid8(pre(3));
    at.put(gates, i), at.put(gates + H, f), at.put(gates + 2 * H, g), at.put(gates + 3 * H, o);
    const __m256 cell = _mm256_fmadd_ps(f, at(c_prev), _mm256_mul_ps(i, g));
    at.put(c, cell);
    at.put(h, _mm256_mul_ps(o, tanh8(cell)));
  });
}

void lstm_grad_row(int64_t H, const float* gates, const float* c_prev, const float* c, float* dh,
                   const float* dout, float* dc, float* dgates) {
  blocks(H, [&](auto at) {
    const __m256 i = at(gates), f = at(gates + H), g = at(gates + 2 * H), o = at(gates + 3 * H);
    __m256 grad = at(dh);
    if (dout) grad = _mm256_add_ps(grad, at(dout));
    const __m256 tc = tanh8(at(c));
    const __m256 dcell =
        _mm256_fmadd_ps(_mm256_mul_ps(grad, o), one_minus(_mm256_mul_ps(tc, tc)), at(dc));
    at.put(dgates, _mm256_mul_ps(_mm256_mul_ps(dcell, g), _mm256_mul_ps(i, one_minus(i))));
    at.put(dgates + H,
           _mm256_mul_ps(_mm256_mul_ps(dcell, at(c_prev)), _mm256_mul_ps(f, one_minus(f))));
    at.put(dgates + 2 * H, _mm256_mul_ps(_mm256_mul_ps(dcell, i), one_minus(_mm256_mul_ps(g, g))));
    at.put(dgates + 3 * H, _mm256_mul_ps(_mm256_mul_ps(grad, tc), _mm256_mul_ps(o, one_minus(o))));
    at.put(dc, _mm256_mul_ps(dcell, f));
    at.put(dh, _mm256_setzero_ps());
  });
}

void gru_row(int64_t H, float* gates, const float* hproj, const float* b_hh, const float* h_prev,
             float* h) {
  blocks(H, [&](auto at) {
    auto pre = [&](int64_t k) {
      return _mm256_add_ps(_mm256_add_ps(at(gates + k * H), at(hproj + k * H)), at(b_hh + k * H));
    };
    const __m256 r = sigmoid8(pre(0)), z = sigmoid8(pre(1));
    const __m256 hn = _mm256_add_ps(at(hproj + 2 * H), at(b_hh + 2 * H));
    const __m256 n = tanh8(_mm256_fmadd_ps(r, hn, at(gates + 2 * H)));
    at.put(gates, r), at.put(gates + H, z), at.put(gates + 2 * H, n), at.put(gates + 3 * H, hn);
    at.put(h, _mm256_fmadd_ps(z, at(h_prev), _mm256_mul_ps(one_minus(z), n)));
  });
}

void gru_grad_row(int64_t H, const float* gates, const float* h_prev, float* dh, const float* dout,
                  float* dgx, float* dgh) {
  blocks(H, [&](auto at) {
    const __m256 r = at(gates), z = at(gates + H), n = at(gates + 2 * H), hn = at(gates + 3 * H);
    __m256 grad = at(dh);
    if (dout) grad = _mm256_add_ps(grad, at(dout));
    const __m256 dn =
        _mm256_mul_ps(_mm256_mul_ps(grad, one_minus(z)), one_minus(_mm256_mul_ps(n, n)));
    const __m256 dr = _mm256_mul_ps(_mm256_mul_ps(dn, hn), _mm256_mul_ps(r, one_minus(r)));
    const __m256 dz = _mm256_mul_ps(_mm256_mul_ps(grad, _mm256_sub_ps(at(h_prev), n)),
                                    _mm256_mul_ps(z, one_minus(z)));
    at.put(dgx, dr), at.put(dgh, dr);
    at.put(dgx + H, dz), at.put(dgh + H, dz);
    at.put(dgx + 2 * H, dn);
    at.put(dgh + 2 * H, _mm256_mul_ps(dn, r));
    at.put(dh, _mm256_mul_ps(grad, z));
  });
}

}  // namespace paddle_ops_nn::avx2
