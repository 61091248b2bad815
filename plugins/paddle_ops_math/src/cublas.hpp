// cuBLAS for the matmul kernels: the SDK's (paddle_core/cublas.hpp: loaded at run time, not
// linked), named in this plugin's namespace.
#ifndef PADDLE_OPS_MATH_CUBLAS_HPP_
#define PADDLE_OPS_MATH_CUBLAS_HPP_

#include <paddle_core/cublas.hpp>

namespace paddle_ops_math {

using paddle_core::check_cublas;
using paddle_core::Cublas;
using paddle_core::cublas;
using paddle_core::CUBLAS_COMPUTE_32F;
using paddle_core::CUBLAS_COMPUTE_64F;
using paddle_core::CUBLAS_GEMM_DEFAULT;
using paddle_core::CUBLAS_OP_N;
using paddle_core::CUBLAS_OP_T;
using paddle_core::cublas_handle;
using paddle_core::cublasComputeType_t;
using paddle_core::cublasHandle_t;
using paddle_core::cublasOperation_t;

// Why cuBLAS cannot be used, or nullptr (cublas_cuda.cu: for module.cpp, which nvcc does not
// compile).
const char* cublas_unavailable_reason();

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_CUBLAS_HPP_
