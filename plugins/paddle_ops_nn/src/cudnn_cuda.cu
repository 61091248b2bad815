// cuDNN, loaded at run time, and the cuDNN convolution engine (conv_cuda.cuh).
//
// cuDNN is no build requirement: the slice of its C API the engine calls (the legacy
// convolution API of cudnn_ops.h and cudnn_cnn.h, stable through cuDNN 9; the values are its
// headers') is declared here and bound with dlsym when a convolution kernel is first prepared,
// once per process: the system's libcudnn.so.9 by soname, else the one of the nvidia-cudnn-cu13
// (or -cu12) wheel installed beside paddle_ops_nn. cuDNN 9's libcudnn dispatches to
// sub-libraries it loads by soname on first use, and ends the process when one it needs cannot
// be loaded: so the sub-libraries beside the libcudnn opened are loaded first, by path (the
// dispatcher then finds them already loaded, and never mixes in another copy), and cuDNN counts
// as missing unless those the convolutions need load. Handles are per (device, thread).
//
// The engine chooses each pass's algorithm once, in prepare, from cuDNN's heuristics: the first
// that is deterministic, needs at most kWorkspaceLimit of workspace and uses no tensor cores
// (float32 is computed in float32: FMA math, no TF32). The workspace is allocated for each call,
// in stream order (the SDK's Scratch).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>

#include "conv_cuda.cuh"

