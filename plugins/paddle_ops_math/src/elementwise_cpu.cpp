// Elementwise binary ops with NumPy broadcasting (add, sub, mul, div, pow, maximum, minimum)
// and comparisons producing bool, plus their gradient kernels.
//
// Memory contract: inputs x, y and output out are C-contiguous; out has the broadcast shape
// (checked in prepare). Comparison outputs are bool (one byte per element, 0 or 1).
#include <cmath>

#include "common.hpp"

namespace pom {
namespace {

struct Add {
  template <class T> T operator()(T a, T b) const { return a + b; }
};
struct Sub {
  template <class T> T operator()(T a, T b) const { return a - b; }
};
struct Mul {
  template <class T> T operator()(T a, T b) const { return a * b; }
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

// out = F(x, y), broadcasting. R is the output element type: T itself, or uint8_t (bool) for
// comparisons (Bool = true).
template <class F, class TypeList, bool Bool = false> class Binary {
 public:
  Binary(const Attrs&, const Slots& in, const Slots& out) {
    Tensor x = in(0), y = in(1), o = out(0);
    expect_same_dtype(x, y, "x and y");
    o.expect_dtype(Bool ? PC_BOOL : x.dtype(), "out");
    plan_ = plan_broadcast(x, y, o);
    fn_ = dispatch(x.dtype(), TypeList{}, [](auto t) -> Fn {
      using T = decltype(t);
      using R = std::conditional_t<Bool, uint8_t, T>;
      return [](const Broadcast& p, const void* a, const void* b, void* out, int32_t threads) {
        apply_binary(p, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<R*>(out),
                     threads, F{});
      };
    });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(plan_, in(0).data<void>(), in(1).data<void>(), out(0).data<void>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Broadcast&, const void*, const void*, void*, int32_t);
  Broadcast plan_;
  Fn fn_;
};

// -- gradients ---------------------------------------------------------------------------------
//
// The grad kernels below compute d(x) and d(y) at the broadcast shape and reduce each over
// the dimensions its input was broadcast along. Inputs (in order): x, y, out_grad (and out
// for pow/maximum/minimum where needed); outputs: x_grad, y_grad (either may be absent).

// Sum `full` (shape `out`) down to the shape of `target` (right-aligned broadcast).
template <class T>
void reduce_to(const T* full, const Tensor& out, T* dst, const Tensor& target) {
  const int64_t n = out.numel(), m = target.numel();
  if (n == m) {
    std::copy(full, full + n, dst);
    return;
  }
  std::fill(dst, dst + m, T(0));
  const int32_t nd = out.ndim(), td = target.ndim();
  std::vector<int64_t> stride(nd, 0);  // element stride in dst for each output dim
  int64_t s = 1;
  for (int32_t k = nd - 1; k >= 0; --k) {
    int32_t tk = k - (nd - td);
    if (tk >= 0 && target.dim(tk) != 1) {  // kept dim; broadcast and missing dims stay 0
      stride[k] = s;
      s *= target.dim(tk);
    }
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    dst[off] += full[i];
    for (int32_t k = nd - 1; k >= 0; --k) {
      off += stride[k];
      if (++idx[k] < out.dim(k)) break;
      off -= stride[k] * out.dim(k);
      idx[k] = 0;
    }
  }
}

// dx = gx(x, y, g), dy = gy(x, y, g) elementwise at the broadcast shape, then reduced.
template <class GX, class GY, class TypeList> class BinaryGrad {
 public:
  BinaryGrad(const Attrs&, const Slots& in, const Slots& out) {
    Tensor x = in(0), y = in(1), g = in(2);
    expect_same_dtype(x, y, "x and y");
    expect_same_dtype(x, g, "x and out_grad");
    if (out.has(0)) expect_same_shape(out(0), x, "x_grad and x");
    if (out.has(1)) expect_same_shape(out(1), y, "y_grad and y");
    ax_ = plan_broadcast(x, g, g);
    ay_ = plan_broadcast(y, g, g);
    fn_ = dispatch(x.dtype(), TypeList{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in, out, ctx.num_threads());
  }

 private:
  using Fn = void (*)(const BinaryGrad&, const Slots&, const Slots&, int32_t);

  template <class T>
  static void compute(const BinaryGrad& self, const Slots& in, const Slots& out, int32_t threads) {
    Tensor x = in(0), y = in(1), g = in(2);
    const int64_t n = g.numel();
    const T* gd = g.data<T>();
    const T* xd = x.data<T>();
    const T* yd = y.data<T>();
    std::vector<T> xs, ys;  // x and y broadcast to the gradient's shape, when they differ
    if (self.ax_.kind != Broadcast::kSame) {
      xs.resize(n);
      apply_binary(self.ax_, xd, gd, xs.data(), threads, [](T a, T) { return a; });
      xd = xs.data();
    }
    if (self.ay_.kind != Broadcast::kSame) {
      ys.resize(n);
      apply_binary(self.ay_, yd, gd, ys.data(), threads, [](T a, T) { return a; });
      yd = ys.data();
    }
    auto fill = [&](auto grad, const Tensor& target) {
      bool direct = target.numel() == n;  // no reduction: write straight into the output
      std::vector<T> full(direct ? 0 : n);
      T* dst = direct ? target.data<T>() : full.data();
      parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) dst[i] = grad(xd[i], yd[i], gd[i]);
      });
      if (!direct) reduce_to(full.data(), g, target.data<T>(), target);
    };
    if (out.has(0)) fill(GX{}, out(0));
    if (out.has(1)) fill(GY{}, out(1));
  }

