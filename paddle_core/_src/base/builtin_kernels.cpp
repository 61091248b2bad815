// The core's own kernels: fill_like (seeds and zero gradients) and add_n (sums partial
// gradients), which every backward appends. Written against the SDK like any plugin's kernels
// and exported by the runtime module (paddle_core/builtin/ops.pbtxt declares them).
//
// Memory contract: fill_like's out has x's shape and dtype; add_n's inputs (one or more) and
// out share one shape and dtype (checked in prepare). Both are single-threaded loops: they run
// on gradient-sized tensors between kernels that thread. float16 and bfloat16 are summed in
// float32 and each sum rounded once, as paddle-ops-math's CUDA add_n does; integers wrap around.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "paddle_core/kernel.hpp"

namespace paddle_core {
namespace {

// Gradients' dtypes (every floating one) and int32, int64.
using GradTypes = Join<AllFloats, Ints>;

// value as a T: an integer T takes a finite value within its range, truncated toward zero
// (the op's shape rule refuses others when appended; a program that skipped it is refused here,
// where a plain cast would be undefined).
template <class T> T fill_value(double value) {
  if constexpr (std::is_integral_v<T>) {
    static_assert(std::is_signed_v<T>, "the integer dtypes of GradTypes");
    // T's range is [-2^(bits-1), 2^(bits-1)): both bounds are exact doubles.
    constexpr double bound = -static_cast<double>(std::numeric_limits<T>::min());
    const double whole = std::trunc(value);  // NaN stays NaN, and fails the test below
    if (!(whole >= -bound && whole < bound))
      fail("value %g does not fit %s [%lld, %lld]", value, dtype_name(DType<T>::value),
           static_cast<long long>(std::numeric_limits<T>::min()),
           static_cast<long long>(std::numeric_limits<T>::max()));
    return static_cast<T>(whole);
  } else {
    return static_cast<T>(value);
  }
}

// out = value, with x's shape and dtype.
class FillLike {
 public:
  static constexpr Signature signature{"1", "1"};
  using DTypes = GradTypes;
  FillLike(const Attrs& attrs, const Slots& in, const Slots& out) : value_(attrs.f("value")) {
    expect_same_shape(in(0), out(0), "x and out");
    expect_same_dtype(in(0), out(0), "x and out");
    dispatch(out(0).dtype(), DTypes{}, [&](auto t) { fill_value<decltype(t)>(value_); });
  }

  void run(const Slots&, const Slots& out, const Context&) const {
    dispatch(out(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      std::fill(o, o + out(0).numel(), fill_value<T>(value_));  // checked in prepare
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
      const int32_t count = in.size(0);
      if constexpr (is_half_float_v<T>) {  // a chunk at a time, summed in float32
        float sum[kChunk];
        for (int64_t lo = 0; lo < n; lo += kChunk) {
          const int64_t m = std::min(kChunk, n - lo);
          const T* first = in(0, 0).data<T>() + lo;
          for (int64_t i = 0; i < m; ++i) sum[i] = float(first[i]);
          for (int32_t k = 1; k < count; ++k) {
            const T* x = in(0, k).data<T>() + lo;
            for (int64_t i = 0; i < m; ++i) sum[i] += float(x[i]);
          }
          for (int64_t i = 0; i < m; ++i) o[lo + i] = T(sum[i]);
        }
      } else {
        const T* first = in(0, 0).data<T>();
        for (int64_t i = 0; i < n; ++i) o[i] = first[i];
        for (int32_t k = 1; k < count; ++k) {
          const T* x = in(0, k).data<T>();
          if constexpr (std::is_integral_v<T>) {  // wrapping around (a signed overflow is UB)
            using U = std::make_unsigned_t<T>;
            for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(U(o[i]) + U(x[i]));
          } else {
            for (int64_t i = 0; i < n; ++i) o[i] += x[i];
          }
        }
      }
    });
  }

 private:
  static constexpr int64_t kChunk = 256;  // float32 sums kept on the stack, in L1
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    kernel<FillLike>("fill_like"),
    kernel<AddN>("add_n"));

}  // namespace paddle_core
