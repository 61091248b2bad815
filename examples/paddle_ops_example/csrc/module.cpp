// paddle_ops_example._C: exports the kernel table the core loads (the only file that includes
// pybind11). Each kernel file registers its own kernels (PADDLE_CORE_REGISTER_KERNELS).
#include <paddle_core/pybind.hpp>

PYBIND11_MODULE(_C, m) { paddle_core::export_kernels(m); }
