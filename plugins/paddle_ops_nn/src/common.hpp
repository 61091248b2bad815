// What the kernels of paddle-ops-nn share. Dtype dispatch, the common checks
// (paddle_core/kernel.hpp) and parallel loops (paddle_core/parallel.hpp, CPU files only) are
// the SDK's, used here unqualified. Kernel files include this header only. Formulas shared by
// the CPU and CUDA kernels are PADDLE_CORE_HD: __host__ __device__ under nvcc.
#ifndef PADDLE_OPS_NN_COMMON_HPP_
#define PADDLE_OPS_NN_COMMON_HPP_

#include <cstdint>

#include <paddle_core/kernel.hpp>
#if !defined(__CUDACC__)
#include <paddle_core/parallel.hpp>
#endif

namespace paddle_ops_nn {

// a * b rounded on its own, never fused with a following add: nvcc contracts a * b + c into
// an fma by default and the host build does not, so a formula that must give the CPU's bits on
// the GPU (a random draw) multiplies with this.
template <class T> PADDLE_CORE_HD T mul_rounded(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4) return __fmul_rn(a, b);
  else return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

namespace pc = paddle_core;
using pc::Attrs;
using pc::Context;
using pc::dispatch;
using pc::expect_same_dtype;
using pc::expect_same_shape;
using pc::fail;
using pc::Floats;
#if !defined(__CUDACC__)
using pc::kGrain;
using pc::parallel_chunks;
using pc::parallel_for;
using pc::parallel_rows;
#endif
using pc::Slots;
using pc::Tensor;
using pc::Types;

#if !defined(__CUDACC__)
// Whether the CPU kernels run their float32 loops compiled for AVX2+FMA (src/*_avx2.cpp): the
// CPU has both, and PADDLE_OPS_NN_DISABLE_AVX2 is unset or 0 (read once; avx2_cpu.cpp).
bool use_avx2();
#endif

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_COMMON_HPP_
