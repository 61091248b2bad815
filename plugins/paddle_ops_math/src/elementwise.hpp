// Shapes and dtypes of the elementwise ops, shared by every device: how two inputs broadcast
// (plan_broadcast) and the prepare-time checks of the binary, comparison, unary and fill-family
// kernels, so the CPU and CUDA kernels of an op accept exactly the same tensors. Needs only the
// SDK's kernel.hpp, so nvcc compiles it too.
#ifndef PADDLE_OPS_MATH_ELEMENTWISE_HPP_
#define PADDLE_OPS_MATH_ELEMENTWISE_HPP_

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

using paddle_core::fail;
using paddle_core::Slots;
using paddle_core::Tensor;

// How two inputs broadcast to an output, decided once at prepare time. Dimensions where
// all three agree on contiguity are merged, so most cases become a single flat loop.
struct Broadcast {
  enum Kind { kSame, kScalarA, kScalarB, kGeneral } kind = kSame;
  int64_t numel = 0;
  // kGeneral only: merged output dims (outermost first) and per-input strides (0: broadcast).
  std::vector<int64_t> dims, stride_a, stride_b;
};

// Element strides of a and b for each dim of out (right-aligned; 0 where the input is
// broadcast along it), failing unless both broadcast to out.
inline void broadcast_strides(const Tensor& a, const Tensor& b, const Tensor& out,
                              std::vector<int64_t>& sa, std::vector<int64_t>& sb) {
  const int32_t nd = out.ndim();
  if (a.ndim() > nd || b.ndim() > nd) fail("inputs have more dimensions than the output");
  // Right-aligned input extents (1 for missing leading dims).
  std::vector<int64_t> ea(nd, 1), eb(nd, 1);
  sa.assign(nd, 0);
  sb.assign(nd, 0);
  for (int32_t k = 0; k < a.ndim(); ++k) ea[nd - a.ndim() + k] = a.dim(k);
  for (int32_t k = 0; k < b.ndim(); ++k) eb[nd - b.ndim() + k] = b.dim(k);
  int64_t ra = 1, rb = 1;
  for (int32_t k = nd - 1; k >= 0; --k) {
    int64_t o = out.dim(k);
    if ((ea[k] != o && ea[k] != 1) || (eb[k] != o && eb[k] != 1))
      fail("shapes %s and %s do not broadcast to %s", a.describe().c_str(),
           b.describe().c_str(), out.describe().c_str());
    sa[k] = ea[k] == 1 ? 0 : ra;
    sb[k] = eb[k] == 1 ? 0 : rb;
    ra *= ea[k];
    rb *= eb[k];
  }
}

inline Broadcast plan_broadcast(const Tensor& a, const Tensor& b, const Tensor& out) {
  Broadcast p;
  p.numel = out.numel();
  const int32_t nd = out.ndim();
  std::vector<int64_t> sa, sb;
  broadcast_strides(a, b, out, sa, sb);
  if (p.numel == 0) return p;  // nothing to compute (and no extent to divide by below)
  if (a.numel() == p.numel && b.numel() == p.numel) return p;  // same shape
  if (a.numel() == 1) return p.kind = Broadcast::kScalarA, p;
  if (b.numel() == 1) return p.kind = Broadcast::kScalarB, p;
  p.kind = Broadcast::kGeneral;
  // Merge adjacent dims whose strides compose (innermost first), dropping size-1 dims.
  for (int32_t k = nd - 1; k >= 0; --k) {
    int64_t o = out.dim(k);
    if (o == 1) continue;
    if (!p.dims.empty() && p.stride_a.back() * p.dims.back() == sa[k] &&
        p.stride_b.back() * p.dims.back() == sb[k] &&
        ((sa[k] == 0) == (p.stride_a.back() == 0)) && ((sb[k] == 0) == (p.stride_b.back() == 0))) {
      p.dims.back() *= o;
      continue;
    }
    p.dims.push_back(o);
    p.stride_a.push_back(sa[k]);
    p.stride_b.push_back(sb[k]);
  }
  std::reverse(p.dims.begin(), p.dims.end());
  std::reverse(p.stride_a.begin(), p.stride_a.end());
  std::reverse(p.stride_b.begin(), p.stride_b.end());
  return p;
}

// Check binary op's x, y and out (out has x's dtype, or bool for comparisons) and plan how
// they broadcast.
inline Broadcast check_binary(const Slots& in, const Slots& out, bool bool_out) {
  Tensor x = in(0), y = in(1), o = out(0);
  paddle_core::expect_same_dtype(x, y, "x and y");
  o.expect_dtype(bool_out ? PC_BOOL : x.dtype(), "out");
  return plan_broadcast(x, y, o);
}

// The dtypes of cast, fill and assign (fill.pbtxt): every one.
using paddle_core::AllTypes;

// Check a unary op's x and out: one shape, one dtype (also scale and assign).
inline void check_unary(const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  paddle_core::expect_same_shape(x, o, "x and out");
  o.expect_dtype(x.dtype(), "out");
}

