// Elementwise comparisons with NumPy broadcasting: equal, not_equal, less, less_equal,
// greater, greater_equal.
//
// Memory contract: inputs x, y are C-contiguous and of one dtype; out has the broadcast shape
// and is bool (one byte per element, 0 or 1).
#include "binary.hpp"

namespace pom {
namespace {

struct Equal {
  template <class T> uint8_t operator()(T a, T b) const { return a == b; }
};
struct NotEqual {
  template <class T> uint8_t operator()(T a, T b) const { return a != b; }
};
struct Less {
  template <class T> uint8_t operator()(T a, T b) const { return a < b; }
};
struct LessEqual {
  template <class T> uint8_t operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  template <class T> uint8_t operator()(T a, T b) const { return a > b; }
};
struct GreaterEqual {
  template <class T> uint8_t operator()(T a, T b) const { return a >= b; }
};

}  // namespace

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
