// Declarations shared by unary_cpu.cpp and unary_avx2.cpp: the float32 loops compiled for
// AVX2+FMA. Plain declarations only: an inline function here would be compiled with -mavx2
// in one file and without it in the other, and the linker may keep either copy.
#ifndef PADDLE_OPS_MATH_UNARY_HPP_
#define PADDLE_OPS_MATH_UNARY_HPP_

#include <cstdint>

namespace paddle_ops_math::avx2 {

// out[i] = f(x[i]) for i in [0, n); x and out may be unaligned. Call only on CPUs with AVX2
// and FMA (unary_cpu.cpp checks once per prepare).
void exp_f32(const float* x, float* out, int64_t n);
void tanh_f32(const float* x, float* out, int64_t n);
void sigmoid_f32(const float* x, float* out, int64_t n);
void log_f32(const float* x, float* out, int64_t n);
void sin_f32(const float* x, float* out, int64_t n);
void cos_f32(const float* x, float* out, int64_t n);
void erf_f32(const float* x, float* out, int64_t n);
void floor_f32(const float* x, float* out, int64_t n);
void ceil_f32(const float* x, float* out, int64_t n);
void round_f32(const float* x, float* out, int64_t n);
void sign_f32(const float* x, float* out, int64_t n);

}  // namespace paddle_ops_math::avx2

#endif  // PADDLE_OPS_MATH_UNARY_HPP_
