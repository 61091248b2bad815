// paddle_ops_nn._C: the kernel table the core loads (see paddle_core/pybind.hpp). The only file
// that includes pybind11.
#include <string>

#include <paddle_core/pybind.hpp>

#include "engine.hpp"

namespace pon {
// One family per source file (src/<family>_cpu.cpp).
const paddle_core::Family& activation_kernels();
const paddle_core::Family& conv_kernels();
const paddle_core::Family& embedding_kernels();
const paddle_core::Family& layout_kernels();
const paddle_core::Family& norm_kernels();
const paddle_core::Family& optimizer_kernels();
const paddle_core::Family& pool_kernels();
const paddle_core::Family& random_kernels();
const paddle_core::Family& softmax_kernels();
#ifdef PADDLE_OPS_NN_WITH_CUDA
// One family per CUDA source file (src/<family>_cuda.cu).
const paddle_core::Family& activation_cuda_kernels();
const paddle_core::Family& optimizer_cuda_kernels();
const paddle_core::Family& random_cuda_kernels();
const paddle_core::Family& softmax_cuda_kernels();
#endif
}  // namespace pon

PYBIND11_MODULE(_C, m) {
  m.doc() = "Compiled kernels of paddle-ops-nn: CPU, and CUDA when built with a toolkit.";
  paddle_core::export_kernels(
      m, {&pon::activation_kernels(), &pon::conv_kernels(), &pon::embedding_kernels(),
          &pon::layout_kernels(), &pon::norm_kernels(), &pon::optimizer_kernels(), &pon::pool_kernels(),
          &pon::random_kernels(), &pon::softmax_kernels(),
#ifdef PADDLE_OPS_NN_WITH_CUDA
          &pon::activation_cuda_kernels(), &pon::optimizer_cuda_kernels(),
          &pon::random_cuda_kernels(), &pon::softmax_cuda_kernels(),
#endif
      });
#ifdef PADDLE_OPS_NN_WITH_CUDA
  paddle_core::export_cuda_build(m, PADDLE_OPS_NN_CUDA_ARCHITECTURES);
#else
  paddle_core::export_cuda_build(m, nullptr);
#endif
  // The oneDNN switch behind paddle_ops_nn.onednn.
  m.attr("ONEDNN_BUILT") = pon::kOnednnBuilt;
  m.def("onednn_enabled", &pon::onednn_enabled);
  m.def("set_onednn_enabled", &pon::set_onednn_enabled, pybind11::arg("enabled"));
  m.def("onednn_channel_block", &pon::onednn_channel_block);
}
