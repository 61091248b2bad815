// paddle_ops_nn._C: the kernel table the core loads (see paddle_core/pybind.hpp), and the engine
// switches. The only file that includes pybind11; the kernels register themselves in their own
// files.
#include <string>

#include <paddle_core/pybind.hpp>

#include "engine.hpp"

namespace paddle_ops_nn {
#ifdef PADDLE_OPS_NN_WITH_CUDA
// cudnn_cuda.cu: whether cuDNN (loaded at run time) serves the CUDA convolutions.
const char* cudnn_unavailable_reason();
void conv_engines_prepared(int64_t* cudnn, int64_t* direct);
bool cudnn_enabled();
void set_cudnn_enabled(bool enabled);
// rnn_cuda.cu: whether cuBLAS (loaded at run time) serves the recurrent kernels.
const char* cublas_unavailable_reason();
#endif
}  // namespace paddle_ops_nn

PYBIND11_MODULE(_C, m) {
  m.doc() = "Compiled kernels of paddle-ops-nn: CPU, and CUDA when built with a toolkit.";
  paddle_core::export_kernels(m);  // every kernel src/*_cpu.cpp and src/*_cuda.cu registered
#ifdef PADDLE_OPS_NN_WITH_CUDA
  paddle_core::export_cuda_build(m, PADDLE_OPS_NN_CUDA_ARCHITECTURES);
#else
  paddle_core::export_cuda_build(m, nullptr);
#endif
  m.def(
      "cublas_unavailable_reason",
      []() -> pybind11::object {
#ifdef PADDLE_OPS_NN_WITH_CUDA
        const char* reason = paddle_ops_nn::cublas_unavailable_reason();
        if (reason == nullptr) return pybind11::none();
        return pybind11::str(reason);
#else
        return pybind11::str("paddle-ops-nn was built without CUDA kernels");
#endif
      },
      "Why the CUDA kernels of lstm and gru cannot use cuBLAS (what to install), or None when "
      "they can. Loads it on the first call.");
  // cuDNN, behind paddle_ops_nn.cudnn.
  m.def(
      "cudnn_unavailable_reason",
      []() -> pybind11::object {
#ifdef PADDLE_OPS_NN_WITH_CUDA
        const char* reason = paddle_ops_nn::cudnn_unavailable_reason();
        if (reason == nullptr) return pybind11::none();
        return pybind11::str(reason);
#else
        return pybind11::str("paddle-ops-nn was built without CUDA kernels");
#endif
      },
      "Why the CUDA convolution kernels cannot use cuDNN (what to install), or None when they "
      "can. Loads it on the first call.");
#ifdef PADDLE_OPS_NN_WITH_CUDA
  m.def("cudnn_enabled", &paddle_ops_nn::cudnn_enabled);
  m.def("set_cudnn_enabled", &paddle_ops_nn::set_cudnn_enabled, pybind11::arg("enabled"));
  m.def("conv_engines_prepared", [] {
    int64_t cudnn = 0, direct = 0;
    paddle_ops_nn::conv_engines_prepared(&cudnn, &direct);
    return pybind11::make_tuple(cudnn, direct);
  });
#else
  m.def("conv_engines_prepared", [] { return pybind11::make_tuple(0, 0); });
  m.def("cudnn_enabled", [] { return false; });
  m.def("set_cudnn_enabled", [](bool) {}, pybind11::arg("enabled"));
#endif
  // The oneDNN switch behind paddle_ops_nn.onednn.
  m.attr("ONEDNN_BUILT") = paddle_ops_nn::kOnednnBuilt;
  m.def("onednn_enabled", &paddle_ops_nn::onednn_enabled);
  m.def("set_onednn_enabled", &paddle_ops_nn::set_onednn_enabled, pybind11::arg("enabled"));
  m.def("onednn_channel_block", &paddle_ops_nn::onednn_channel_block);
  m.def("onednn_inference_block", &paddle_ops_nn::onednn_inference_block);
  // The Winograd switch behind paddle_ops_nn.winograd.
  m.def("winograd_enabled", &paddle_ops_nn::winograd_enabled);
  m.def("set_winograd_enabled", &paddle_ops_nn::set_winograd_enabled, pybind11::arg("enabled"));
  m.def("winograd_engines_made", &paddle_ops_nn::winograd_engines_made, pybind11::arg("outputs"));
}
