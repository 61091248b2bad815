// scale, cast, fill_constant, full_like, assign, range.
//
// Memory contract: C-contiguous tensors; outputs have the shapes the shape rules inferred
// (checked in prepare, with the CUDA kernels' checks: elementwise.hpp). The formulas of scale
// and of conversions are functors.hpp's (ScaleBy, convert_to), shared with fill_cuda.cu. Every
// dtype; float16 and bfloat16 scale in float32, and cast to and from float32 with the vector
// conversions of half.hpp.
#include <cstring>

#include "common.hpp"

namespace paddle_ops_math {
namespace {

// out = scale * x + bias, or scale * (x + bias) when bias_after_scale is false (ScaleBy).
class Scale {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllNumbers;
  Scale(const Attrs& attrs, const Slots& in, const Slots& out)
      : scale_(attrs.f("scale")), bias_(attrs.f("bias")) {
    check_unary(in, out);
    const bool after = attrs.b("bias_after_scale");
    fn_ = dispatch(in(0).dtype(), DTypes{}, [&](auto t) -> Fn {
      using T = decltype(t);
      return after ? &compute<ScaleBy<true>, T> : &compute<ScaleBy<false>, T>;
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in(0).data<void>(), out(0).data<void>(), in(0).numel(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Scale&, const void*, void*, int64_t, int32_t);
  template <class F, class T>
  static void compute(const Scale& self, const void* xv, void* ov, int64_t n, int32_t threads) {
    const F f{self.scale_, self.bias_};
    const T* x = static_cast<const T*>(xv);
    T* out = static_cast<T*>(ov);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {  // 16-bit floats in float32
      for (int64_t i = lo; i < hi; ++i) out[i] = static_cast<T>(f(static_cast<compute_t<T>>(x[i])));
    });
  }
  double scale_, bias_;
  Fn fn_;
};

// out = x converted to the out tensor's dtype (the `dtype` attr, applied by the shape rule).
class Cast {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Cast(const Attrs&, const Slots& in, const Slots& out) {
    check_cast(in, out);
    fn_ = dispatch(in(0).dtype(), DTypes{}, [&](auto s) -> Fn {
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
  template <class S, class D>
  static void convert(const void* sv, void* dv, int64_t n, int32_t threads) {
    const S* src = static_cast<const S*>(sv);
    D* dst = static_cast<D*>(dv);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      if constexpr (std::is_same_v<S, float> && is_half_float_v<D>) {
        narrow(src + lo, dst + lo, hi - lo);  // the vector conversions (half.hpp)
      } else if constexpr (is_half_float_v<S> && std::is_same_v<D, float>) {
        widen(src + lo, dst + lo, hi - lo);
      } else {
        for (int64_t i = lo; i < hi; ++i) dst[i] = convert_to<D>(src[i]);
      }
    });
  }
  Fn fn_;
};

// out = value everywhere (fill_constant has no inputs; full_like takes its shape from x).
class Fill {
 public:
  static constexpr pc::Signature signature{"?", "1"};
  using DTypes = AllTypes;
  Fill(const Attrs& attrs, const Slots&, const Slots& out) : value_(attrs.f("value")) {
    fn_ = dispatch(out(0).dtype(), DTypes{}, [](auto t) -> Fn { return &fill<decltype(t)>; });
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

// out[i] = start + i * delta (RangeAt); out's length was worked out by the shape rule.
class Range {
 public:
  static constexpr pc::Signature signature{"", "1"};
  using DTypes = AllNumbers;
  Range(const Attrs& attrs, const Slots&, const Slots& out)
      : at_{attrs.f("start"), attrs.f("delta")} {
    if (out(0).ndim() != 1) fail("out %s must be 1-D", out(0).describe().c_str());
    fn_ = dispatch(out(0).dtype(), DTypes{}, [](auto t) -> Fn { return &fill<decltype(t)>; });
  }
  void run(const Slots&, const Slots& out, const Context& ctx) const {
    fn_(at_, out(0).data<void>(), out(0).numel(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const RangeAt<double>&, void*, int64_t, int32_t);
  template <class T>
  static void fill(const RangeAt<double>& at, void* dv, int64_t n, int32_t threads) {
    const RangeAt<T> f{at.start, at.delta};
    T* dst = static_cast<T*>(dv);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) dst[i] = f(i);
    });
  }
  RangeAt<double> at_;
  Fn fn_;
};

// out = x (a copy).
class Assign {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Assign(const Attrs&, const Slots& in, const Slots& out) {
    check_unary(in, out);
    bytes_ = in(0).numel() * dispatch(in(0).dtype(), DTypes{}, [](auto t) { return int64_t(sizeof(t)); });
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

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Scale>("scale"),
    pc::kernel<Cast>("cast"),
    pc::kernel<Fill>("fill"),
    pc::kernel<Assign>("assign"),
    pc::kernel<Range>("range"));

}  // namespace paddle_ops_math