  Broadcast ax_, ay_;
  Fn fn_;
};

struct GradOne {  // d(x + y)/dx
  template <class T> T operator()(T, T, T g) const { return g; }
};
struct GradNeg {  // d(x - y)/dy
  template <class T> T operator()(T, T, T g) const { return -g; }
};
struct GradMulX {
  template <class T> T operator()(T, T y, T g) const { return g * y; }
};
struct GradMulY {
  template <class T> T operator()(T x, T, T g) const { return g * x; }
};
struct GradDivX {
  template <class T> T operator()(T, T y, T g) const { return g / y; }
};
struct GradDivY {
  template <class T> T operator()(T x, T y, T g) const { return -g * x / (y * y); }
};
struct GradPowX {  // d(x^y)/dx = y x^(y-1)
  template <class T> T operator()(T x, T y, T g) const { return g * y * std::pow(x, y - T(1)); }
};
struct GradPowY {  // d(x^y)/dy = x^y ln x (0 where x == 0)
  template <class T> T operator()(T x, T y, T g) const {
    return x > T(0) ? g * std::pow(x, y) * std::log(x) : T(0);
  }
};
struct GradMaxX {  // ties send the gradient to x, like the forward's choice of x
  template <class T> T operator()(T x, T y, T g) const { return x >= y ? g : T(0); }
};
struct GradMaxY {
  template <class T> T operator()(T x, T y, T g) const { return x >= y ? T(0) : g; }
};
struct GradMinX {
  template <class T> T operator()(T x, T y, T g) const { return x <= y ? g : T(0); }
};
struct GradMinY {
  template <class T> T operator()(T x, T y, T g) const { return x <= y ? T(0) : g; }
};

}  // namespace

const pc::Family& elementwise_kernels() {
  static const pc::Family family = {
      pc::kernel<Binary<Add, Numbers>>("add"),
      pc::kernel<Binary<Sub, Numbers>>("sub"),
      pc::kernel<Binary<Mul, Numbers>>("mul"),
      pc::kernel<Binary<Div, Floats>>("div"),
      pc::kernel<Binary<Pow, Floats>>("pow"),
      pc::kernel<Binary<Maximum, Numbers>>("maximum"),
      pc::kernel<Binary<Minimum, Numbers>>("minimum"),
      pc::kernel<Binary<Equal, Numbers, true>>("equal"),
      pc::kernel<Binary<NotEqual, Numbers, true>>("not_equal"),
      pc::kernel<Binary<Less, Numbers, true>>("less"),
      pc::kernel<Binary<LessEqual, Numbers, true>>("less_equal"),
      pc::kernel<Binary<Greater, Numbers, true>>("greater"),
      pc::kernel<Binary<GreaterEqual, Numbers, true>>("greater_equal"),
      pc::kernel<BinaryGrad<GradOne, GradOne, Floats>>("add_grad"),
      pc::kernel<BinaryGrad<GradOne, GradNeg, Floats>>("sub_grad"),
      pc::kernel<BinaryGrad<GradMulX, GradMulY, Floats>>("mul_grad"),
      pc::kernel<BinaryGrad<GradDivX, GradDivY, Floats>>("div_grad"),
      pc::kernel<BinaryGrad<GradPowX, GradPowY, Floats>>("pow_grad"),
      pc::kernel<BinaryGrad<GradMaxX, GradMaxY, Floats>>("maximum_grad"),
      pc::kernel<BinaryGrad<GradMinX, GradMinY, Floats>>("minimum_grad"),
  };
  return family;
}

}  // namespace pom
