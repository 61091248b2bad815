// Declarations shared by norm_cpu.cpp and norm_avx2.cpp: layer_norm's float32 row compiled for
// AVX2. Plain declarations only (as in softmax_avx2.hpp).
#ifndef PADDLE_OPS_NN_NORM_AVX2_HPP_
#define PADDLE_OPS_NN_NORM_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// One row of layer_norm (norm_cpu.cpp's normalize_row for float32, with the same bits): the
// mean and variance of x[0, cols) in double, then y = (x - mean) / sqrt(var + epsilon), times
// scale and plus bias where they are not null. Call only on CPUs with AVX2 and FMA.
void layer_norm_row_f32(const float* x, const float* scale, const float* bias, float* y,
                        int64_t cols, double epsilon, float& mean, float& var);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_NORM_AVX2_HPP_
