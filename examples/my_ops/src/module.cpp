// my_ops._C: exports the kernel table the core loads (the only file that includes pybind11).
#include <paddle_core/pybind.hpp>

const paddle_core::Family& swish_kernels();

PYBIND11_MODULE(_C, m) { paddle_core::export_kernels(m, {&swish_kernels()}); }
