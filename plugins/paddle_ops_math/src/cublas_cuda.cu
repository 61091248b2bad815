// Loading cuBLAS at run time (see cublas.hpp), once per process: the system's libcublas by
// soname, else the one of the nvidia-cublas wheel installed beside paddle_ops_math. Handles
// are per (device, thread): a cuBLAS handle must not be used by two threads at once.
#include <dlfcn.h>

#include <map>
#include <string>

#include <paddle_core/cuda.hpp>

#include "cublas.hpp"

namespace paddle_ops_math {
namespace {

struct Loaded {
  Cublas api{};
  std::string error;  // empty once loaded
};

void* open_cublas(std::string& tried) {
  // The wheels: nvidia-cublas (CUDA 13) puts it in nvidia/cu13/lib, nvidia-cublas-cu12 in
  // nvidia/cublas/lib. libcublasLt beside it is loaded first, by path, as libcublas needs it.
  std::string candidates[] = {"libcublas.so.13", "libcublas.so.12", "", "", ""};
  const std::string site =
      paddle_core::site_packages_of(reinterpret_cast<const void*>(&cublas_unavailable_reason));
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
    if (void* lib = paddle_core::open_library(name, RTLD_NOW | RTLD_LOCAL, tried)) return lib;
  }
  return nullptr;
}

Loaded load() {
  Loaded l;
  std::string tried;
  void* lib = open_cublas(tried);
  if (lib == nullptr) {
    l.error = "cuBLAS (libcublas) could not be loaded; the CUDA matmul kernels need it. Install "
              "it with `pip install nvidia-cublas` (or `pip install \"paddle-ops-math[cuda]\"`), "
              "or put the CUDA toolkit's libcublas.so on the library path. Tried:" +
              tried;
    return l;
  }
  using paddle_core::bind_symbol;
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

const Loaded& loaded() {
  static const Loaded l = load();  // thread-safe: C++ initialises a static once
  return l;
}

}  // namespace

const char* cublas_unavailable_reason() {
  const Loaded& l = loaded();
  return l.error.empty() ? nullptr : l.error.c_str();
}

const Cublas& cublas() {
  const Loaded& l = loaded();
  if (!l.error.empty()) paddle_core::fail("%s", l.error.c_str());
  return l.api;
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == kCublasSuccess) return;
  const Cublas& api = cublas();
  const char* text = api.status_string != nullptr ? api.status_string(status) : "";
  paddle_core::fail("cuBLAS %s failed: status %d %s", what, status, text);
}

cublasHandle_t cublas_handle(cudaStream_t stream) {
  // Never destroyed: destroying at thread or process exit may run after the CUDA driver has
  // shut down. One per device the thread has used.
  thread_local std::map<int, cublasHandle_t> handles;
  cublasHandle_t& handle = handles[paddle_core::current_device()];
  if (handle == nullptr) check_cublas(cublas().create(&handle), "handle creation");
  check_cublas(cublas().set_stream(handle, stream), "set stream");
  return handle;
}

}  // namespace paddle_ops_math
