// Declarations shared by activation_cpu.cpp and activation_avx2.cpp: float32 activation loops
// compiled for AVX2+FMA. Plain declarations only (as in
// softmax_avx2.hpp). Each computes activation.hpp's formula for i in [0, n), eight at a time;
// call only on CPUs with AVX2 and FMA.
#ifndef PADDLE_OPS_NN_ACTIVATION_AVX2_HPP_
#define PADDLE_OPS_NN_ACTIVATION_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

struct Map {  // out[i] = f(x[i]); out may be x
  void (*loop)(const Map&, const float* x, float* out, int64_t n) = nullptr;
  float a = 0, b = 0;  // the op's attributes the loop needs
};
struct GradMap {  // dx[i] = f(v[i], g[i]); dx may be v or g
  void (*loop)(const GradMap&, const float* v, const float* g, float* dx, int64_t n) = nullptr;
  float a = 0, b = 0;
};

Map silu();
GradMap silu_grad();
Map gelu();
GradMap gelu_grad();
Map gelu_tanh();
GradMap gelu_tanh_grad();
Map elu(float alpha);
Map softplus(float beta, float threshold);
GradMap softplus_grad(float beta, float threshold);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_ACTIVATION_AVX2_HPP_
