// Reductions: max, min over a set of axes (NaN propagates, like NumPy).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace pom {
const pc::Family& extreme_kernels() {
  static const pc::Family family = {
      pc::kernel<Reduce<Max, Numbers>>("max"),
      pc::kernel<Reduce<Min, Numbers>>("min"),
  };
  return family;
}

}  // namespace pom