// Check a unary grad op's inputs (a, out_grad), a being x or out, and x_grad: one shape,
// one dtype.
inline void check_unary_grad(const Slots& in, const Slots& out) {
  Tensor a = in(0), g = in(1), dx = out(0);
  paddle_core::expect_same_dtype(a, g, "forward tensor and out_grad");
  paddle_core::expect_same_shape(a, g, "forward tensor and out_grad");
  paddle_core::expect_same_shape(g, dx, "out_grad and x_grad");
  dx.expect_dtype(g.dtype(), "x_grad");
}

// Check clip's bounds (clip and clip_grad): not NaN. min > max is allowed: every element
// becomes max, as in NumPy and ONNX (ClipTo applies max last).
inline void check_clip_bounds(double min, double max) {
  if (min != min || max != max)
    fail("clip's bounds must not be NaN, got min=%g, max=%g", min, max);
}

// Check clip's bounds, x and out.
inline void check_clip(const paddle_core::Attrs& attrs, const Slots& in, const Slots& out) {
  check_clip_bounds(attrs.f("min"), attrs.f("max"));
  paddle_core::expect_same_shape(in(0), out(0), "x and out");
  out(0).expect_dtype(in(0).dtype(), "out");
}

// Check clip_grad's bounds, x, out_grad and x_grad.
inline void check_clip_grad(const paddle_core::Attrs& attrs, const Slots& in, const Slots& out) {
  check_clip_bounds(attrs.f("min"), attrs.f("max"));
  paddle_core::expect_same_shape(in(0), in(1), "x and out_grad");
  paddle_core::expect_same_dtype(in(0), in(1), "x and out_grad");
  paddle_core::expect_same_shape(in(0), out(0), "x and x_grad");
  out(0).expect_dtype(in(0).dtype(), "x_grad");
}

// Check a binary grad op's x, y, out_grad and its outputs x_grad, y_grad (either may be
// absent); how out_grad broadcasts against each input is the kernel's to plan.
inline void check_binary_grad(const Slots& in, const Slots& out) {
  Tensor x = in(0), y = in(1), g = in(2);
  paddle_core::expect_same_dtype(x, y, "x and y");
  paddle_core::expect_same_dtype(x, g, "x and out_grad");
  if (out.has(0)) paddle_core::expect_same_shape(out(0), x, "x_grad and x");
  if (out.has(1)) paddle_core::expect_same_shape(out(1), y, "y_grad and y");
}

// Check add_n's inputs (one or more) and out: one shape, one dtype (as the core's CPU kernel).
inline void check_add_n(const Slots& in, const Slots& out) {
  if (in.size(0) < 1) fail("add_n needs at least one input");
  for (int32_t k = 0; k < in.size(0); ++k) {
    paddle_core::expect_same_shape(in(0, k), out(0), "xs and out");
    paddle_core::expect_same_dtype(in(0, k), out(0), "xs and out");
  }
}

// Check a predicate's (isnan, logical_not, ...) x and out: one shape, out bool.
inline void check_predicate(const Slots& in, const Slots& out) {
  paddle_core::expect_same_shape(in(0), out(0), "x and out");
  out(0).expect_dtype(PC_BOOL, "out");
}

// Check where's cond (bool), x, y and out (x's dtype), each input broadcasting to out's shape;
// returns each input's element strides along out's dims (0 where it is broadcast).
inline std::array<std::vector<int64_t>, 3> check_where(const Slots& in, const Slots& out) {
  const Tensor o = out(0);
  in(0).expect_dtype(PC_BOOL, "cond");
  paddle_core::expect_same_dtype(in(1), in(2), "x and y");
  o.expect_dtype(in(1).dtype(), "out");
  static constexpr const char* kNames[3] = {"cond", "x", "y"};
  std::array<std::vector<int64_t>, 3> strides;
  const int nd = o.ndim();
  for (int k = 0; k < 3; ++k) {
    const Tensor t = in(k);
    const int lead = nd - t.ndim();
    if (lead < 0) fail("%s %s has more dimensions than out", kNames[k], t.describe().c_str());
    strides[k].assign(static_cast<size_t>(nd), 0);
    int64_t step = 1;
    for (int d = nd - 1; d >= lead; --d) {
      const int64_t n = t.dim(d - lead);
      if (n != 1 && n != o.dim(d))
        fail("%s %s does not broadcast to out %s", kNames[k], t.describe().c_str(),
             o.describe().c_str());
      strides[k][static_cast<size_t>(d)] = n == 1 ? 0 : step;
      step *= n;
    }
  }
  return strides;
}

// Check cast's x and out: one shape (the dtypes are dispatch's to check).
inline void check_cast(const Slots& in, const Slots& out) {
  paddle_core::expect_same_shape(in(0), out(0), "x and out");
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_ELEMENTWISE_HPP_
