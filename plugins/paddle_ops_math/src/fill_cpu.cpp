// scale, cast, fill_constant, full_like, assign.
//
// Memory contract: C-contiguous tensors; outputs have the shapes the shape rules inferred
// (checked in prepare). Integer results of scale are computed in double and truncated toward
// zero, as NumPy's astype does.
#include <cstring>

#include "common.hpp"

namespace pom {
namespace {

using AllTypes = Types<float, double, int32_t, int64_t, bool, uint8_t, int8_t, int16_t>;

// out = scale * x + bias, or scale * (x + bias) when bias_after_scale is false.
class Scale {
 public:
  Scale(const Attrs& attrs, const Slots& in, const Slots& out)
      : scale_(attrs.f("scale")), bias_(attrs.f("bias")), after_(attrs.b("bias_after_scale")) {
    expect_same_shape(in(0), out(0), "x and out");
    out(0).expect_dtype(in(0).dtype(), "out");
    fn_ = dispatch(in(0).dtype(), Numbers{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in(0), out(0), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Scale&, const Tensor&, const Tensor&, int32_t);
  template <class T>
  static void compute(const Scale& self, const Tensor& x, const Tensor& out, int32_t threads) {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    if constexpr (std::is_floating_point_v<T>) {
      // In T's own precision (so float32 vectorises), in the order the op's doc gives: folding
      // the bias into scale * (x + b) overflows where the result does not (1e308 * (x - 1.5)).
      const T s = static_cast<T>(self.scale_), b = static_cast<T>(self.bias_);
      if (self.after_) {
        parallel_for(x.numel(), threads, kGrain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) dst[i] = src[i] * s + b;
        });
      } else {
        parallel_for(x.numel(), threads, kGrain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) dst[i] = (src[i] + b) * s;
        });
      }
    } else {
      const double s = self.scale_, b = self.bias_;
      const bool after = self.after_;
      parallel_for(x.numel(), threads, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          double v = static_cast<double>(src[i]);
          dst[i] = convert_to<T>(after ? v * s + b : (v + b) * s);
        }
      });
    }
  }
  double scale_, bias_;
  bool after_;
  Fn fn_;
};

// out = x converted to the out tensor's dtype (the `dtype` attr, applied by the shape rule).
class Cast {
 public:
  Cast(const Attrs&, const Slots& in, const Slots& out) {
    expect_same_shape(in(0), out(0), "x and out");
    fn_ = dispatch(in(0).dtype(), AllTypes{}, [&](auto s) -> Fn {
      return dispatch(out(0).dtype(), AllTypes{}, [](auto d) -> Fn {
        return &convert<decltype(s), decltype(d)>;
      });
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(in(0).data<void>(), out(0).data<void>(), in(0).numel(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const void*, void*, int64_t, int32_t);
  template <class S, class D> static void convert(const void* sv, void* dv, int64_t n, int32_t threads) {
    const S* src = static_cast<const S*>(sv);
    D* dst = static_cast<D*>(dv);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        dst[i] = convert_to<D>(src[i]);
      }
    });
  }
  Fn fn_;
};

// out = value everywhere (fill_constant has no inputs; full_like takes its shape from x).
class Fill {
 public:
  Fill(const Attrs& attrs, const Slots&, const Slots& out) : value_(attrs.f("value")) {
    fn_ = dispatch(out(0).dtype(), AllTypes{}, [](auto t) -> Fn { return &fill<decltype(t)>; });
  }
  void run(const Slots&, const Slots& out, const Context& ctx) const {
    fn_(out(0).data<void>(), out(0).numel(), value_, ctx.num_threads());
  }

 private:
  using Fn = void (*)(void*, int64_t, double, int32_t);
  template <class T> static void fill(void* dv, int64_t n, double value, int32_t threads) {
    T* dst = static_cast<T*>(dv);
    const T v = convert_to<T>(value);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) { std::fill(dst + lo, dst + hi, v); });
  }
  double value_;
  Fn fn_;
};

// out = x (a copy).
class Assign {
 public:
  Assign(const Attrs&, const Slots& in, const Slots& out) {
    expect_same_shape(in(0), out(0), "x and out");
    out(0).expect_dtype(in(0).dtype(), "out");
    bytes_ = in(0).numel() * dispatch(in(0).dtype(), AllTypes{}, [](auto t) { return int64_t(sizeof(t)); });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const char* src = in(0).data<char>();
    char* dst = out(0).data<char>();
    if (src == dst) return;
    parallel_for(bytes_, ctx.num_threads(), 4 * kGrain,
                 [&](int64_t lo, int64_t hi) { std::memcpy(dst + lo, src + lo, hi - lo); });
  }

 private:
  int64_t bytes_ = 0;
};

}  // namespace

const pc::Family& fill_kernels() {
  static const pc::Family family = {
      pc::kernel<Scale>("scale"),
      pc::kernel<Cast>("cast"),
      pc::kernel<Fill>("fill"),
      pc::kernel<Assign>("assign"),
  };
  return family;
}

}  // namespace pom
