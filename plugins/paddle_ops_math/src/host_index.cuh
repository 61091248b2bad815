// What the CUDA kernels that read by index share (index_cuda.cu, scatter_cuda.cu): the host
// copy of an index tensor they check before they read or write at its values (copied on the
// plan's stream and waited for, so an index out of range is a KernelError naming it, as on the
// CPU, and never a launch), and the pick of a raw element type for kernels that only move
// elements of any dtype.
#ifndef PADDLE_OPS_MATH_HOST_INDEX_CUH_
#define PADDLE_OPS_MATH_HOST_INDEX_CUH_

#include <cstdint>
#include <vector>

#include "cuda.cuh"

namespace paddle_ops_math {

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

// pick(U{}) for the unsigned type U of t's element size (1, 2, 4 or 8 bytes): a kernel that
// only moves elements has one instance per size, not per dtype. `op` names it in the error.
template <class Pick>
auto by_element_size(const paddle_core::Tensor& t, const char* op, Pick pick) {
  switch (t.element_size()) {
    case 1: return pick(uint8_t{});
    case 2: return pick(uint16_t{});
    case 4: return pick(uint32_t{});
    case 8: return pick(uint64_t{});
    default: fail("%s has no CUDA kernel for %s", op, paddle_core::dtype_name(t.dtype()));
  }
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_HOST_INDEX_CUH_
