// Scans along an axis: cumsum (inclusive or exclusive, forward or reverse).
//
// Memory contract: x and out C-contiguous with one shape; out has x's dtype, int64 for an int32
// x (checked in prepare, scan.hpp). Floats accumulate in double, integers wrap around.
#include <algorithm>
#include <vector>

#include "common.hpp"
#include "scan.hpp"

namespace pom {
namespace {

// out = cumsum(x) along the axis. Each thread owns columns (o, i) of the [outer, length, inner]
// view and walks the axis once for them, so results do not depend on the thread count.
class Cumsum {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = CumsumTypes;
  Cumsum(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_cumsum(attrs, in(0), out(0))),
        exclusive_(attrs.b("exclusive")),
        reverse_(attrs.b("reverse")) {
    fn_ = dispatch(in(0).dtype(), DTypes{},
                   [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in(0).data<void>(), out(0).data<void>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Cumsum&, const void*, void*, int32_t);
  template <class T>
  static void compute(const Cumsum& self, const void* xv, void* ov, int32_t threads) {
    using R = CumsumOut<T>;
    using A = CumsumAcc<T>;
    const T* x = static_cast<const T*>(xv);
    R* out = static_cast<R*>(ov);
    const int64_t inner = self.geo_.inner, length = self.geo_.length;
    const int64_t columns = self.geo_.outer * inner;
    const bool exclusive = self.exclusive_, reverse = self.reverse_;
    if (columns == 0 || length == 0) return;
    parallel_for(columns, threads, std::max<int64_t>(1, kGrain / length),
                 [&](int64_t lo, int64_t hi) {
                   std::vector<A> acc(static_cast<size_t>(std::min(inner, hi - lo)));
                   for (int64_t c = lo; c < hi;) {
                     const int64_t o = c / inner, i0 = c % inner;
                     const int64_t n = std::min(inner - i0, hi - c);
                     std::fill(acc.begin(), acc.begin() + n, A(0));
                     for (int64_t s = 0; s < length; ++s) {
                       const int64_t j = reverse ? length - 1 - s : s;
                       const int64_t at = (o * length + j) * inner + i0;
                       for (int64_t i = 0; i < n; ++i) {
                         const A v = static_cast<A>(static_cast<R>(x[at + i]));
                         if (exclusive) {
                           out[at + i] = static_cast<R>(acc[i]);
                           acc[i] += v;
                         } else {
                           acc[i] += v;
                           out[at + i] = static_cast<R>(acc[i]);
                         }
                       }
                     }
                     c += n;
                   }
                 });
  }

  ScanGeometry geo_;
  bool exclusive_, reverse_;
  Fn fn_;
};

}  // namespace

const pc::Family& scan_kernels() {
  static const pc::Family family = {pc::kernel<Cumsum>("cumsum")};
  return family;
}

}  // namespace pom
