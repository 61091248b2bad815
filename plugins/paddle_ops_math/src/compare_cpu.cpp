// Elementwise comparisons with NumPy broadcasting: equal, not_equal, less, less_equal,
// greater, greater_equal.
//
// Memory contract: inputs x, y are C-contiguous and of one dtype; out has the broadcast shape
// and is bool (one byte per element, 0 or 1). The formulas are functors.hpp's.
#include "binary.hpp"

namespace pom {

const pc::Family& compare_kernels() {
  static const pc::Family family = {
      pc::kernel<Binary<Equal, Numbers, true>>("equal"),
      pc::kernel<Binary<NotEqual, Numbers, true>>("not_equal"),
      pc::kernel<Binary<Less, Numbers, true>>("less"),
      pc::kernel<Binary<LessEqual, Numbers, true>>("less_equal"),
      pc::kernel<Binary<Greater, Numbers, true>>("greater"),
      pc::kernel<Binary<GreaterEqual, Numbers, true>>("greater_equal"),
  };
  return family;
}

}  // namespace pom
