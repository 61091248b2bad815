// Unary elementwise ops (abs, neg, exp, log, sqrt, rsqrt, square, sin, cos, tanh, sigmoid,
// floor, ceil, round, sign, erf, clip) and their gradient kernels.
//
// Memory contract: x (or the grad op's inputs) and out are C-contiguous with equal shapes and
// dtypes (checked in prepare); out may alias x. Integer abs, neg and square wrap around like
// NumPy's (abs and neg of the minimum give the minimum; neg of an unsigned x is 2^bits - x).
// float16 and bfloat16 compute in float32 and round once: forward ops a chunk at a time
// (map_range), gradients on widened copies (AsFloat32).
//
// The formulas (forward, clip, gradients) are functors.hpp's, shared with the CUDA kernels.
// float32 exp, tanh, sigmoid, log, sin, cos, erf, floor, ceil, round and sign run the AVX2+FMA
// loops of unary_avx2.cpp instead when the CPU has both (decided at prepare; set
// PADDLE_OPS_MATH_DISABLE_AVX2=1 to force the portable path), and so do float16 and bfloat16,
// widened to float32 a chunk at a time. Their accuracy is stated there: 1.05 ulp (exp), 1.5
// ulp (tanh), 2.5 ulp (sigmoid), 0.75 ulp (log), 0.501 ulp (sin, cos), 1.4 ulp (erf), exact
// (floor, ceil, round, sign). The portable path and every other op call the C library
// (std::exp, ...; glibc measured: expf 0.5 ulp, tanhf 2.1, logf 0.78, sinf and cosf 0.56);
// sigmoid there is computed in the same stable form from e^-|x|.
// rsqrt is 1 / std::sqrt(x) (two roundings).
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common.hpp"
#include "unary.hpp"

