// What every CUDA kernel of paddle-ops-math needs around its launch: the device check of
// prepare, the grid of a grid-stride loop, and the error check after a launch.
//
// Kernels enqueue work on the plan's stream (ctx.stream()) only, and never synchronize: the
// core does when it needs results. cudart is linked statically, so the module imports where
// there is no driver; a kernel then fails at its first launch with CUDA's message.
#ifndef PADDLE_OPS_MATH_CUDA_CUH_
#define PADDLE_OPS_MATH_CUDA_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include <paddle_core/kernel.hpp>

namespace pom {

namespace pc = paddle_core;
using pc::Context;
using pc::fail;
using pc::Slots;

inline const char* device_type_name(int32_t device_type) {
  return device_type == PC_DEVICE_CPU ? "cpu" : device_type == PC_DEVICE_CUDA ? "cuda" : "?";
}

// Fail unless every tensor of `slots` lives on a CUDA device: handed host memory, a kernel
// would fault on the GPU instead of saying why. The core fills device_type at prepare.
inline void expect_cuda(const Slots& slots, const char* what) {
  const pc_tensors* t = slots.raw();
  for (int32_t k = 0; k < t->num_items; ++k) {
    const int32_t device = t->items[k].device_type;
    if (device != PC_DEVICE_CUDA)
      fail("this CUDA kernel got %s tensor %d on device type %d (%s); it reads and writes CUDA "
           "device memory only",
           what, static_cast<int>(k), static_cast<int>(device), device_type_name(device));
  }
}

// The checks every CUDA kernel's prepare starts with.
inline void expect_cuda(const Slots& in, const Slots& out) {
  expect_cuda(in, "input");
  expect_cuda(out, "output");
}

inline cudaStream_t stream_of(const Context& ctx) {
  return static_cast<cudaStream_t>(ctx.stream());
}

// Launch shape of a grid-stride loop over n > 0 elements: enough blocks to cover n, capped
// (each thread then takes several elements), so any int64 n launches.
struct Grid {
  unsigned blocks, threads;
};
inline Grid grid_for(int64_t n) {
  constexpr int64_t kThreads = 256, kMaxBlocks = 65536;
  return {static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks)),
          static_cast<unsigned>(kThreads)};
}

// The first index and the step of a grid-stride loop, in 64 bits.
__device__ inline int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t index_step() { return static_cast<int64_t>(blockDim.x) * gridDim.x; }

// Fail with CUDA's message if the launch just made (or earlier asynchronous work) failed.
inline void check_launch() {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    fail("CUDA kernel launch failed: %s (%s)", cudaGetErrorString(error), cudaGetErrorName(error));
}

// Dims a kernel walks, innermost first, each with the element strides of S tensors; passed to
// kernels by value. Position i of the walk is at offsets(i) in the S tensors.
template <int S> struct DimWalk {
  static constexpr int kMaxDims = 8;
  int32_t n = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims][S] = {};

  // Append the next dim outward, merged into the last one where every stride composes; fail
  // naming `what` beyond kMaxDims.
  void push(int64_t extent, const int64_t (&strides)[S], const char* what) {
    bool composes = n > 0;
    for (int t = 0; composes && t < S; ++t)
      composes = stride[n - 1][t] * size[n - 1] == strides[t];
    if (composes) {
      size[n - 1] *= extent;
      return;
    }
    if (n == kMaxDims)
      fail("%s needs more than %d dimensions after merging; the CUDA kernel walks at most %d",
           what, kMaxDims, kMaxDims);
    size[n] = extent;
    for (int t = 0; t < S; ++t) stride[n][t] = strides[t];
    ++n;
  }

  // Add the offsets of position i to off.
  __device__ void offsets(int64_t i, int64_t (&off)[S]) const {
    for (int32_t k = 0; k < n; ++k) {
      const int64_t q = i / size[k], j = i - q * size[k];
      for (int t = 0; t < S; ++t) off[t] += j * stride[k][t];
      i = q;
    }
  }
};

// Enqueue a device-to-device copy (a no-op when empty or in place) or a zero fill on
// `stream`, failing with CUDA's message.
inline void copy_async(void* dst, const void* src, int64_t bytes, cudaStream_t stream) {
  if (bytes == 0 || src == dst) return;
  const cudaError_t error = cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes),
                                            cudaMemcpyDeviceToDevice, stream);
  if (error != cudaSuccess)
    fail("CUDA copy failed: %s (%s)", cudaGetErrorString(error), cudaGetErrorName(error));
}
inline void zero_async(void* dst, int64_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  const cudaError_t error = cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), stream);
  if (error != cudaSuccess)
    fail("CUDA memset failed: %s (%s)", cudaGetErrorString(error), cudaGetErrorName(error));
}

}  // namespace pom

#endif  // PADDLE_OPS_MATH_CUDA_CUH_
