// The core's own kernels: fill_like (seeds and zero gradients) and add_n (sums partial
// gradients), which every backward appends. Written against the SDK like any plugin's kernels
// and exported by the runtime module (paddle_core/builtin/ops.pbtxt declares them).
//
// Memory contract: fill_like's out has x's shape and dtype; add_n's inputs (one or more) and
// out share one shape and dtype (checked in prepare). Both are single-threaded loops: they run
// on gradient-sized tensors between kernels that thread. float16 and bfloat16 add in float32,
// each sum rounded, as paddle-ops-math's CUDA add_n does.
#include <cstdint>

#include "paddle_core/kernel.hpp"

namespace paddle_core {
namespace {

// Gradients' dtypes (every floating one) and int32, int64.
using GradTypes = Join<AllFloats, Ints>;

// out = value, with x's shape and dtype.
class FillLike {
 public:
  static constexpr Signature signature{"1", "1"};
  using DTypes = GradTypes;
  FillLike(const Attrs& attrs, const Slots& in, const Slots& out) : value_(attrs.f("value")) {
    expect_same_shape(in(0), out(0), "x and out");
    expect_same_dtype(in(0), out(0), "x and out");
    dispatch(out(0).dtype(), DTypes{}, [](auto) {});
  }

  void run(const Slots&, const Slots& out, const Context&) const {
    dispatch(out(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      const T v = static_cast<T>(value_);
      for (int64_t i = 0, n = out(0).numel(); i < n; ++i) o[i] = v;
    });
  }

 private:
  double value_;
};

// out = xs[0] + xs[1] + ..., in order.
class AddN {
 public:
  static constexpr Signature signature{"+", "1"};
  using DTypes = GradTypes;
  AddN(const Attrs&, const Slots& in, const Slots& out) {
    if (in.size(0) < 1) fail("add_n needs at least one input");
    for (int32_t k = 0; k < in.size(0); ++k) {
      expect_same_shape(in(0, k), out(0), "xs and out");
      expect_same_dtype(in(0, k), out(0), "xs and out");
    }
    dispatch(out(0).dtype(), DTypes{}, [](auto) {});
  }

  void run(const Slots& in, const Slots& out, const Context&) const {
    dispatch(out(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      const int64_t n = out(0).numel();
      const T* first = in(0, 0).data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = first[i];
      for (int32_t k = 1; k < in.size(0); ++k) {
        const T* x = in(0, k).data<T>();
        if constexpr (is_half_float_v<T>) {
          for (int64_t i = 0; i < n; ++i) o[i] = T(float(o[i]) + float(x[i]));
        } else {
          for (int64_t i = 0; i < n; ++i) o[i] += x[i];
        }
      }
    });
  }
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    kernel<FillLike>("fill_like"),
    kernel<AddN>("add_n"));

}  // namespace paddle_core