namespace paddle_ops_math {
namespace {

// -- forward ops: the functors of functors.hpp ------------------------------------------------

// The float32 AVX2+FMA loop of functor F: Avx2<F>::loop, where F has one. (A type test, not a
// comparison of a function's address with nullptr: GCC does not take that as a constant
// expression under -fsanitize=undefined, and the sanitizer build must compile.)
using Avx2Loop = void (*)(const float* x, float* out, int64_t n);
template <class F> struct Avx2 {};
template <> struct Avx2<Exp> { static constexpr Avx2Loop loop = &avx2::exp_f32; };
template <> struct Avx2<Tanh> { static constexpr Avx2Loop loop = &avx2::tanh_f32; };
template <> struct Avx2<Sigmoid> { static constexpr Avx2Loop loop = &avx2::sigmoid_f32; };
template <> struct Avx2<Log> { static constexpr Avx2Loop loop = &avx2::log_f32; };
template <> struct Avx2<Sin> { static constexpr Avx2Loop loop = &avx2::sin_f32; };
template <> struct Avx2<Cos> { static constexpr Avx2Loop loop = &avx2::cos_f32; };
template <> struct Avx2<Erf> { static constexpr Avx2Loop loop = &avx2::erf_f32; };
template <> struct Avx2<Floor> { static constexpr Avx2Loop loop = &avx2::floor_f32; };
template <> struct Avx2<Ceil> { static constexpr Avx2Loop loop = &avx2::ceil_f32; };
template <> struct Avx2<Round> { static constexpr Avx2Loop loop = &avx2::round_f32; };
template <> struct Avx2<Sign> { static constexpr Avx2Loop loop = &avx2::sign_f32; };
template <class F, class = void> constexpr bool has_avx2 = false;
template <class F> constexpr bool has_avx2<F, std::void_t<decltype(Avx2<F>::loop)>> = true;

// out[lo, hi) = f(x[lo, hi)), on untyped pointers to the whole tensors.
using RangeFn = void (*)(const void* x, void* out, int64_t lo, int64_t hi);

// out[lo, hi) of float16 or bfloat16 x, a chunk at a time: widened to float32, computed there
// in place by row(buf, m), rounded back.
template <class T, class Row>
void in_float32_chunks(const void* xv, void* ov, int64_t lo, int64_t hi, Row row) {
  const T* x = static_cast<const T*>(xv);
  T* out = static_cast<T*>(ov);
  float buf[kHalfChunk];
  for (int64_t i = lo; i < hi; i += kHalfChunk) {
    const int64_t m = std::min(kHalfChunk, hi - i);
    widen(x + i, buf, m);
    row(buf, m);
    narrow(buf, out + i, m);
  }
}

template <class F, class T> void map_range(const void* xv, void* ov, int64_t lo, int64_t hi) {
  if constexpr (is_half_float_v<T>) {
    in_float32_chunks<T>(xv, ov, lo, hi, [](float* b, int64_t m) {
      for (int64_t j = 0; j < m; ++j) b[j] = F{}(b[j]);
    });
  } else {
    const T* x = static_cast<const T*>(xv);
    T* out = static_cast<T*>(ov);
    for (int64_t i = lo; i < hi; ++i) out[i] = F{}(x[i]);
  }
}

template <class F> void avx2_range(const void* xv, void* ov, int64_t lo, int64_t hi) {
  Avx2<F>::loop(static_cast<const float*>(xv) + lo, static_cast<float*>(ov) + lo, hi - lo);
}

// The 16-bit floats through the float32 AVX2 loop (with libm per element, float16 exp took
// 7.9x float32's time in bench/bench_dtypes.py).
template <class F, class T> void avx2_half_range(const void* xv, void* ov, int64_t lo, int64_t hi) {
  in_float32_chunks<T>(xv, ov, lo, hi, [](float* b, int64_t m) { Avx2<F>::loop(b, b, m); });
}

// out = F(x) for the dtypes in TypeList. Also serves neg_grad (x_grad = -out_grad).
template <class F, class TypeList> class Unary {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = TypeList;
  Unary(const Attrs&, const Slots& in, const Slots& out) {
    check_unary(in, out);
    fn_ = dispatch(in(0).dtype(), TypeList{},
                   [](auto t) -> RangeFn { return &map_range<F, decltype(t)>; });
    if constexpr (has_avx2<F>) {
      if (use_avx2()) {
        const int32_t dtype = in(0).dtype();
        if (dtype == PC_FLOAT32) fn_ = &avx2_range<F>;
        if (dtype == PC_FLOAT16) fn_ = &avx2_half_range<F, float16>;
        if (dtype == PC_BFLOAT16) fn_ = &avx2_half_range<F, bfloat16>;
      }
    }
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const void* x = in(0).data<void>();
    void* o = out(0).data<void>();
    parallel_for(in(0).numel(), ctx.num_threads(), kGrain,
                 [&](int64_t lo, int64_t hi) { fn_(x, o, lo, hi); });
  }

 private:
  RangeFn fn_;
};

// -- clip ------------------------------------------------------------------------------------

// out = min(max(x, min), max); NaN stays NaN (ClipTo, functors.hpp).
class Clip {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllNumbers;
  Clip(const Attrs& attrs, const Slots& in, const Slots& out)
      : min_(attrs.f("min")), max_(attrs.f("max")) {
    check_clip(attrs, in, out);
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in(0), out(0), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Clip&, const Tensor&, const Tensor&, int32_t);
  template <class T>
  static void compute(const Clip& self, const Tensor& x, const Tensor& out, int32_t threads) {
    using C = compute_t<T>;  // float16, bfloat16: clipped in float32 (exact: x or a bound)
    const ClipTo<C> f = clip_to<C>(self.min_, self.max_);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    parallel_for(x.numel(), threads, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = static_cast<T>(f(static_cast<C>(src[i])));
    });
  }
  double min_, max_;
  Fn fn_;
};

// x_grad = out_grad where min <= x <= max, else 0 (ClipGradBy).
class ClipGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  ClipGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : min_(attrs.f("min")), max_(attrs.f("max")) {
    check_clip_grad(attrs, in, out);
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in, out(0), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const ClipGrad&, const Slots&, const Tensor&, int32_t);
  template <class T>
  static void compute(const ClipGrad& self, const Slots& in, const Tensor& out, int32_t threads) {
    const ClipGradBy f{self.min_, self.max_};
    const T* x = in(0).data<T>();
    const T* g = in(1).data<T>();
    T* dx = out.data<T>();
    parallel_for(out.numel(), threads, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[i] = f(x[i], g[i]);
    });
  }
  double min_, max_;
  Fn fn_;
};

