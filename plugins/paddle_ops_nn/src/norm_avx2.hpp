// Declarations shared by norm_cpu.cpp and norm_avx2.cpp: layer_norm's float32 rows, forward
// and backward, compiled for AVX2. Plain declarations only (as in softmax_avx2.hpp).
#ifndef PADDLE_OPS_NN_NORM_AVX2_HPP_
#define PADDLE_OPS_NN_NORM_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// One row of layer_norm (norm_cpu.cpp's normalize_row for float32, with the same bits): the
// mean and variance of x[0, cols) in double, then y = (x - mean) / sqrt(var + epsilon), times
// scale and plus bias where they are not null. Call only on CPUs with AVX2 and FMA.
void layer_norm_row_f32(const float* x, const float* scale, const float* bias, float* y,
                        int64_t cols, double epsilon, float& mean, float& var);

// One row of layer_norm_grad's x_grad (norm_cpu.cpp's x_grad_row for float32, with the same
// bits): dx[0, cols) from x, dy, scale (or null), the row's mean m and 1 / sqrt(var + eps) inv.
void layer_norm_grad_row_f32(const float* x, const float* dy, const float* scale, float* dx,
                             int64_t cols, double m, double inv);

// One row's part of the scale and bias gradients over columns [lo, hi) (norm_cpu.cpp's loop,
// with the same bits): acc_bias[j - lo] += dy[j], acc_scale[j - lo] += dy[j] * (x[j] - m) * inv.
void layer_norm_param_grad_row_f32(const float* x, const float* dy, int64_t lo, int64_t hi,
                                   double m, double inv, double* acc_scale, double* acc_bias);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_NORM_AVX2_HPP_
