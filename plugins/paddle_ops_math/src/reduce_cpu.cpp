// Reductions: sum, mean, prod over a set of axes (keepdim optional).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace pom {
const pc::Family& reduce_kernels() {
  static const pc::Family family = {
      pc::kernel<Reduce<Sum, Numbers>>("sum"),
      pc::kernel<Reduce<Mean, Floats>>("mean"),
      pc::kernel<Reduce<Prod, Numbers>>("prod"),
  };
  return family;
}

}  // namespace pom
