// Declarations shared by the CPU softmax kernels and softmax_avx2.cpp: the float32 lane
// functions compiled for AVX2+FMA. Plain declarations only: an inline function here would be
// compiled with -mavx2 in one file and without it in the other, and the linker may keep either.
#ifndef PADDLE_OPS_NN_SOFTMAX_AVX2_HPP_
#define PADDLE_OPS_NN_SOFTMAX_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// softmax_lane and the log-softmax of softmax.hpp for one contiguous float32 lane of n >= 1
// elements (x and y may be unaligned; y may be x). Call only on CPUs with AVX2 and FMA.
// softmax_f32 returns the lane's max and sets log_sum, as softmax_lane does.
float softmax_f32(const float* x, float* y, int64_t n, double& log_sum);
void log_softmax_f32(const float* x, float* y, int64_t n);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_SOFTMAX_AVX2_HPP_
