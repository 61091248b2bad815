// paddle_core/cuda.hpp: what every CUDA kernel needs around its launch, for .cu files (nvcc
// only): the device check of prepare, the grid of a grid-stride loop, the error check after a
// launch, scratch memory for one run; and the few steps of loading a CUDA library at run time
// (cuBLAS, cuDNN).
//
// Kernels enqueue work on the plan's stream (stream_of(ctx)) only, and never synchronize: the
// core does when it needs results. Link cudart statically (CUDA::cudart_static, as the SDK's
// paddle_core_cuda_kernels recipe suggests), so the module imports where there is no driver; a
// kernel then fails at its first launch with CUDA's message.
#ifndef PADDLE_CORE_CUDA_HPP_
#define PADDLE_CORE_CUDA_HPP_

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "paddle_core/kernel.hpp"

namespace paddle_core {

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

// Fail with CUDA's message ("CUDA <what> failed: ...") unless `error` is success.
inline void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess)
    fail("CUDA %s failed: %s (%s)", what, cudaGetErrorString(error), cudaGetErrorName(error));
}

// Enqueue a device-to-device copy (a no-op when empty or in place) or a zero fill on `stream`.
inline void copy_async(void* dst, const void* src, int64_t bytes, cudaStream_t stream) {
  if (bytes == 0 || src == dst) return;
  check_cuda(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                             stream),
             "copy");
}
inline void zero_async(void* dst, int64_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  check_cuda(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), stream), "memset");
}

// Device memory for one run, allocated and freed in the order of the stream (CUDA's stream-
// ordered allocator): the kernels queued between the two use it, and nothing is held between
// runs. `bytes` may be 0 (no allocation).
class Scratch {
 public:
  Scratch(size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0) check_cuda(cudaMallocAsync(&data_, bytes, stream), "scratch allocation");
  }
  ~Scratch() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);  // nothing to report to on failure
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T = void> T* get() const { return static_cast<T*>(data_); }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// The CUDA device current on this thread (the executor's, during prepare and run): what a
// per-device library handle is keyed by.
inline int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "device query");
  return device;
}

// -- libraries loaded at run time -------------------------------------------------------------
// A library the build should not require (cuBLAS, cuDNN) is opened with dlopen when a kernel
// first needs it, its few functions declared in the plugin: the system's copy by soname first,
// then the copy of NVIDIA's wheel installed beside the plugin (site-packages/nvidia/...). Without
// it, the kernels that need it fail in prepare, saying what to install; the others run.

// The site-packages directory of the plugin module holding `address` (any function of the
// plugin, whose module is site-packages/<package>/_C....so), or "" where that is unknown.
inline std::string site_packages_of(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  for (int up = 0; up < 2; ++up) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    path.resize(slash);
  }
  return path;
}

// dlopen `name` (a soname or a path) with `flags`; on failure, add a line saying why (dlerror's
// message, which names the file) to `tried`, for the message that lists what was tried, and
// return nullptr.
inline void* open_library(const std::string& name, int flags, std::string& tried) {
  if (void* library = dlopen(name.c_str(), flags)) return library;
  const char* why = dlerror();
  tried += "\n  " + (why != nullptr ? std::string(why) : name + ": not found");
  return nullptr;
}

// Bind `symbol` of `library` to the function pointer `fn`; when it is absent, add its name to
// the comma-separated list `missing`.
template <class F> bool bind_symbol(void* library, const char* symbol, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(library, symbol));
  if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  return fn != nullptr;
}

}  // namespace paddle_core

#endif  // PADDLE_CORE_CUDA_HPP_
