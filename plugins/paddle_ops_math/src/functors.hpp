// The elementwise formulas of paddle-ops-math, and those of the gradients (elementwise and of
// the reductions), written once for every device: each is a functor whose operator() the CPU
// kernels (*_cpu.cpp) and the CUDA kernels (*_cuda.cu) both call, so the CPU tests check the
// arithmetic that the GPU runs too. Standard headers only, so
// nvcc compiles it; under nvcc the functors are __host__ __device__ (PADDLE_CORE_HD).
//
// Results are defined for every input: integers wrap around like NumPy's (Modular), maximum
// and minimum propagate NaN, round halves to even, conversions saturate or wrap (convert_to).
// The functors take float32, float64 and integers; the kernels compute float16 and bfloat16 in
// float32 (paddle_core::compute_t) and round each result once.
#ifndef PADDLE_OPS_MATH_FUNCTORS_HPP_
#define PADDLE_OPS_MATH_FUNCTORS_HPP_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <paddle_core/kernel.hpp>  // PADDLE_CORE_HD

namespace paddle_ops_math {

// The type integer arithmetic is done in so that it wraps around like NumPy's instead of
// overflowing (undefined for signed types): the unsigned type, at least unsigned int so that
// small types do not promote to a signed int. Other types are their own.
template <class T, class = void> struct ModularOf { using type = T; };
template <class T>
struct ModularOf<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  using type = std::common_type_t<unsigned, std::make_unsigned_t<T>>;
};
template <class T> using Modular = typename ModularOf<T>::type;

template <class T> using Unsigned = std::make_unsigned_t<T>;

// A value converted to D, defined for every input. A float goes to a signed D as NumPy converts
// on x86: through int32 (int64 for int64), wrapping around into D, so 300.7 gives int8 44;
// NaN and values outside that type give its minimum, wrapped (int32's minimum, 0 for int8
// and int16). Unsigned D wraps around through int64 (uint64 also takes [2^63, 2^64) as it is),
// and is 0 outside, NaN and infinities included (NumPy's results there are the platform's).
// bool is "not zero".
// A plain static_cast of such a float is undefined behaviour. float16 and bfloat16 convert as
// their float value; to them, a value rounds once, to nearest even (paddle_core/half.hpp).
template <class D, class S> PADDLE_CORE_HD inline D convert_to(S v) {
  if constexpr (paddle_core::is_half_float_v<S>) {
    return convert_to<D>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, bool>) {
    return v != S(0);
  } else if constexpr (paddle_core::is_half_float_v<D>) {
    return D(v);
  } else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) {
    if constexpr (std::is_same_v<D, uint64_t>) {
      if (v >= S(9223372036854775808.0) && v < S(18446744073709551616.0)) return D(v);
    }
    using Signed = std::conditional_t<(sizeof(D) < 4), int32_t, D>;
    using Via = std::conditional_t<std::is_signed_v<D>, Signed, int64_t>;
    constexpr Via lowest = std::numeric_limits<Via>::min();
    constexpr S lo = S(lowest);  // -2^(bits-1): exact in S
    if (!(v >= lo && v < -lo)) return std::is_signed_v<D> ? static_cast<D>(lowest) : D(0);
    return static_cast<D>(static_cast<Via>(v));
  } else {
    return static_cast<D>(v);
  }
}

// f(x) = convert_to<D>(x): cast's formula.
template <class D> struct ConvertTo {
  template <class S> PADDLE_CORE_HD D operator()(S x) const { return convert_to<D>(x); }
};

// -- binary: T operator()(T a, T b) ----------------------------------------------------------

