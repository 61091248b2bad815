// Reductions: sum, mean, prod over a set of axes (keepdim optional).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace pom {
const pc::Family& reduce_kernels() {
  static const pc::Family family = {
      pc::kernel<AsFloat32<Reduce<Sum, Join<Floats, AllInts>>>>("sum"),
      pc::kernel<AsFloat32<Reduce<Mean, Floats>>>("mean"),
      pc::kernel<AsFloat32<Reduce<Prod, Join<Floats, AllInts>>>>("prod"),
  };
  return family;
}

}  // namespace pom
