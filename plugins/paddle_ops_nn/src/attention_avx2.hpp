// Declarations shared by the CPU attention kernels and attention_avx2.cpp: the float32 row
// loops of the online softmax, compiled for AVX2+FMA. Plain declarations only: an inline
// function here would be compiled with -mavx2 in one file and without it in the other, and the
// linker may keep either.
#ifndef PADDLE_OPS_NN_ATTENTION_AVX2_HPP_
#define PADDLE_OPS_NN_ATTENTION_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// Each on one contiguous row of n >= 0 float32 scores; call only on CPUs with AVX2 and FMA.
// row *= scale; returns the row's max (-inf for an empty row).
float scale_max_f32(float* row, int64_t n, float scale);
// row = exp(row - m); returns the row's sum (in float).
float exp_sum_f32(float* row, int64_t n, float m);
// row = exp(a * row - b).
void exp_affine_f32(float* row, int64_t n, float a, float b);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_ATTENTION_AVX2_HPP_