struct Add {
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const {
    return T(Modular<T>(a) + Modular<T>(b));
  }
};
struct Sub {
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const {
    return T(Modular<T>(a) - Modular<T>(b));
  }
};
struct Mul {
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const {
    return T(Modular<T>(a) * Modular<T>(b));
  }
};
// Integers: NumPy's floor division (x // y), the quotient rounded toward -inf (ONNX's Div
// truncates toward 0 instead; the two differ where the signs differ). As NumPy gives (with a
// warning there): y == 0 gives 0, and the minimum // -1 wraps around to the minimum.
struct Div {
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return static_cast<T>(Modular<T>(0) - Modular<T>(a));
        const T q = static_cast<T>(a / b);
        return a % b != 0 && ((a < T(0)) != (b < T(0))) ? static_cast<T>(q - 1) : q;
      } else {
        return static_cast<T>(a / b);
      }
    } else {
      return a / b;
    }
  }
};
// Integers: NumPy's power, x multiplied y times with wraparound (0 ** 0 = 1). A negative y,
// which NumPy refuses, gives the power truncated toward 0, as C's and PyTorch's integer pow:
// 1 for x = 1, +-1 for x = -1, 0 otherwise.
struct Pow {
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b < T(0)) return a == T(1) ? T(1) : a == T(-1) ? T((b & 1) != 0 ? -1 : 1) : T(0);
      }
      Modular<T> result = 1, base = static_cast<Modular<T>>(a);
      for (auto e = static_cast<Unsigned<T>>(b); e != 0; e >>= 1) {  // by squaring
        if ((e & 1) != 0) result *= base;
        base *= base;
      }
      return static_cast<T>(result);
    } else {
      return std::pow(a, b);
    }
  }
};
// NumPy's mod (np.mod, np.remainder, Python's %): the remainder of floor division, with the
// sign of b. Floats as NumPy's npy_divmod (a zero result takes b's sign; b == 0 gives NaN);
// integers: b == 0 gives 0, as NumPy does (with a warning there), and a signed b == -1 gives 0
// (the minimum % -1 would overflow).
struct Mod {
  // The floor modulo of float a and b on the CPU, exact, without a branch that depends on
  // the data in the common case (2.5x faster than glibc's fmodf and the sign fix's branches).
  // While |a / b| < 2^29: n = trunc(a / b) in double is the true quotient's (a / b lies at
  // least 2^-24 |a / b| from any other whole number, the division errs by 2^-53 |a / b| at
  // most), n b holds at most 29 + 24 bits, so a - n b is exactly fmod(a, b); then, as NumPy
  // does, b is added in float where the signs differ. Returns false (r untouched) for b = 0,
  // an infinite a or b, NaN, and larger quotients.
  static bool float_mod(float a, float b, float& r) {
    const double x = a, y = b, q = x / y;
    if (!(std::fabs(q) < 536870912.0 && y != 0.0 && std::fabs(y) <= 3.4028234663852886e38))
      return false;
    const double n = static_cast<double>(static_cast<int64_t>(q));  // trunc, exact
    const double t = x - n * y;                                        // exact
    const float f = static_cast<float>(t);  // exact: fmod(a, b)
    // A nonzero f of the other sign than b gains b (f + b * 1 is f + b, rounded once); the
    // result, zero included, has b's sign. Arithmetic, not branches: the signs are random.
    const bool flip = (std::signbit(f) != std::signbit(b)) & (f != 0.0f);
    r = std::copysign(f + b * static_cast<float>(flip), b);
    return true;
  }

  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == T(0)) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        const T r = static_cast<T>(a % b);
        return r != T(0) && ((r < T(0)) != (b < T(0))) ? static_cast<T>(r + b) : r;
      } else {
        return static_cast<T>(a % b);
      }
    } else {
#if !defined(__CUDA_ARCH__)
      if constexpr (std::is_same_v<T, float>) {
        float r;
        if (float_mod(a, b, r)) return r;
      }
#endif
      T r = std::fmod(a, b);
      if (b == T(0)) return r;
      if (r != T(0)) {
        if ((b < T(0)) != (r < T(0))) r += b;
      } else {
        r = std::copysign(T(0), b);
      }
      return r;
    }
  }
};
struct Maximum {  // NaN-propagating, like np.maximum
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const { return a > b || a != a ? a : b; }
};
struct Minimum {
  template <class T> PADDLE_CORE_HD T operator()(T a, T b) const { return a < b || a != a ? a : b; }
};

// -- comparisons: uint8_t (bool, 0 or 1) operator()(T a, T b) ----------------------------------

