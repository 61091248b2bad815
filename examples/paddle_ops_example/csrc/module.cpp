// paddle_ops_example._C: exports the kernel table the core loads (the only file that includes
// pybind11).
#include <paddle_core/pybind.hpp>

const paddle_core::Family& cos_kernels();  // csrc/cos_cpu.cpp
#ifdef PADDLE_OPS_EXAMPLE_WITH_CUDA
const paddle_core::Family& cos_cuda_kernels();  // csrc/cos_cuda.cu
#endif

PYBIND11_MODULE(_C, m) {
#ifdef PADDLE_OPS_EXAMPLE_WITH_CUDA
  paddle_core::export_kernels(m, {&cos_kernels(), &cos_cuda_kernels()});
#else
  paddle_core::export_kernels(m, {&cos_kernels()});
#endif
}
