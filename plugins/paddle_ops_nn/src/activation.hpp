// The activation formulas and their gradients, written once for every device: each is a
// functor built from the op's attrs (on the host) whose operator() the CPU kernels
// (activation_cpu.cpp) and the CUDA kernels (activation_cuda.cu) both call, plus the checks
// both prepares run. Under nvcc the operators are __host__ __device__ (PADDLE_CORE_HD).
//
// Every formula is evaluated in the tensor's dtype and stays finite for every finite x: the
// logistic function is computed from e^-|x| (which never overflows), softplus as
// max(x, 0) + log1p(e^-|beta x|) / beta, the exact gelu from erfc (no cancellation in 1 + erf
// for x < 0), and the tanh gelu as x * sigmoid(2u) (0.5 (1 + tanh u) without cancellation).
#ifndef PADDLE_OPS_NN_ACTIVATION_HPP_
#define PADDLE_OPS_NN_ACTIVATION_HPP_

#include <cmath>

#include "common.hpp"

namespace paddle_ops_nn {

constexpr double kSqrtHalf = 0.70710678118654752440;       // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;     // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;    // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;                    // the tanh gelu's cubic coefficient

// sigmoid(x) = 1 / (1 + e^-x) and sigmoid(-x) = 1 - sigmoid(x), each without cancellation:
// e = e^-|x| is in [0, 1], so neither overflows and the smaller keeps its tail.
template <class T> struct Logistic {
  T p, q;  // sigmoid(x), sigmoid(-x)
};
template <class T> PADDLE_CORE_HD Logistic<T> logistic(T x) {
  const T e = std::exp(-std::fabs(x));
  const T r = T(1) / (T(1) + e);
  return std::signbit(x) ? Logistic<T>{e * r, r} : Logistic<T>{r, e * r};
}

// The tanh gelu's 2u = 2 sqrt(2/pi) (x + 0.044715 x^3), so that 0.5 (1 + tanh u) = sigmoid(2u).
template <class T> PADDLE_CORE_HD T gelu_2u(T x) {
  return T(2 * kSqrt2OverPi) * x * (T(1) + T(kGeluCubic) * x * x);
}

// -- forward functors: T operator()(T x) -----------------------------------------------------

struct Relu {  // NaN stays NaN, as in NumPy and PyTorch
  explicit Relu(const Attrs&) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

struct Relu6 {  // min(max(x, 0), threshold); NaN stays NaN
  explicit Relu6(const Attrs& attrs) : threshold(attrs.f("threshold")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    const T t = T(threshold);
    return x < T(0) ? T(0) : (x > t ? t : x);
  }
  double threshold;
};

struct Hardswish {  // x relu6(x + 3) / 6, PyTorch's and MobileNetV3's; NaN stays NaN
  explicit Hardswish(const Attrs&) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    return x <= T(-3) ? T(0) : (x >= T(3) ? x : x * (x + T(3)) / T(6));
  }
};

struct Hardsigmoid {  // min(max(slope x + offset, 0), 1); NaN stays NaN
  explicit Hardsigmoid(const Attrs& attrs) : slope(attrs.f("slope")), offset(attrs.f("offset")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    const T y = T(slope) * x + T(offset);
    return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
  }
  double slope, offset;
};

struct LeakyRelu {
  explicit LeakyRelu(const Attrs& attrs) : alpha(attrs.f("alpha")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    const T a = T(alpha);  // converted before the select: one that converts in an arm is a branch
    return x > T(0) ? x : a * x;
  }
  double alpha;
};

struct Gelu {  // x Phi(x), Phi(x) = erfc(-x / sqrt 2) / 2; or x sigmoid(2u) (tanh approximation)
  explicit Gelu(const Attrs& attrs) : approximate(attrs.b("approximate")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    if (approximate) return x * logistic(gelu_2u(x)).p;
    return T(0.5) * x * std::erfc(-x * T(kSqrtHalf));
  }
  bool approximate;
};

struct Elu {  // expm1 keeps alpha (e^x - 1) accurate near 0
  explicit Elu(const Attrs& attrs) : alpha(attrs.f("alpha")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    return x > T(0) ? x : T(alpha) * std::expm1(x);
  }
  double alpha;
};

// log(1 + e^z) / beta, z = beta x, as max(x, 0) + log1p(e^-|z|) / beta; x above the threshold.
struct Softplus {
  explicit Softplus(const Attrs& attrs)
      : beta(attrs.f("beta")), threshold(attrs.f("threshold")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    const T z = T(beta) * x;
    if (z > T(threshold)) return x;
    return (x > T(0) ? x : T(0)) + std::log1p(std::exp(-std::fabs(z))) / T(beta);
  }
  double beta, threshold;
};

struct Silu {
  explicit Silu(const Attrs&) {}
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return x * logistic(x).p; }
};

// -- gradient functors: T operator()(T v, T g), v being what the grad op reads (x or out) -----

