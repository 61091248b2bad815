// The formulas of example_cos, written once: the CPU kernels and the CUDA kernels call them
// (PADDLE_CORE_HD is __host__ __device__ under nvcc, nothing for the host compiler).
#pragma once
#include <cmath>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_example {

// out = scale * cos(x)
template <class T> PADDLE_CORE_HD T cos(T x, T scale) { return scale * std::cos(x); }

// x_grad = -scale * sin(x) * out_grad
template <class T> PADDLE_CORE_HD T cos_grad(T x, T out_grad, T scale) {
  return -scale * std::sin(x) * out_grad;
}

}  // namespace paddle_ops_example
