// paddle_ops_nn._C: the kernel table the core loads (see paddle_core/pybind.hpp). The only file
// that includes pybind11.
#include <paddle_core/pybind.hpp>

#include "engine.hpp"

namespace pon {
// One family per source file (src/<family>_cpu.cpp).
const paddle_core::Family& activation_kernels();
const paddle_core::Family& conv_kernels();
const paddle_core::Family& embedding_kernels();
const paddle_core::Family& norm_kernels();
const paddle_core::Family& optimizer_kernels();
const paddle_core::Family& pool_kernels();
const paddle_core::Family& random_kernels();
const paddle_core::Family& softmax_kernels();
}  // namespace pon

PYBIND11_MODULE(_C, m) {
  m.doc() = "Compiled CPU kernels of paddle-ops-nn.";
  paddle_core::export_kernels(
      m, {&pon::activation_kernels(), &pon::conv_kernels(), &pon::embedding_kernels(),
          &pon::norm_kernels(), &pon::optimizer_kernels(), &pon::pool_kernels(),
          &pon::random_kernels(), &pon::softmax_kernels()});
  // The oneDNN switch behind paddle_ops_nn.onednn.
  m.attr("ONEDNN_BUILT") = pon::kOnednnBuilt;
  m.def("onednn_enabled", &pon::onednn_enabled);
  m.def("set_onednn_enabled", &pon::set_onednn_enabled, pybind11::arg("enabled"));
}