// x_grad = G(a, out_grad), G from functors.hpp; float dtypes.
template <class G> class UnaryGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  UnaryGrad(const Attrs&, const Slots& in, const Slots& out) {
    check_unary_grad(in, out);
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(in(0).data<void>(), in(1).data<void>(), out(0).data<void>(), out(0).numel(),
        ctx.num_threads());
  }

 private:
  using Fn = void (*)(const void*, const void*, void*, int64_t, int32_t);
  template <class T>
  static void compute(const void* av, const void* gv, void* dv, int64_t n, int32_t threads) {
    const T* a = static_cast<const T*>(av);
    const T* g = static_cast<const T*>(gv);
    T* dx = static_cast<T*>(dv);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) dx[i] = G{}(a[i], g[i]);
    });
  }
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Unary<Abs, AllNumbers>>("abs"),
    pc::kernel<Unary<Neg, AllNumbers>>("neg"),
    pc::kernel<Unary<Exp, AllFloats>>("exp"),
    pc::kernel<Unary<Log, AllFloats>>("log"),
    pc::kernel<Unary<Sqrt, AllFloats>>("sqrt"),
    pc::kernel<Unary<Rsqrt, AllFloats>>("rsqrt"),
    pc::kernel<Unary<Square, AllNumbers>>("square"),
    pc::kernel<Unary<Sin, AllFloats>>("sin"),
    pc::kernel<Unary<Cos, AllFloats>>("cos"),
    pc::kernel<Unary<Tanh, AllFloats>>("tanh"),
    pc::kernel<Unary<Sigmoid, AllFloats>>("sigmoid"),
    pc::kernel<Unary<Floor, AllFloats>>("floor"),
    pc::kernel<Unary<Ceil, AllFloats>>("ceil"),
    pc::kernel<Unary<Round, AllFloats>>("round"),
    pc::kernel<Unary<Sign, AllNumbers>>("sign"),
    pc::kernel<Unary<Erf, AllFloats>>("erf"),
    pc::kernel<Clip>("clip"),
    pc::kernel<AsFloat32<UnaryGrad<AbsGrad>>>("abs_grad"),
    pc::kernel<Unary<Neg, AllFloats>>("neg_grad"),
    pc::kernel<AsFloat32<UnaryGrad<ExpGrad>>>("exp_grad"),
    pc::kernel<AsFloat32<UnaryGrad<LogGrad>>>("log_grad"),
    pc::kernel<AsFloat32<UnaryGrad<SqrtGrad>>>("sqrt_grad"),
    pc::kernel<AsFloat32<UnaryGrad<RsqrtGrad>>>("rsqrt_grad"),
    pc::kernel<AsFloat32<UnaryGrad<SquareGrad>>>("square_grad"),
    pc::kernel<AsFloat32<UnaryGrad<SinGrad>>>("sin_grad"),
    pc::kernel<AsFloat32<UnaryGrad<CosGrad>>>("cos_grad"),
    pc::kernel<AsFloat32<UnaryGrad<TanhGrad>>>("tanh_grad"),
    pc::kernel<AsFloat32<UnaryGrad<SigmoidGrad>>>("sigmoid_grad"),
    pc::kernel<AsFloat32<UnaryGrad<ErfGrad>>>("erf_grad"),
    pc::kernel<AsFloat32<ClipGrad>>("clip_grad"));

}  // namespace paddle_ops_math