struct ReluGrad {  // from out: out > 0 exactly where x > 0
  explicit ReluGrad(const Attrs&) {}
  template <class T> PADDLE_CORE_HD T operator()(T out, T g) const { return out > T(0) ? g : T(0); }
};

// The gradients on an interval test both ends with `&`, not `&&`: GCC kept the short circuit
// as a branch per element, and relu6_grad ran seven times slower than relu_grad.

struct Relu6Grad {  // from out: 0 < out < threshold exactly where 0 < x < threshold
  explicit Relu6Grad(const Attrs& attrs) : threshold(attrs.f("threshold")) {}
  template <class T> PADDLE_CORE_HD T operator()(T out, T g) const {
    const T t = T(threshold);
    return (out > T(0)) & (out < t) ? g : T(0);
  }
  double threshold;
};

struct HardswishGrad {  // from x: 0 below -3, 1 above 3, (2x + 3) / 6 between, as PyTorch
  explicit HardswishGrad(const Attrs&) {}
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    if (x < T(-3)) return T(0);
    return x <= T(3) ? g * (x / T(3) + T(0.5)) : g;
  }
};

struct HardsigmoidGrad {  // from out: with slope > 0, 0 < out < 1 exactly on the slope
  explicit HardsigmoidGrad(const Attrs& attrs) : slope(attrs.f("slope")) {}
  template <class T> PADDLE_CORE_HD T operator()(T out, T g) const {
    const T s = T(slope);
    return (out > T(0)) & (out < T(1)) ? s * g : T(0);
  }
  double slope;
};

struct LeakyReluGrad {  // from out: with alpha >= 0, out > 0 exactly where x > 0 (alpha = 0 too)
  explicit LeakyReluGrad(const Attrs& attrs) : alpha(attrs.f("alpha")) {}
  template <class T> PADDLE_CORE_HD T operator()(T out, T g) const {
    const T a = T(alpha);
    return out > T(0) ? g : a * g;
  }
  double alpha;
};

struct GeluGrad {  // Phi(x) + x phi(x); tanh: s + x s (1 - s) d(2u)/dx, s = sigmoid(2u)
  explicit GeluGrad(const Attrs& attrs) : approximate(attrs.b("approximate")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    if (approximate) {
      const Logistic<T> s = logistic(gelu_2u(x));
      const T pq = s.p * s.q;  // 0 once |2u| is large: skip d(2u)/dx, which may be inf
      const T du = T(2 * kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * x * x);
      return g * (pq == T(0) ? s.p : s.p + x * pq * du);
    }
    const T cdf = T(0.5) * std::erfc(-x * T(kSqrtHalf));
    return g * (cdf + x * T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x));
  }
  bool approximate;
};

// From out: with alpha >= 0, out > 0 exactly where x > 0 (alpha = 0 too), and below it
// alpha e^x = out + alpha, to within half an ulp of alpha (so only the tiny values far below
// 0 lose relative accuracy: the price of allowing elu in place).
struct EluGrad {
  explicit EluGrad(const Attrs& attrs) : alpha(attrs.f("alpha")) {}
  template <class T> PADDLE_CORE_HD T operator()(T out, T g) const {
    const T a = T(alpha);
    return out > T(0) ? g : g * (out + a);
  }
  double alpha;
};

struct SoftplusGrad {  // sigmoid(beta x), or 1 where beta x > threshold (out = x there)
  explicit SoftplusGrad(const Attrs& attrs)
      : beta(attrs.f("beta")), threshold(attrs.f("threshold")) {}
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    const T z = T(beta) * x;
    return z > T(threshold) ? g : g * logistic(z).p;
  }
  double beta, threshold;
};

struct SiluGrad {  // sigmoid(x) (1 + x (1 - sigmoid(x)))
  explicit SiluGrad(const Attrs&) {}
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    const Logistic<T> s = logistic(x);
    return g * s.p * (T(1) + x * s.q);
  }
};

// -- the checks of prepare -------------------------------------------------------------------

// out = F(x): x and out of one shape and a float dtype.
inline void check_map(const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  expect_same_shape(x, o, "x and out");
  expect_same_dtype(x, o, "x and out");
  dispatch(x.dtype(), Floats{}, [](auto) {});  // refuse other dtypes here, not in run
}

// x_grad = G(v, out_grad): v (x or out), out_grad and x_grad of one shape and a float dtype.
inline void check_grad_map(const Slots& in, const Slots& out) {
  Tensor v = in(0), g = in(1), dx = out(0);
  expect_same_shape(v, g, "the forward value and out_grad");
  expect_same_shape(v, dx, "the forward value and x_grad");
  expect_same_dtype(v, g, "the forward value and out_grad");
  expect_same_dtype(v, dx, "the forward value and x_grad");
  dispatch(v.dtype(), Floats{}, [](auto) {});
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_ACTIVATION_HPP_
