// The slice of cuBLAS's C API (cublas_v2.h) that the matmul kernels call, declared here and
// loaded at run time (cublas_cuda.cu): cuBLAS is no build requirement, and a build with CUDA
// kernels imports and runs its other kernels where cuBLAS is missing. Values are cublas_api.h's
// (stable across CUDA 11-13).
#ifndef PADDLE_OPS_MATH_CUBLAS_HPP_
#define PADDLE_OPS_MATH_CUBLAS_HPP_

#include <cuda_runtime.h>
#include <library_types.h>

namespace paddle_ops_math {

struct cublasContext;
using cublasHandle_t = cublasContext*;
using cublasStatus_t = int;  // CUBLAS_STATUS_SUCCESS = 0
constexpr cublasStatus_t kCublasSuccess = 0;
enum cublasOperation_t : int { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasComputeType_t : int { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70 };
enum cublasGemmAlgo_t : int { CUBLAS_GEMM_DEFAULT = -1 };

// The functions, from libcublas.
struct Cublas {
  cublasStatus_t (*create)(cublasHandle_t*);                   // cublasCreate_v2
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);  // cublasSetStream_v2
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                            const void*, const void*, cudaDataType, int, const void*,
                            cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t);
  cublasStatus_t (*gemm_strided_batched_ex)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
      const void*, cudaDataType, int, long long, const void*, cudaDataType, int, long long,
      const void*, void*, cudaDataType, int, long long, int, cublasComputeType_t,
      cublasGemmAlgo_t);
  const char* (*status_string)(cublasStatus_t);  // cublasGetStatusString: nullptr if absent
};

// Why cuBLAS cannot be used (what was tried, what to install), or nullptr once it is loaded.
// Loads it on the first call, once per process.
const char* cublas_unavailable_reason();

// The loaded functions; fails (paddle_core::fail) with cublas_unavailable_reason() if none.
const Cublas& cublas();

// This thread's handle on the current CUDA device, made on first use and kept for the
// process, with its stream set to `stream`.
cublasHandle_t cublas_handle(cudaStream_t stream);

// Fail naming `what` and cuBLAS's message unless `status` is success.
void check_cublas(cublasStatus_t status, const char* what);

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_CUBLAS_HPP_