namespace paddle_ops_nn {

const char* cudnn_unavailable_reason();

namespace {

// -- the API slice -----------------------------------------------------------------------------

struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
using cudnnHandle_t = cudnnContext*;
using cudnnTensorDescriptor_t = cudnnTensorStruct*;
using cudnnFilterDescriptor_t = cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = cudnnConvolutionStruct*;
using cudnnStatus_t = int;  // CUDNN_STATUS_SUCCESS = 0

constexpr cudnnStatus_t kSuccess = 0;
enum : int { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_DOUBLE = 1 };              // cudnnDataType_t
enum : int { CUDNN_TENSOR_NCHW = 0 };                                    // cudnnTensorFormat_t
enum : int { CUDNN_CROSS_CORRELATION = 1 };                              // cudnnConvolutionMode_t
enum : int { CUDNN_DEFAULT_MATH = 0, CUDNN_TENSOR_OP_MATH = 1,           // cudnnMathType_t
             CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2, CUDNN_FMA_MATH = 3 };
enum : int { CUDNN_DETERMINISTIC = 1 };                                  // cudnnDeterminism_t

// cudnnConvolutionFwdAlgoPerf_t, ...BwdDataAlgoPerf_t and ...BwdFilterAlgoPerf_t: one layout.
struct AlgoPerf {
  int algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};
static_assert(sizeof(AlgoPerf) == 48, "cuDNN's cudnnConvolution*AlgoPerf_t is 48 bytes");

using Tensor_ = cudnnTensorDescriptor_t;
using Filter_ = cudnnFilterDescriptor_t;
using Conv_ = cudnnConvolutionDescriptor_t;

struct Cudnn {
  size_t (*get_version)();
  const char* (*error_string)(cudnnStatus_t);
  cudnnStatus_t (*create)(cudnnHandle_t*);
  cudnnStatus_t (*set_stream)(cudnnHandle_t, cudaStream_t);
  cudnnStatus_t (*create_tensor)(Tensor_*);
  cudnnStatus_t (*set_tensor_4d)(Tensor_, int format, int type, int n, int c, int h, int w);
  cudnnStatus_t (*destroy_tensor)(Tensor_);
  cudnnStatus_t (*create_filter)(Filter_*);
  cudnnStatus_t (*set_filter_4d)(Filter_, int type, int format, int k, int c, int h, int w);
  cudnnStatus_t (*destroy_filter)(Filter_);
  cudnnStatus_t (*create_conv)(Conv_*);
  cudnnStatus_t (*set_conv_2d)(Conv_, int pad_h, int pad_w, int stride_h, int stride_w,
                               int dilation_h, int dilation_w, int mode, int compute_type);
  cudnnStatus_t (*set_conv_groups)(Conv_, int groups);
  cudnnStatus_t (*set_conv_math)(Conv_, int math_type);
  cudnnStatus_t (*destroy_conv)(Conv_);
  cudnnStatus_t (*forward_algorithms)(cudnnHandle_t, Tensor_ x, Filter_ w, Conv_, Tensor_ y,
                                      int requested, int* returned, AlgoPerf*);
  cudnnStatus_t (*backward_data_algorithms)(cudnnHandle_t, Filter_ w, Tensor_ dy, Conv_,
                                            Tensor_ dx, int requested, int* returned, AlgoPerf*);
  cudnnStatus_t (*backward_filter_algorithms)(cudnnHandle_t, Tensor_ x, Tensor_ dy, Conv_,
                                              Filter_ dw, int requested, int* returned,
                                              AlgoPerf*);
  cudnnStatus_t (*forward_workspace)(cudnnHandle_t, Tensor_ x, Filter_ w, Conv_, Tensor_ y,
                                     int algo, size_t* bytes);
  cudnnStatus_t (*backward_data_workspace)(cudnnHandle_t, Filter_ w, Tensor_ dy, Conv_,
                                           Tensor_ dx, int algo, size_t* bytes);
  cudnnStatus_t (*backward_filter_workspace)(cudnnHandle_t, Tensor_ x, Tensor_ dy, Conv_,
                                             Filter_ dw, int algo, size_t* bytes);
  cudnnStatus_t (*forward)(cudnnHandle_t, const void* alpha, Tensor_, const void* x, Filter_,
                           const void* w, Conv_, int algo, void* workspace, size_t bytes,
                           const void* beta, Tensor_, void* y);
  cudnnStatus_t (*backward_data)(cudnnHandle_t, const void* alpha, Filter_, const void* w,
                                 Tensor_, const void* dy, Conv_, int algo, void* workspace,
                                 size_t bytes, const void* beta, Tensor_, void* dx);
  cudnnStatus_t (*backward_filter)(cudnnHandle_t, const void* alpha, Tensor_, const void* x,
                                   Tensor_, const void* dy, Conv_, int algo, void* workspace,
                                   size_t bytes, const void* beta, Filter_, void* dw);
};

// -- loading -----------------------------------------------------------------------------------

struct Loaded {
  Cudnn api{};
  std::string error;  // empty once loaded
};

constexpr const char* kInstall =
    "Install it with `pip install nvidia-cudnn-cu13` (`nvidia-cudnn-cu12` for a CUDA 12 driver; "
    "or `pip install \"paddle-ops-nn[cuda]\"`), or put cuDNN 9's libcudnn.so.9 on the library "
    "path";

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// libcudnn.so.9, the system's first, else a wheel's; the cuBLAS of a wheel is loaded first, as
// cuDNN's engines need it and nothing else would find it there.
void* open_cudnn(std::string& tried) {
  const std::string site =
      paddle_core::site_packages_of(reinterpret_cast<const void*>(&cudnn_unavailable_reason));
  std::string candidates[] = {"libcudnn.so.9", "", ""};
  if (!site.empty()) {
    candidates[1] = site + "/nvidia/cudnn/lib/libcudnn.so.9";
    candidates[2] = site + "/nvidia/cu13/lib/libcudnn.so.9";
    for (const char* lt : {"/nvidia/cu13/lib/libcublasLt.so.13", "/nvidia/cublas/lib/libcublasLt.so.12"})
      if (exists(site + lt)) dlopen((site + lt).c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
  for (const std::string& name : candidates)
    if (!name.empty())
      if (void* lib = paddle_core::open_library(name, RTLD_NOW | RTLD_GLOBAL, tried)) return lib;
  return nullptr;
}

// Load the sub-libraries beside the dispatcher (whose cudnnGetVersion is `symbol`) by path;
// returns what is wrong, or "" when those the convolutions need are loaded.
std::string load_sublibraries(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) == 0 || info.dli_fname == nullptr)
    return "the directory of the libcudnn loaded is unknown";
  std::string dir = info.dli_fname;
  dir.resize(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  if (dir.empty()) return "the directory of the libcudnn loaded is unknown";
  // Dependencies first. The engines and the rest are optional: cuDNN reports a missing one as a
  // status (CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED) where it needs it.
  struct Sub {
    const char* name;
    bool needed;
  };
  const Sub subs[] = {{"graph", true},       {"engines_precompiled", false},
                      {"engines_runtime_compiled", false}, {"heuristic", false},
                      {"engines_tensor_ir", false}, {"ext", false}, {"ops", true},
                      {"cnn", true}, {"adv", false}};
  for (const Sub& sub : subs) {
    const std::string path = dir + "/libcudnn_" + sub.name + ".so.9";
    if (!exists(path)) {
      if (sub.needed) return "cuDNN's " + path + " is missing";
      continue;
    }
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr && sub.needed) {
      const char* why = dlerror();
      return "cuDNN's " + path + " could not be loaded: " + (why != nullptr ? why : "?");
    }
  }
  return "";
}

Loaded load() {
  Loaded l;
  std::string tried;
  void* lib = open_cudnn(tried);
  if (lib == nullptr) {
    l.error = std::string("cuDNN (libcudnn.so.9) could not be loaded; the CUDA convolution "
                          "kernels compute without it, more slowly. ") +
              kInstall + ". Tried:" + tried;
    return l;
  }
  using paddle_core::bind_symbol;
  Cudnn& a = l.api;
  std::string missing;
  bind_symbol(lib, "cudnnGetVersion", a.get_version, missing);
  bind_symbol(lib, "cudnnGetErrorString", a.error_string, missing);
  bind_symbol(lib, "cudnnCreate", a.create, missing);
  bind_symbol(lib, "cudnnSetStream", a.set_stream, missing);
  bind_symbol(lib, "cudnnCreateTensorDescriptor", a.create_tensor, missing);
  bind_symbol(lib, "cudnnSetTensor4dDescriptor", a.set_tensor_4d, missing);
  bind_symbol(lib, "cudnnDestroyTensorDescriptor", a.destroy_tensor, missing);
  bind_symbol(lib, "cudnnCreateFilterDescriptor", a.create_filter, missing);
  bind_symbol(lib, "cudnnSetFilter4dDescriptor", a.set_filter_4d, missing);
  bind_symbol(lib, "cudnnDestroyFilterDescriptor", a.destroy_filter, missing);
  bind_symbol(lib, "cudnnCreateConvolutionDescriptor", a.create_conv, missing);
  bind_symbol(lib, "cudnnSetConvolution2dDescriptor", a.set_conv_2d, missing);
  bind_symbol(lib, "cudnnSetConvolutionGroupCount", a.set_conv_groups, missing);
  bind_symbol(lib, "cudnnSetConvolutionMathType", a.set_conv_math, missing);
  bind_symbol(lib, "cudnnDestroyConvolutionDescriptor", a.destroy_conv, missing);
  bind_symbol(lib, "cudnnGetConvolutionForwardAlgorithm_v7", a.forward_algorithms, missing);
  bind_symbol(lib, "cudnnGetConvolutionBackwardDataAlgorithm_v7", a.backward_data_algorithms,
              missing);
  bind_symbol(lib, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
              a.backward_filter_algorithms, missing);
  bind_symbol(lib, "cudnnGetConvolutionForwardWorkspaceSize", a.forward_workspace, missing);
  bind_symbol(lib, "cudnnGetConvolutionBackwardDataWorkspaceSize", a.backward_data_workspace,
              missing);
  bind_symbol(lib, "cudnnGetConvolutionBackwardFilterWorkspaceSize",
              a.backward_filter_workspace, missing);
  bind_symbol(lib, "cudnnConvolutionForward", a.forward, missing);
  bind_symbol(lib, "cudnnConvolutionBackwardData", a.backward_data, missing);
  bind_symbol(lib, "cudnnConvolutionBackwardFilter", a.backward_filter, missing);
  if (!missing.empty()) {
    l.error = "the libcudnn loaded lacks " + missing + ": install cuDNN 9. " + kInstall;
    return l;
  }
  const std::string sub = load_sublibraries(reinterpret_cast<const void*>(a.get_version));
  if (!sub.empty()) {
    l.error = sub + ". " + kInstall;
    return l;
  }
  if (a.get_version() < 90000)
    l.error = "the libcudnn loaded is version " + std::to_string(a.get_version()) +
              "; the CUDA convolution kernels need cuDNN 9. " + kInstall;
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();  // thread-safe: C++ initialises a static once
  return l;
}

std::atomic<bool> cudnn_switch{true};

void check_cudnn(cudnnStatus_t status, const char* what) {
  if (status == kSuccess) return;
  const char* text = loaded().api.error_string(status);
  fail("cuDNN %s failed: status %d (%s)", what, status, text != nullptr ? text : "?");
}

// This thread's handle on the current device, made on first use and kept for the process
// (destroying it at exit may run after the driver has shut down), its stream set to `stream`.
cudnnHandle_t cudnn_handle(cudaStream_t stream) {
  thread_local std::map<int, cudnnHandle_t> handles;
  const Cudnn& api = loaded().api;
  cudnnHandle_t& handle = handles[paddle_core::current_device()];
  if (handle == nullptr) check_cudnn(api.create(&handle), "handle creation");
  check_cudnn(api.set_stream(handle, stream), "set stream");
  return handle;
}

// -- the engine --------------------------------------------------------------------------------

constexpr size_t kWorkspaceLimit = size_t(512) << 20;
constexpr int kRequested = 16;  // more than cuDNN has algorithms for any pass

// A descriptor, destroyed with the engine (or when a later one fails to be made).
template <class D> class Descriptor {
 public:
  Descriptor(cudnnStatus_t (*create)(D*), cudnnStatus_t (*destroy)(D)) : destroy_(destroy) {
    check_cudnn(create(&d_), "descriptor creation");
  }
  ~Descriptor() {
    if (d_ != nullptr) destroy_(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_ = nullptr;
  cudnnStatus_t (*destroy_)(D);
};

struct Algorithm {
  int algo = -1;  // none found
  size_t workspace = 0;
};

// The first of cuDNN's ranked algorithms that is deterministic, uses no tensor cores and needs
// at most kWorkspaceLimit (workspace(algo, &bytes) asks cuDNN how much).
template <class Workspace>
Algorithm choose(const AlgoPerf* perf, int count, Workspace&& workspace) {
  for (int i = 0; i < count; ++i) {
    const AlgoPerf& p = perf[i];
    if (p.status != kSuccess || p.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.math_type == CUDNN_TENSOR_OP_MATH || p.math_type == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      continue;
    size_t bytes = 0;
    if (workspace(p.algo, &bytes) != kSuccess || bytes > kWorkspaceLimit) continue;
    return {p.algo, bytes};
  }
  return {};
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT32_MAX; }

// Whether cuDNN's descriptors express the convolution: padding pad_before on both sides gives
// the same windows (cuDNN pads symmetrically), and every size and tensor fits in 32 bits.
bool cudnn_takes(const ConvShape& s) {
  for (const Axis* a : {&s.h, &s.w}) {
    const int64_t room = a->in + 2 * a->pad_before - a->span();
    if (room < 0 || room / a->stride + 1 != a->out) return false;
    for (int64_t v : {a->in, a->out, a->kernel, a->stride, a->pad_before, a->dilation})
      if (!fits_int(v)) return false;
  }
  return fits_int(s.batch * s.channels * s.in_plane()) &&
         fits_int(s.batch * s.filters * s.out_plane()) && fits_int(s.filters * s.taps()) &&
         fits_int(s.groups);
}

class CudnnConv final : public CudaConvEngine {
 public:
  CudnnConv(const ConvShape& s, int32_t dtype, unsigned passes, cudaStream_t stream)
      : api_(loaded().api), double_(dtype == PC_FLOAT64),
        x_(api_.create_tensor, api_.destroy_tensor), y_(api_.create_tensor, api_.destroy_tensor),
        w_(api_.create_filter, api_.destroy_filter), conv_(api_.create_conv, api_.destroy_conv) {
    const int type = double_ ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    check_cudnn(api_.set_tensor_4d(x_.get(), CUDNN_TENSOR_NCHW, type, i(s.batch), i(s.channels),
                                   i(s.h.in), i(s.w.in)),
                "tensor descriptor");
    check_cudnn(api_.set_tensor_4d(y_.get(), CUDNN_TENSOR_NCHW, type, i(s.batch), i(s.filters),
                                   i(s.h.out), i(s.w.out)),
                "tensor descriptor");
    check_cudnn(api_.set_filter_4d(w_.get(), type, CUDNN_TENSOR_NCHW, i(s.filters),
                                   i(s.channels / s.groups), i(s.h.kernel), i(s.w.kernel)),
                "filter descriptor");
    check_cudnn(api_.set_conv_2d(conv_.get(), i(s.h.pad_before), i(s.w.pad_before),
                                 i(s.h.stride), i(s.w.stride), i(s.h.dilation), i(s.w.dilation),
                                 CUDNN_CROSS_CORRELATION, type),
                "convolution descriptor");
    check_cudnn(api_.set_conv_groups(conv_.get(), i(s.groups)), "convolution groups");
    check_cudnn(api_.set_conv_math(conv_.get(), double_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH),
                "convolution math type");
    const cudnnHandle_t h = cudnn_handle(stream);
    AlgoPerf perf[kRequested];
    int count = 0;
    if (passes & kForward) {
      check_cudnn(api_.forward_algorithms(h, x_.get(), w_.get(), conv_.get(), y_.get(),
                                          kRequested, &count, perf),
                  "forward algorithm search");
      forward_ = choose(perf, count, [&](int algo, size_t* bytes) {
        return api_.forward_workspace(h, x_.get(), w_.get(), conv_.get(), y_.get(), algo, bytes);
      });
      usable_ = usable_ && forward_.algo >= 0;
    }
    if (passes & kBackwardData) {
      check_cudnn(api_.backward_data_algorithms(h, w_.get(), y_.get(), conv_.get(), x_.get(),
                                                kRequested, &count, perf),
                  "backward data algorithm search");
      data_ = choose(perf, count, [&](int algo, size_t* bytes) {
        return api_.backward_data_workspace(h, w_.get(), y_.get(), conv_.get(), x_.get(), algo,
                                            bytes);
      });
      usable_ = usable_ && data_.algo >= 0;
    }
    if (passes & kBackwardWeights) {
      check_cudnn(api_.backward_filter_algorithms(h, x_.get(), y_.get(), conv_.get(), w_.get(),
                                                  kRequested, &count, perf),
                  "backward filter algorithm search");
      weights_ = choose(perf, count, [&](int algo, size_t* bytes) {
        return api_.backward_filter_workspace(h, x_.get(), y_.get(), conv_.get(), w_.get(), algo,
                                              bytes);
      });
      usable_ = usable_ && weights_.algo >= 0;
    }
  }

  // Whether every pass asked for has an algorithm.
  bool usable() const { return usable_; }

  void forward(const void* x, const void* w, void* y, cudaStream_t stream) const override {
    const Scratch scratch(forward_.workspace, stream);
    check_cudnn(api_.forward(cudnn_handle(stream), one(), x_.get(), x, w_.get(), w, conv_.get(),
                             forward_.algo, scratch.get(), forward_.workspace, zero(), y_.get(),
                             y),
                "convolution forward");
  }

  void backward_data(const void* dy, const void* w, void* dx, cudaStream_t stream) const override {
    const Scratch scratch(data_.workspace, stream);
    check_cudnn(api_.backward_data(cudnn_handle(stream), one(), w_.get(), w, y_.get(), dy,
                                   conv_.get(), data_.algo, scratch.get(), data_.workspace,
                                   zero(), x_.get(), dx),
                "convolution backward data");
  }

  void backward_weights(const void* x, const void* dy, void* dw,
                        cudaStream_t stream) const override {
    const Scratch scratch(weights_.workspace, stream);
    check_cudnn(api_.backward_filter(cudnn_handle(stream), one(), x_.get(), x, y_.get(), dy,
                                     conv_.get(), weights_.algo, scratch.get(),
                                     weights_.workspace, zero(), w_.get(), dw),
                "convolution backward filter");
  }

 private:
  // alpha = 1 and beta = 0 (the result overwrites), in the compute type.
  const void* one() const { return double_ ? static_cast<const void*>(&kOneD) : &kOneF; }
  const void* zero() const { return double_ ? static_cast<const void*>(&kZeroD) : &kZeroF; }
  static constexpr float kOneF = 1, kZeroF = 0;
  static constexpr double kOneD = 1, kZeroD = 0;

  const Cudnn& api_;
  bool double_;
  Descriptor<Tensor_> x_, y_;
  Descriptor<Filter_> w_;
  Descriptor<Conv_> conv_;
  Algorithm forward_, data_, weights_;
  bool usable_ = true;
};

}  // namespace

const char* cudnn_unavailable_reason() {
  const Loaded& l = loaded();
  return l.error.empty() ? nullptr : l.error.c_str();
}

bool cudnn_enabled() { return cudnn_switch.load(std::memory_order_relaxed); }

void set_cudnn_enabled(bool enabled) { cudnn_switch.store(enabled, std::memory_order_relaxed); }

std::unique_ptr<CudaConvEngine> make_cudnn_conv(const ConvShape& shape, int32_t dtype,
                                                unsigned passes, cudaStream_t stream) {
  if (!cudnn_enabled() || !cudnn_takes(shape) || cudnn_unavailable_reason() != nullptr)
    return nullptr;
  auto engine = std::make_unique<CudnnConv>(shape, dtype, passes, stream);
  if (!engine->usable()) return nullptr;
  return engine;
}

}  // namespace paddle_ops_nn
