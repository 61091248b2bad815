// CUDA kernels of the elementwise binary ops with NumPy broadcasting: add, sub, mul, div, pow,
// maximum, minimum. Same formulas (functors.hpp), checks and dtypes as binary_cpu.cpp.
//
// Memory contract: inputs x, y and output out are C-contiguous CUDA buffers; out has the
// broadcast shape and x's dtype (checked in prepare). Integers wrap around.
#include "elementwise.cuh"

namespace pom {

const pc::Family& binary_cuda_kernels() {
  static const pc::Family family = {
      pc::kernel<BinaryCuda<Add, Numbers>>("add_cuda"),
      pc::kernel<BinaryCuda<Sub, Numbers>>("sub_cuda"),
      pc::kernel<BinaryCuda<Mul, Numbers>>("mul_cuda"),
      pc::kernel<BinaryCuda<Div, Floats>>("div_cuda"),
      pc::kernel<BinaryCuda<Pow, Floats>>("pow_cuda"),
      pc::kernel<BinaryCuda<Maximum, Numbers>>("maximum_cuda"),
      pc::kernel<BinaryCuda<Minimum, Numbers>>("minimum_cuda"),
  };
  return family;
}

}  // namespace pom