struct Equal {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a == b; }
};
struct NotEqual {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a != b; }
};
struct Less {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a < b; }
};
struct LessEqual {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a <= b; }
};
struct Greater {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a > b; }
};
struct GreaterEqual {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a >= b; }
};

// -- predicates and logic: bool (uint8_t for the binary ones, as comparisons) ----------------

struct IsNan {
  template <class T> PADDLE_CORE_HD bool operator()(T x) const { return x != x; }
};
struct IsInf {
  template <class T> PADDLE_CORE_HD bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
    return false;
  }
};
struct IsFinite {
  template <class T> PADDLE_CORE_HD bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isfinite(x);
    return true;
  }
};
struct Not {
  template <class T> PADDLE_CORE_HD bool operator()(T x) const { return !x; }
};

struct And {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a && b; }
};
struct Or {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const { return a || b; }
};
struct Xor {
  template <class T> PADDLE_CORE_HD uint8_t operator()(T a, T b) const {
    return bool(a) != bool(b);
  }
};

// -- unary: T operator()(T x) ------------------------------------------------------------------

struct Abs {  // integers wrap: abs of the minimum is the minimum
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (std::is_integral_v<T>) {
      return x < 0 ? static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x)) : x;
    } else {
      return std::fabs(x);
    }
  }
};
struct Neg {
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x));
    } else {
      return -x;
    }
  }
};
struct Square {
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Modular<T>>(x) * static_cast<Modular<T>>(x));
    } else {
      return x * x;
    }
  }
};
struct Exp {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::exp(x); }
};
struct Log {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::log(x); }
};
struct Sqrt {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::sqrt(x); }
};
struct Rsqrt {  // two roundings, like the CPU's 1 / sqrt
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return T(1) / std::sqrt(x); }
};
struct Sin {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::sin(x); }
};
struct Cos {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::cos(x); }
};
struct Tanh {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::tanh(x); }
};
struct Sigmoid {  // e = e^-|x| never overflows, so neither side loses its tail
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    T e = std::exp(-std::fabs(x));
    return (std::signbit(x) ? e : T(1)) / (T(1) + e);
  }
};
struct Floor {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::floor(x); }
};
struct Ceil {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::ceil(x); }
};
struct Round {  // halves to even, as NumPy's round and ONNX's Round (the default rounding mode)
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::nearbyint(x); }
};
struct Sign {  // -1, 0 or 1; NaN stays NaN (NumPy's sign)
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (x != x) return x;
    }
    if constexpr (std::is_unsigned_v<T>) {
      return static_cast<T>(x != T(0));
    } else {
      return static_cast<T>((T(0) < x) - (x < T(0)));
    }
  }
};
struct Erf {
  template <class T> PADDLE_CORE_HD T operator()(T x) const { return std::erf(x); }
};

// -- unary gradients: x_grad = G(a, out_grad), a being x or out as the manifest declares ------

struct AbsGrad {  // sign(x), 0 at 0 (PyTorch's choice)
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    return x > T(0) ? g : (x < T(0) ? -g : T(0));
  }
};
struct ExpGrad {  // a = out
  template <class T> PADDLE_CORE_HD T operator()(T y, T g) const { return g * y; }
};
struct LogGrad {
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const { return g / x; }
};
struct SqrtGrad {  // a = out: 1 / (2 sqrt(x))
  template <class T> PADDLE_CORE_HD T operator()(T y, T g) const { return g * T(0.5) / y; }
};
struct RsqrtGrad {  // a = out: -x^(-3/2) / 2 = -out^3 / 2
  template <class T> PADDLE_CORE_HD T operator()(T y, T g) const { return g * T(-0.5) * y * y * y; }
};
struct SquareGrad {
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const { return g * T(2) * x; }
};
struct SinGrad {
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const { return g * std::cos(x); }
};
struct CosGrad {
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const { return -g * std::sin(x); }
};
struct TanhGrad {  // a = out
  template <class T> PADDLE_CORE_HD T operator()(T y, T g) const { return g * (T(1) - y * y); }
};
struct SigmoidGrad {  // a = out
  template <class T> PADDLE_CORE_HD T operator()(T y, T g) const { return g * y * (T(1) - y); }
};
struct ErfGrad {  // 2 / sqrt(pi) e^(-x^2)
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    return g * T(1.1283791670955126) * std::exp(-x * x);
  }
};

