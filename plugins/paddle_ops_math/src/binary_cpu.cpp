// Elementwise binary ops with NumPy broadcasting: add, sub, mul, div, pow, mod, maximum, minimum.
//
// Memory contract: inputs x, y and output out are C-contiguous; out has the broadcast shape
// and x's dtype (checked in prepare). The formulas are functors.hpp's (shared with the CUDA
// kernels), the loops around them broadcast_cpu.cpp's. Integers wrap around.
#include "binary.hpp"

namespace pom {

const pc::Family& binary_kernels() {
  static const pc::Family family = {
      pc::kernel<Binary<Add, Numbers>>("add"),
      pc::kernel<Binary<Sub, Numbers>>("sub"),
      pc::kernel<Binary<Mul, Numbers>>("mul"),
      pc::kernel<Binary<Div, Floats>>("div"),
      pc::kernel<Binary<Pow, Floats>>("pow"),
      pc::kernel<Binary<Mod, Numbers>>("mod"),
      pc::kernel<Binary<Maximum, Numbers>>("maximum"),
      pc::kernel<Binary<Minimum, Numbers>>("minimum"),
  };
  return family;
}

}  // namespace pom
