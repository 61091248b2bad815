// Elementwise binary ops with NumPy broadcasting: add, sub, mul, div, pow, maximum, minimum.
//
// Memory contract: inputs x, y and output out are C-contiguous; out has the broadcast shape
// and x's dtype (checked in prepare). The loops around each op's formula are shared
// (broadcast_cpu.cpp).
#include <cmath>

#include "binary.hpp"

namespace pom {
namespace {

// Integers wrap around (see Modular in common.hpp).
struct Add {
  template <class T> T operator()(T a, T b) const { return T(Modular<T>(a) + Modular<T>(b)); }
};
struct Sub {
  template <class T> T operator()(T a, T b) const { return T(Modular<T>(a) - Modular<T>(b)); }
};
struct Mul {
  template <class T> T operator()(T a, T b) const { return T(Modular<T>(a) * Modular<T>(b)); }
};
struct Div {
  template <class T> T operator()(T a, T b) const { return a / b; }
};
struct Pow {
  template <class T> T operator()(T a, T b) const { return std::pow(a, b); }
};
struct Maximum {  // NaN-propagating, like np.maximum
  template <class T> T operator()(T a, T b) const { return a > b || a != a ? a : b; }
};
struct Minimum {
  template <class T> T operator()(T a, T b) const { return a < b || a != a ? a : b; }
};

}  // namespace

const pc::Family& binary_kernels() {
  static const pc::Family family = {
      pc::kernel<Binary<Add, Numbers>>("add"),
      pc::kernel<Binary<Sub, Numbers>>("sub"),
      pc::kernel<Binary<Mul, Numbers>>("mul"),
      pc::kernel<Binary<Div, Floats>>("div"),
      pc::kernel<Binary<Pow, Floats>>("pow"),
      pc::kernel<Binary<Maximum, Numbers>>("maximum"),
      pc::kernel<Binary<Minimum, Numbers>>("minimum"),
  };
  return family;
}

}  // namespace pom
