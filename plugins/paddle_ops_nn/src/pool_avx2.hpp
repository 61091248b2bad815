// Declarations shared by pool_cpu.cpp and pool_avx2.cpp: the float32 scan compiled for AVX2.
// Plain declarations only (as in softmax_avx2.hpp).
#ifndef PADDLE_OPS_NN_POOL_AVX2_HPP_
#define PADDLE_OPS_NN_POOL_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// Whether any of v[0, n) is a NaN, 16 at a time. Call only on CPUs with AVX2 and FMA.
bool has_nan_f32(const float* v, int64_t n);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_POOL_AVX2_HPP_
