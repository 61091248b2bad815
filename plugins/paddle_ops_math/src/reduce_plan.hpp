// How a reduction folds x into out, planned in prepare, and the prepare checks of the reduction
// kernels and their gradients: shared by the CPU kernels (reduce.hpp) and the CUDA ones
// (reduce_cuda.cu), so both accept the same tensors. Needs only the SDK's kernel.hpp, so nvcc
// compiles it too.
//
// Axes: empty means all (none with noop_with_empty_axes), negative counts from the end, a
// repeated axis is an error; keepdim keeps reduced axes as size 1.
#ifndef PADDLE_OPS_MATH_REDUCE_PLAN_HPP_
#define PADDLE_OPS_MATH_REDUCE_PLAN_HPP_

#include <cstdint>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

using paddle_core::Attrs;
using paddle_core::fail;
using paddle_core::Slots;
using paddle_core::Tensor;

// Positions of a row-major walk over `dims`, each at offset sum(index * stride) in x.
struct Odometer {
  static constexpr int kMaxDims = 32;
  std::vector<int64_t> dims, strides;  // outermost first
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

// How x folds into out, decided in prepare.
struct Plan {
  int64_t numel = 0;    // elements of x
  int64_t outputs = 1;  // elements of out
  int64_t count = 1;    // elements folded into each output
  bool rows = true;     // the innermost block is reduced (else kept: "columns")
  int64_t inner = 1;    // rows: length of each contiguous run; columns: outputs per row of x
  Odometer kept;        // rows: each output's offset; columns: each group of `inner` outputs'
  Odometer reduced;     // rows: the runs of one output; columns: the rows of x of one group
};

// Normalise `axes` (empty: all, or none when `none_if_empty`, ONNX's noop_with_empty_axes;
// negative: from the end) to a flag per axis of x. A 0-d x is one element, reduced along axis
// 0 or -1 as NumPy and PyTorch allow.
inline std::vector<bool> reduced_axes(const Tensor& x, const std::vector<int64_t>& axes,
                                      bool none_if_empty = false) {
  const int32_t nd = x.ndim();
  std::vector<bool> flags(nd, axes.empty() && !none_if_empty);
  if (nd == 0 && axes.size() == 1 && (axes[0] == 0 || axes[0] == -1)) return flags;
  for (int64_t a : axes) {
    if (nd == 0)
      fail("axes of a 0-d x may only be one of 0 and -1 (or empty), got axis %lld in %zu",
           static_cast<long long>(a), axes.size());
    if (a < -nd || a >= nd)
      fail("axis %lld is out of range for x %s (valid: %d..%d)", static_cast<long long>(a),
           x.describe().c_str(), -nd, nd - 1);
    const int64_t k = a < 0 ? a + nd : a;
    if (flags[k]) fail("axis %lld is given twice in axes", static_cast<long long>(a));
    flags[k] = true;
  }
  return flags;
}

// Fail unless `out` has x's shape reduced over `flags`.
inline void expect_reduced_shape(const Tensor& out, const Tensor& x, const std::vector<bool>& flags,
                          bool keepdim) {
  std::vector<int64_t> want;
  for (int32_t k = 0; k < x.ndim(); ++k) {
    if (!flags[k]) want.push_back(x.dim(k));
    else if (keepdim) want.push_back(1);
  }
  bool same = out.ndim() == static_cast<int32_t>(want.size());
  for (int32_t k = 0; same && k < out.ndim(); ++k) same = out.dim(k) == want[k];
  if (!same) fail("out is %s, but reducing x %s gives another shape", out.describe().c_str(),
                  x.describe().c_str());
}

inline Plan make_plan(const Tensor& x, const std::vector<bool>& flags) {
  Plan p;
  p.numel = x.numel();
  struct Block {
    int64_t extent, stride;
    bool reduced;
  };
  std::vector<Block> blocks;  // innermost first
  int64_t stride = 1;
  for (int32_t k = x.ndim() - 1; k >= 0; --k) {
    const int64_t e = x.dim(k);
    (flags[k] ? p.count : p.outputs) *= e;
    if (e == 1) continue;  // size-1 axes change no offsets
    if (!blocks.empty() && blocks.back().reduced == flags[k]) {
      blocks.back().extent *= e;
    } else {
      blocks.push_back({e, stride, flags[k]});
    }
    stride *= e;
  }
  if (blocks.empty()) return p;  // one element
  p.rows = blocks[0].reduced;
  p.inner = blocks[0].extent;
  for (size_t b = blocks.size() - 1; b >= 1; --b) {
    Odometer& od = blocks[b].reduced ? p.reduced : p.kept;
    od.dims.push_back(blocks[b].extent);
    od.strides.push_back(blocks[b].stride);
  }
  if (p.kept.dims.size() > Odometer::kMaxDims || p.reduced.dims.size() > Odometer::kMaxDims)
    fail("x %s alternates reduced and kept axes too often", x.describe().c_str());
  return p;
}

// The reduced axes of a reduction (or its gradient): attrs axes and noop_with_empty_axes.
inline std::vector<bool> reduced_axes(const Attrs& attrs, const Tensor& x) {
  return reduced_axes(x, attrs.ints("axes"), attrs.b("noop_with_empty_axes"));
}

// The checks of a reduction's prepare that do not depend on the dtype: axes, out's shape.
inline Plan check_reduce(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0);
  const std::vector<bool> flags = reduced_axes(attrs, x);
  expect_reduced_shape(out(0), x, flags, attrs.b("keepdim"));
  return make_plan(x, flags);
}

// The checks of a reduction gradient's prepare. Inputs: x, [out,] out_grad (uses_out: max and
// min); output: x_grad. Attrs axes and keepdim as in the forward op.
inline Plan check_reduce_grad(const Attrs& attrs, const Slots& in, const Slots& out,
                              bool uses_out) {
  const Tensor x = in(0), g = in(uses_out ? 2 : 1), dx = out(0);
  const std::vector<bool> flags = reduced_axes(attrs, x);
  const bool keepdim = attrs.b("keepdim");
  expect_reduced_shape(g, x, flags, keepdim);
  paddle_core::expect_same_dtype(g, x, "out_grad and x");
  if (uses_out) {
    expect_reduced_shape(in(1), x, flags, keepdim);
    paddle_core::expect_same_dtype(in(1), x, "out and x");
  }
  paddle_core::expect_same_shape(dx, x, "x_grad and x");
  paddle_core::expect_same_dtype(dx, x, "x_grad and x");
  return make_plan(x, flags);
}

// The checks of argmax's and argmin's prepare: one axis (a 0-d x is one element along axis
// 0 or -1), int64 out, elements along the axis.
inline Plan check_arg_reduce(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0), o = out(0);
  const int64_t axis = attrs.i("axis");
  std::vector<bool> flags(x.ndim(), false);
  if (x.ndim() == 0) {
    if (axis != 0 && axis != -1)
      fail("axis %lld is out of range for a 0-d x (valid: -1, 0)", static_cast<long long>(axis));
  } else {
    flags = reduced_axes(x, {axis});
  }
  expect_reduced_shape(o, x, flags, attrs.b("keepdim"));
  o.expect_dtype(PC_INT64, "out");
  Plan plan = make_plan(x, flags);
  if (plan.count == 0)
    fail("x %s has no elements along axis %lld: no index to return", x.describe().c_str(),
         static_cast<long long>(axis));
  return plan;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_REDUCE_PLAN_HPP_
