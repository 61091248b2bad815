// Predicates and logic, all giving bool: isnan, isinf, isfinite (of any number; integers are
// never NaN or infinite), logical_not, and logical_and / or / xor with NumPy broadcasting.
//
// Memory contract: x (and y) C-contiguous; out bool (one byte per element, 0 or 1) with x's
// shape (the broadcast shape for the binary ops); checked in prepare.
#include <cmath>

#include "binary.hpp"

namespace pom {
namespace {

struct IsNan {
  template <class T> bool operator()(T x) const { return x != x; }
};
struct IsInf {
  template <class T> bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
    return false;
  }
};
struct IsFinite {
  template <class T> bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isfinite(x);
    return true;
  }
};
struct Not {
  template <class T> bool operator()(T x) const { return !x; }
};

// out = F(x) as bool, for the dtypes in TypeList.
template <class F, class TypeList> class Predicate {
 public:
  Predicate(const Attrs&, const Slots& in, const Slots& out) {
    expect_same_shape(in(0), out(0), "x and out");
    out(0).expect_dtype(PC_BOOL, "out");
    fn_ = dispatch(in(0).dtype(), TypeList{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(in(0).data<void>(), out(0).data<bool>(), out(0).numel(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const void*, bool*, int64_t, int32_t);
  template <class T> static void compute(const void* xv, bool* out, int64_t n, int32_t threads) {
    const T* x = static_cast<const T*>(xv);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = F{}(x[i]);
    });
  }
  Fn fn_;
};

using Bools = Types<bool>;
using AnyNumber = Types<float, double, int32_t, int64_t>;

struct And {
  template <class T> uint8_t operator()(T a, T b) const { return a && b; }
};
struct Or {
  template <class T> uint8_t operator()(T a, T b) const { return a || b; }
};
struct Xor {
  template <class T> uint8_t operator()(T a, T b) const { return bool(a) != bool(b); }
};

}  // namespace

const pc::Family& logic_kernels() {
  static const pc::Family family = {
      pc::kernel<Predicate<IsNan, AnyNumber>>("isnan"),
      pc::kernel<Predicate<IsInf, AnyNumber>>("isinf"),
      pc::kernel<Predicate<IsFinite, AnyNumber>>("isfinite"),
      pc::kernel<Predicate<Not, Bools>>("logical_not"),
      pc::kernel<Binary<And, Bools, true>>("logical_and"),
      pc::kernel<Binary<Or, Bools, true>>("logical_or"),
      pc::kernel<Binary<Xor, Bools, true>>("logical_xor"),
  };
  return family;
}

}  // namespace pom