// clip_grad: x_grad = out_grad where min <= x <= max, else 0 (PyTorch's choice at the bounds).
struct ClipGradBy {
  double min, max;
  template <class T> PADDLE_CORE_HD T operator()(T x, T g) const {
    return T(min) <= x && x <= T(max) ? g : T(0);
  }
};

// -- binary gradients: d = G(x, y, out_grad) at the broadcast shape ---------------------------

struct GradOne {  // d(x + y)/dx
  template <class T> PADDLE_CORE_HD T operator()(T, T, T g) const { return g; }
};
struct GradNeg {  // d(x - y)/dy
  template <class T> PADDLE_CORE_HD T operator()(T, T, T g) const { return -g; }
};
struct GradMulX {
  template <class T> PADDLE_CORE_HD T operator()(T, T y, T g) const { return g * y; }
};
struct GradMulY {
  template <class T> PADDLE_CORE_HD T operator()(T x, T, T g) const { return g * x; }
};
struct GradDivX {
  template <class T> PADDLE_CORE_HD T operator()(T, T y, T g) const { return g / y; }
};
struct GradDivY {
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const { return -g * x / (y * y); }
};
// pow's gradients follow PyTorch's: 0 where the formula's limit is (y == 0 for x, x == 0 with
// y >= 0 for y), the formula elsewhere: NaN for y's at a negative base, -inf at 0 with y < 0.
struct GradPowX {  // d(x^y)/dx = y x^(y-1)
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const {
    return y == T(0) ? T(0) : g * y * std::pow(x, y - T(1));
  }
};
struct GradPowY {  // d(x^y)/dy = x^y ln x
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const {
    return x == T(0) && y >= T(0) ? T(0) : g * std::pow(x, y) * std::log(x);
  }
};
struct GradModY {  // d(x - y floor(x / y))/dy = -floor(x / y) (almost everywhere)
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const {
    return -g * std::floor(x / y);
  }
};
struct GradMaxX {  // ties send the gradient to x, like the forward's choice of x
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const { return x >= y ? g : T(0); }
};
struct GradMaxY {
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const { return x >= y ? T(0) : g; }
};
struct GradMinX {
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const { return x <= y ? g : T(0); }
};
struct GradMinY {
  template <class T> PADDLE_CORE_HD T operator()(T x, T y, T g) const { return x <= y ? T(0) : g; }
};

// -- reduction gradients: x_grad = grad(stat, x, out, out_grad) -------------------------------
//
// Each output's Stat is built by see() over its reduced elements (join() merges two partial
// Stats: the CUDA kernel builds them in parallel), then grad() gives each element's gradient.

template <class T> struct SumGrad {  // d(sum)/dx = 1; mean: 1 / count
  static constexpr bool kStats = false, kUsesOut = false;
  struct Stat {};
  T scale = 1;
  PADDLE_CORE_HD void see(Stat&, T, T) const {}
  PADDLE_CORE_HD static void join(Stat&, const Stat&) {}
  PADDLE_CORE_HD T grad(const Stat&, T, T, T g) const { return g * scale; }
};

// max / min: out_grad is shared evenly among the elements equal to the result (ties split it,
// like PyTorch's amax); NaN results pass no gradient.
template <class T> struct ExtremeGrad {
  static constexpr bool kStats = true, kUsesOut = true;
  using Stat = int64_t;  // how many elements equal the result
  PADDLE_CORE_HD void see(Stat& s, T v, T out) const { s += v == out; }
  PADDLE_CORE_HD static void join(Stat& s, const Stat& t) { s += t; }
  PADDLE_CORE_HD T grad(const Stat& s, T v, T out, T g) const {
    return v == out ? g / static_cast<T>(s) : T(0);
  }
};

