// The random ops' normal numbers with AVX2+FMA (random_avx2.cpp): declarations only, as the
// file they come from is compiled for AVX2 (an inline function here would be too).
#ifndef PADDLE_OPS_NN_RANDOM_AVX2_HPP_
#define PADDLE_OPS_NN_RANDOM_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// z[i] = sqrt(-2 ln u1[i]) cos(2 pi u2[i]) for i in [0, n), n a multiple of 4: Box-Muller as
// Random::normal computes it, for u1 in (0, 1] and u2 in [0, 1) with at most 32 significant
// bits (what Random gives). Within 4 ulps of the exact value (1e-15 absolute where |z| <
// 1e-3), more accurate than libm's element-by-element version, whose cosine of a rounded
// 2 pi u errs by up to 3e-15 near its zeros. Call only on CPUs with AVX2+FMA.
void box_muller(const double* u1, const double* u2, double* z, int64_t n);

// u1[j], u2[j] = Random::normal_uniforms(first + j) for j in [0, n), n a multiple of 8, from
// the Random's key words and run counter (Random::philox().key, Random::run()): Philox eight
// blocks at a time, the same bits.
void normal_uniforms(uint32_t key0, uint32_t key1, uint64_t run, uint64_t first, int64_t n,
                     double* u1, double* u2);

// u[4 j + k] = the float uniform number k of block first + j (what Random::uniforms<float>
// gives), for j in [0, blocks), blocks a multiple of 8; key and run as above.
void float_uniforms(uint32_t key0, uint32_t key1, uint64_t run, uint64_t first, int64_t blocks,
                    float* u);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_RANDOM_AVX2_HPP_
