// The host copy of an index tensor that a CUDA kernel checks before it reads or writes at its
// values (index_cuda.cu, scatter_cuda.cu): copied on the plan's stream and waited for, so an
// index out of range is a KernelError naming it, as on the CPU, and never a launch.
#ifndef PADDLE_OPS_MATH_HOST_INDEX_CUH_
#define PADDLE_OPS_MATH_HOST_INDEX_CUH_

#include <vector>

#include "cuda.cuh"

namespace pom {

// t's bytes (device memory) in host memory, after the stream's earlier work.
inline std::vector<char> host_copy(const paddle_core::Tensor& t, cudaStream_t stream) {
  std::vector<char> host(static_cast<size_t>(t.nbytes()));
  if (host.empty()) return host;
  cudaError_t error =
      cudaMemcpyAsync(host.data(), t.data<void>(), host.size(), cudaMemcpyDeviceToHost, stream);
  if (error == cudaSuccess) error = cudaStreamSynchronize(stream);
  if (error != cudaSuccess)
    fail("CUDA copy failed: %s (%s)", cudaGetErrorString(error), cudaGetErrorName(error));
  return host;
}

}  // namespace pom

#endif  // PADDLE_OPS_MATH_HOST_INDEX_CUH_
