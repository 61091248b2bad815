// paddle_core/cublas.hpp: cuBLAS for the CUDA kernels of any plugin (.cu files, nvcc only),
// loaded at run time with cuda.hpp's steps, not linked: cuBLAS is no build requirement, and a
// module with CUDA kernels imports and runs its other kernels where cuBLAS is missing; those
// that multiply matrices call cublas() in prepare and fail there, saying what to install.
//
// Loaded once per plugin module: the functions holding state are hidden
// (PADDLE_CORE_MODULE_LOCAL), so each module has its own, where default visibility would share
// one across modules, of whichever SDK version loaded first. The system's libcublas.so.13 or .12
// by soname first, else the one of the nvidia-cublas wheel installed beside the plugin. Handles
// are per (device, thread): a cuBLAS handle must not be used by two threads at once. The slice
// of cuBLAS's C API (cublas_v2.h) declared here is what the kernels call; values are
// cublas_api.h's (stable across CUDA 11-13).
#ifndef PADDLE_CORE_CUBLAS_HPP_
#define PADDLE_CORE_CUBLAS_HPP_

#include <library_types.h>

#include <map>
#include <string>

#include "paddle_core/cuda.hpp"

namespace paddle_core {

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

// A function whose static state belongs to the plugin module that compiled it.
#define PADDLE_CORE_MODULE_LOCAL __attribute__((visibility("hidden")))

namespace cublas_loading {

struct Loaded {
  Cublas api{};
  std::string error;  // empty once loaded
};

// An address in the plugin module, whose site-packages holds the wheel's copy.
PADDLE_CORE_MODULE_LOCAL inline void anchor() {}

inline void* open_cublas(std::string& tried) {
  // The wheels: nvidia-cublas (CUDA 13) puts it in nvidia/cu13/lib, nvidia-cublas-cu12 in
  // nvidia/cublas/lib. libcublasLt beside it is loaded first, by path, as libcublas needs it.
  std::string candidates[] = {"libcublas.so.13", "libcublas.so.12", "", "", ""};
  const std::string site = site_packages_of(reinterpret_cast<const void*>(&anchor));
  if (!site.empty()) {
    candidates[2] = site + "/nvidia/cu13/lib/libcublas.so.13";
    candidates[3] = site + "/nvidia/cublas/lib/libcublas.so.13";
    candidates[4] = site + "/nvidia/cublas/lib/libcublas.so.12";
  }
  for (const std::string& name : candidates) {
    if (name.empty()) continue;
    const size_t slash = name.rfind('/');
    if (slash != std::string::npos) {  // .../libcublas.so.N -> .../libcublasLt.so.N
      const std::string lt = name.substr(0, slash) + "/libcublasLt" + name.substr(slash + 10);
      dlopen(lt.c_str(), RTLD_NOW | RTLD_GLOBAL);  // absent: dlopen of libcublas says so
    }
    if (void* lib = open_library(name, RTLD_NOW | RTLD_LOCAL, tried)) return lib;
  }
  return nullptr;
}

inline Loaded load() {
  Loaded l;
  std::string tried;
  void* lib = open_cublas(tried);
  if (lib == nullptr) {
    l.error = "cuBLAS (libcublas) could not be loaded; the CUDA kernels that multiply matrices "
              "(matmul, lstm, gru) need it. Install it with `pip install nvidia-cublas` (or a "
              "plugin's [cuda] extra: `pip install \"paddle-ops-math[cuda]\"`), or put the CUDA "
              "toolkit's libcublas.so on the library path. Tried:" +
              tried;
    return l;
  }
  std::string missing;
  bind_symbol(lib, "cublasCreate_v2", l.api.create, missing);
  bind_symbol(lib, "cublasSetStream_v2", l.api.set_stream, missing);
  bind_symbol(lib, "cublasGemmEx", l.api.gemm_ex, missing);
  bind_symbol(lib, "cublasGemmStridedBatchedEx", l.api.gemm_strided_batched_ex, missing);
  std::string optional;
  bind_symbol(lib, "cublasGetStatusString", l.api.status_string, optional);
  if (!missing.empty())
    l.error = "the libcublas loaded lacks " + missing + ": install a newer one (`pip install "
              "nvidia-cublas`)";
  return l;
}

PADDLE_CORE_MODULE_LOCAL inline const Loaded& loaded() {
  static const Loaded l = load();  // thread-safe: C++ initialises a static once
  return l;
}

}  // namespace cublas_loading

// Why cuBLAS cannot be used (what was tried, what to install), or nullptr once it is loaded.
// Loads it on the first call, once per process.
inline const char* cublas_unavailable_reason() {
  const cublas_loading::Loaded& l = cublas_loading::loaded();
  return l.error.empty() ? nullptr : l.error.c_str();
}

// The loaded functions; fails (paddle_core::fail) with cublas_unavailable_reason() if none.
inline const Cublas& cublas() {
  const cublas_loading::Loaded& l = cublas_loading::loaded();
  if (!l.error.empty()) fail("%s", l.error.c_str());
  return l.api;
}

// Fail naming `what` and cuBLAS's message unless `status` is success.
inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status == kCublasSuccess) return;
  const Cublas& api = cublas();
  const char* text = api.status_string != nullptr ? api.status_string(status) : "";
  fail("cuBLAS %s failed: status %d %s", what, status, text);
}

// This thread's handle on the current CUDA device, made on first use and kept for the
// process, with its stream set to `stream`.
PADDLE_CORE_MODULE_LOCAL inline cublasHandle_t cublas_handle(cudaStream_t stream) {
  // Never destroyed: destroying at thread or process exit may run after the CUDA driver has
  // shut down. One per device the thread has used.
  thread_local std::map<int, cublasHandle_t> handles;
  cublasHandle_t& handle = handles[current_device()];
  if (handle == nullptr) check_cublas(cublas().create(&handle), "handle creation");
  check_cublas(cublas().set_stream(handle, stream), "set stream");
  return handle;
}

}  // namespace paddle_core

#endif  // PADDLE_CORE_CUBLAS_HPP_