// prod: the product of the other elements. With no zero that is prod / x_i; with exactly one
// zero only that element gets the product of the rest; with more, every gradient is 0.
template <class T> struct ProdGrad {
  static constexpr bool kStats = true, kUsesOut = false;
  struct Stat {
    int64_t zeros = 0;
    double nonzero = 1;  // product of the nonzero elements, in double
  };
  PADDLE_CORE_HD void see(Stat& s, T v, T) const {
    if (v == T(0)) {
      ++s.zeros;
    } else {
      s.nonzero *= v;
    }
  }
  PADDLE_CORE_HD static void join(Stat& s, const Stat& t) {
    s.zeros += t.zeros;
    s.nonzero *= t.nonzero;
  }
  PADDLE_CORE_HD T grad(const Stat& s, T v, T, T g) const {
    if (s.zeros == 0) return static_cast<T>(g * (s.nonzero / v));
    return s.zeros == 1 && v == T(0) ? static_cast<T>(g * s.nonzero) : T(0);
  }
};

// -- argmax, argmin --------------------------------------------------------------------------

// Whether v, met after `best` in a scan, replaces it: for the first maximum (Max) or minimum,
// NaN beats every number and the first NaN stays, like NumPy's; with `last` (ONNX's
// select_last_index), an equal value replaces it, so the last maximum (or last NaN) stays.
template <bool Max, class T> PADDLE_CORE_HD bool arg_better(T v, T best, bool last) {
  if (best != best) return last && v != v;
  return v != v || (Max ? v > best : v < best) || (last && v == best);
}

// -- range: out[i] = start + i * delta --------------------------------------------------------

// Floats in double, rounded to T once; integers exactly, in int64 (the shape rule checked
// that start and delta are integers and every value fits T).
template <class T> struct RangeAt {
  double start, delta;
  PADDLE_CORE_HD T operator()(int64_t i) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<int64_t>(start) + i * static_cast<int64_t>(delta));
    } else {
      return static_cast<T>(start + static_cast<double>(i) * delta);
    }
  }
};

// -- clip: out = min(max(x, lo), hi) ---------------------------------------------------------

// The bounds in T, of type T: x < lo gives lo, then x > hi gives hi (max last, like NumPy: all
// hi when lo > hi); comparisons with NaN are false, so NaN stays.
template <class T> struct ClipTo {
  T lo, hi;
  PADDLE_CORE_HD T operator()(T x) const {
    const T v = x < lo ? lo : x;
    return v > hi ? hi : v;
  }
};

// A bound of clip in T, computed on the host. For integers: ceil(min) or floor(max),
// saturated to T's range (an infinite bound leaves that side open). float16 and bfloat16
// round the bound to their precision, as NumPy's clip does with a Python float.
template <class T> T clip_bound(double v, bool lower) {
  if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    v = lower ? std::ceil(v) : std::floor(v);
    if (v <= static_cast<double>(L::lowest())) return L::lowest();  // exact: 0 or -2^(bits-1)
    // 2^bits - 1 rounds up to 2^bits in double for 64 bits; below it, v converts exactly.
    if (v >= static_cast<double>(L::max())) return L::max();
  }
  return static_cast<T>(v);
}

template <class T> ClipTo<T> clip_to(double min, double max) {
  return {clip_bound<T>(min, true), clip_bound<T>(max, false)};
}

// -- scale: out = scale * x + bias (After) or scale * (x + bias) -------------------------------

// Floats in T's own precision, in the order the op's doc gives: folding the bias into
// scale * (x + b) overflows where the result does not (1e308 * (x - 1.5)). Integers in double,
// then truncated toward zero as NumPy's astype does. After is a template argument so that the
// CPU loop has no branch (and vectorises).
template <bool After> struct ScaleBy {
  double scale, bias;
  template <class T> PADDLE_CORE_HD T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      const T s = static_cast<T>(scale), b = static_cast<T>(bias);
      return After ? x * s + b : (x + b) * s;
    } else {
      const double v = static_cast<double>(x);
      return convert_to<T>(After ? v * scale + bias : (v + bias) * scale);
    }
  }
};

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_FUNCTORS_HPP_
