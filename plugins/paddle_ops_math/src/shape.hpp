// Shapes of the shape ops, shared by every device: the prepare-time checks of reshape,
// flatten_grad, transpose, concat, split, stack, stack_grad, slice, slice_grad, broadcast_to,
// broadcast_to_grad, shape and size, and the strided copy each kernel makes (which elements go
// where), so the CPU kernels (shape_cpu.cpp) and the CUDA ones (shape_cuda.cu) accept exactly
// the same tensors and move the same elements. Needs only the SDK's kernel.hpp, so nvcc
// compiles it too.
#ifndef PADDLE_OPS_MATH_SHAPE_HPP_
#define PADDLE_OPS_MATH_SHAPE_HPP_

#include <algorithm>
#include <cstdint>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

using paddle_core::Attrs;
using paddle_core::fail;
using paddle_core::Slots;
using paddle_core::Tensor;

// Bytes per element of t's dtype (the SDK's table), for the raw copies below.
inline int64_t element_size(const Tensor& t) {
  const int64_t size = t.element_size();
  if (size == 0)
    fail("dtype %s is not supported by this kernel", paddle_core::dtype_name(t.dtype()));
  return size;
}

inline std::vector<int64_t> dims_of(const Tensor& t) {
  return {t.shape(), t.shape() + t.ndim()};
}

// The product of dims[begin, end): 0 when any is, before multiplying the others (a tile of
// an empty tensor 2^63 - 1 times has dims whose product overflows but for that 0).
inline int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  for (size_t k = begin; k < end; ++k)
    if (dims[k] == 0) return 0;
  int64_t p = 1;
  for (size_t k = begin; k < end; ++k) p *= dims[k];
  return p;
}

// C-contiguous strides, in elements; all 0 for dims of no element (which no stride reaches,
// and whose products could overflow: a tile's view of an empty tensor repeated 2^40 times).
inline std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  if (product(dims, 0, dims.size()) == 0) return strides;
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = s;
    s *= dims[k];
  }
  return strides;
}

inline int64_t normalize_axis(int64_t axis, int64_t ndim, const char* what) {
  if (axis < -ndim || axis >= ndim)
    fail("%s %lld is out of range for %lld dimensions", what, static_cast<long long>(axis),
         static_cast<long long>(ndim));
  return axis < 0 ? axis + ndim : axis;
}

// -- the strided copy ---------------------------------------------------------------------------

// dst[dst0 + sum_k i_k * dst_k] = src[src0 + sum_k i_k * src_k] for every index i of `dims`
// (strides in elements, of any sign; a 0 in src repeats an element). Planned at prepare time:
// size-1 dims are dropped and neighbours merged where both sides step evenly across them, so
// a reshape is one run, a concat one run per input row, a slice one run per kept row.
struct Copy {
  int64_t numel = 0, esize = 1, dst0 = 0, src0 = 0;
  std::vector<int64_t> dims, dst, src;  // outermost first; the innermost dim is a run
  int32_t tile = -1;  // a transpose: copy in tiles, with this dim contiguous in src
};

inline Copy plan_copy(const std::vector<int64_t>& dims, const std::vector<int64_t>& dst,
                      const std::vector<int64_t>& src, int64_t esize, int64_t dst0 = 0,
                      int64_t src0 = 0) {
  Copy p;
  p.esize = esize;
  p.dst0 = dst0;
  p.src0 = src0;
  p.numel = product(dims, 0, dims.size());
  if (p.numel == 0) return p;
  for (size_t k = dims.size(); k-- > 0;) {  // innermost first
    if (dims[k] == 1) continue;
    if (!p.dims.empty() && p.dst.back() * p.dims.back() == dst[k] &&
        p.src.back() * p.dims.back() == src[k]) {
      p.dims.back() *= dims[k];
      continue;
    }
    p.dims.push_back(dims[k]);
    p.dst.push_back(dst[k]);
    p.src.push_back(src[k]);
  }
  if (p.dims.empty()) p.dims = p.dst = p.src = {1};  // a single element
  std::reverse(p.dims.begin(), p.dims.end());
  std::reverse(p.dst.begin(), p.dst.end());
  std::reverse(p.src.begin(), p.src.end());
  // A run that gathers with a stride while another dim is contiguous in src is a transpose:
  // row by row it would touch one cache line per element; tiles reuse the lines they load.
  const size_t last = p.dims.size() - 1;
  if (p.dst[last] == 1 && p.src[last] != 1 && p.src[last] != 0)
    for (size_t k = 0; k < last; ++k)
      if (p.src[k] == 1) p.tile = static_cast<int32_t>(k);
  return p;
}

// Checks that `parts`, joined along `axis`, make `whole`; returns one copy plan per part,
// moving part i between its own rows and its columns of whole's rows (whole viewed as
// [outer, dim(axis) * inner]). `into_whole` picks the direction: concat or split.
inline std::vector<Copy> plan_join(const Slots& parts, const Tensor& whole, int64_t axis_attr,
                                   bool into_whole) {
  const int32_t n = parts.size(0), nd = whole.ndim();
  if (n == 0) fail("there are no tensors to join or split into");
  if (nd == 0) fail("0-d tensors have no axis to join or split along");
  const int64_t axis = normalize_axis(axis_attr, nd, "axis");
  const std::vector<int64_t> wd = dims_of(whole);
  const int64_t outer = product(wd, 0, axis), inner = product(wd, axis + 1, nd);
  const int64_t es = element_size(whole);
  std::vector<Copy> copies;
  int64_t offset = 0;  // along axis
  for (int32_t i = 0; i < n; ++i) {
    Tensor part = parts(0, i);
    part.expect_dtype(whole.dtype(), "every part");
    std::vector<int64_t> pd = dims_of(part);
    bool fits = part.ndim() == nd;
    for (int32_t k = 0; fits && k < nd; ++k) fits = k == axis || pd[k] == wd[k];
    if (!fits)
      fail("part %d %s does not fit %s along axis %lld", i, part.describe().c_str(),
           whole.describe().c_str(), static_cast<long long>(axis));
    const int64_t run = pd[axis] * inner, row = wd[axis] * inner;
    const int64_t at = offset * inner;  // where the part starts in whole's first row
    copies.push_back(into_whole ? plan_copy({outer, run}, {row, 1}, {run, 1}, es, at, 0)
                                : plan_copy({outer, run}, {run, 1}, {row, 1}, es, 0, at));
    offset += pd[axis];
  }
  if (offset != wd[axis])
    fail("the parts add up to %lld along axis %lld, but %s has %lld",
         static_cast<long long>(offset), static_cast<long long>(axis), whole.describe().c_str(),
         static_cast<long long>(wd[axis]));
  return copies;
}

// Checks that `parts`, all of one shape, stacked along a new `axis` of `whole` make `whole`;
// returns one copy plan per part, moving part i between its own elements and whole's
// index i along axis (whole viewed as [outer, count, inner]). `into_whole` picks the
// direction: stack or stack_grad.
inline std::vector<Copy> plan_stack(const Slots& parts, const Tensor& whole, int64_t axis_attr,
                                    bool into_whole) {
  const int32_t n = parts.size(0), nd = whole.ndim();
  if (n == 0) fail("there are no tensors to stack or unstack");
  if (nd == 0) fail("%s is 0-d: it has no axis to stack along", whole.describe().c_str());
  const int64_t axis = normalize_axis(axis_attr, nd, "axis");
  std::vector<int64_t> wd = dims_of(whole);
  if (wd[axis] != n)
    fail("%s has %lld along axis %lld, not the %d stacked tensors", whole.describe().c_str(),
         static_cast<long long>(wd[axis]), static_cast<long long>(axis), n);
  const int64_t outer = product(wd, 0, axis), inner = product(wd, axis + 1, nd);
  const int64_t es = element_size(whole), row = n * inner;
  std::vector<int64_t> part_dims = wd;
  part_dims.erase(part_dims.begin() + axis);
  std::vector<Copy> copies;
  for (int32_t i = 0; i < n; ++i) {
    Tensor part = parts(0, i);
    part.expect_dtype(whole.dtype(), "every stacked tensor");
    if (dims_of(part) != part_dims)
      fail("tensor %d %s is not %s without axis %lld", i, part.describe().c_str(),
           whole.describe().c_str(), static_cast<long long>(axis));
    copies.push_back(into_whole ? plan_copy({outer, inner}, {row, 1}, {inner, 1}, es, i * inner, 0)
                                : plan_copy({outer, inner}, {inner, 1}, {row, 1}, es, 0, i * inner));
  }
  return copies;
}

// Where x[starts:ends:steps] (over `axes`, Python's semantics) lies in x: the slice's dims,
// x's strides scaled by the steps, and the offset of its first element.
struct SliceView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

inline SliceView plan_slice(const Attrs& attrs, const Tensor& x) {
  const std::vector<int64_t> axes = attrs.ints("axes"), starts = attrs.ints("starts"),
                             ends = attrs.ints("ends");
  std::vector<int64_t> steps = attrs.ints("steps");
  if (steps.empty()) steps.assign(axes.size(), 1);
  if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size())
    fail("axes, starts, ends and steps differ in length");
  SliceView v{dims_of(x), strides_of(dims_of(x)), 0};
  std::vector<bool> seen(x.ndim(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], x.ndim(), "axis");
    if (seen[a]) fail("axes repeat axis %lld", static_cast<long long>(a));
    seen[a] = true;
    const int64_t dim = v.dims[a], step = steps[i];
    if (step == 0) fail("steps must not be 0");
    // Python's slice(start, end, step).indices(dim): negative indices count from the end,
    // then clamp to [0, dim] going forward or [-1, dim - 1] going backward.
    const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    auto clamp = [&](int64_t index) { return std::clamp(index < 0 ? index + dim : index, lo, hi); };
    const int64_t start = clamp(starts[i]), end = clamp(ends[i]);
    // Bounds and steps are 64-bit attrs (INT64_MAX means "to the end"): the arithmetic stays
    // within int64 for every value, as |step| is taken unsigned and the span is below dim.
    const uint64_t span = static_cast<uint64_t>(step > 0 ? end - start : start - end);
    const uint64_t stride = step > 0 ? static_cast<uint64_t>(step)
                                     : 0 - static_cast<uint64_t>(step);
    const int64_t count = (step > 0 ? end > start : start > end)
                              ? static_cast<int64_t>((span - 1) / stride + 1)
                              : 0;
    v.dims[a] = count;
    if (count > 0) v.offset += start * v.strides[a];
    if (count > 1) v.strides[a] *= step;  // one element or none: the step never applies
  }
  return v;
}

// x's strides as seen from `out` under NumPy broadcasting (0 along broadcast dims); fails
// unless x broadcasts to out.
inline std::vector<int64_t> broadcast_to_strides(const Tensor& x, const Tensor& out) {
  const int32_t nd = out.ndim(), lead = nd - x.ndim();
  if (lead < 0)
    fail("x %s has more dimensions than %s", x.describe().c_str(), out.describe().c_str());
  const std::vector<int64_t> xs = strides_of(dims_of(x));
  std::vector<int64_t> strides(nd, 0);
  for (int32_t k = lead; k < nd; ++k) {
    const int64_t d = x.dim(k - lead);
    if (d == out.dim(k)) {
      strides[k] = xs[k - lead];
    } else if (d != 1) {
      fail("x %s does not broadcast to %s", x.describe().c_str(), out.describe().c_str());
    }
  }
  return strides;
}

// -- the checks of each kernel, returning its copy -------------------------------------------

// The flat copy of `from` (named `what`) into `to` (`to_what`): one dtype, as many elements.
inline Copy plan_flat_copy(const Tensor& from, const Tensor& to, const char* what,
                           const char* to_what) {
  to.expect_dtype(from.dtype(), to_what);
  if (from.numel() != to.numel())
    fail("%s %s and %s %s hold different numbers of elements", what, from.describe().c_str(),
         to_what, to.describe().c_str());
  return plan_copy({from.numel()}, {1}, {1}, element_size(from));
}

// reshape, squeeze, unsqueeze, flatten: the same elements in the same order, so one flat copy.
inline Copy check_reshape(const Slots& in, const Slots& out) {
  return plan_flat_copy(in(0), out(0), "x", "out");
}

// flatten_grad (inputs x, out_grad; output x_grad): out_grad's elements with x's shape.
inline Copy check_flatten_grad(const Slots& in, const Slots& out) {
  paddle_core::expect_same_shape(out(0), in(0), "x_grad and x");
  return plan_flat_copy(in(1), out(0), "out_grad", "x_grad");
}

// transpose: out.dim(k) = x.dim(perm[k]); empty perm reverses the axes.
inline Copy check_transpose(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  o.expect_dtype(x.dtype(), "out");
  const int32_t nd = x.ndim();
  std::vector<int64_t> perm = attrs.ints("perm");
  if (perm.empty())
    for (int32_t k = nd - 1; k >= 0; --k) perm.push_back(k);
  if (perm.size() != static_cast<size_t>(nd))
    fail("perm has %zu entries for %d-D x", perm.size(), nd);
  const std::vector<int64_t> strides = strides_of(dims_of(x));
  std::vector<int64_t> dims(nd), src(nd);
  std::vector<bool> seen(nd, false);
  for (int32_t k = 0; k < nd; ++k) {
    const int64_t a = normalize_axis(perm[k], nd, "perm entry");
    if (seen[a]) fail("perm repeats axis %lld", static_cast<long long>(a));
    seen[a] = true;
    dims[k] = x.dim(static_cast<int32_t>(a));
    src[k] = strides[a];
  }
  if (dims != dims_of(o))
    fail("out %s is not x %s transposed", o.describe().c_str(), x.describe().c_str());
  return plan_copy(dims, strides_of(dims), src, element_size(x));
}

// slice: out = x sliced.
inline Copy check_slice(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  o.expect_dtype(x.dtype(), "out");
  const SliceView v = plan_slice(attrs, x);
  if (v.dims != dims_of(o)) fail("out %s is not the slice's shape", o.describe().c_str());
  return plan_copy(v.dims, strides_of(v.dims), v.strides, element_size(x), 0, v.offset);
}

// slice_grad (inputs x, out_grad, x_grad_acc (optional); output x_grad): the copy of out_grad
// into x_grad, which is zeroed first (or added to x_grad_acc's copy).
inline Copy check_slice_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor x = in(0), g = in(1), gx = out(0);
  g.expect_dtype(x.dtype(), "out_grad");
  gx.expect_dtype(x.dtype(), "x_grad");
  paddle_core::expect_same_shape(gx, x, "x_grad and x");
  if (in.has(2)) {
    in(2).expect_dtype(x.dtype(), "x_grad_acc");
    paddle_core::expect_same_shape(in(2), x, "x_grad_acc and x");
  }
  const SliceView v = plan_slice(attrs, x);
  if (v.dims != dims_of(g)) fail("out_grad %s is not the slice's shape", g.describe().c_str());
  return plan_copy(v.dims, v.strides, strides_of(v.dims), element_size(x), v.offset, 0);
}

// broadcast_to, expand: out = x repeated along its size-1 and missing leading dims.
inline Copy check_broadcast_to(const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  o.expect_dtype(x.dtype(), "out");
  const std::vector<int64_t> dims = dims_of(o);
  return plan_copy(dims, strides_of(dims), broadcast_to_strides(x, o), element_size(x));
}

// broadcast_to_grad (inputs x, out_grad; output x_grad): x's strides as seen from out_grad
// (0 along the dims x_grad sums over).
inline std::vector<int64_t> check_broadcast_to_grad(const Slots& in, const Slots& out) {
  Tensor x = in(0), g = in(1), gx = out(0);
  paddle_core::expect_same_dtype(x, g, "x and out_grad");
  gx.expect_dtype(x.dtype(), "x_grad");
  paddle_core::expect_same_shape(gx, x, "x_grad and x");
  return broadcast_to_strides(x, g);
}

// tile (and tile_grad): x and out viewed as [r0, d0, r1, d1, ...], x's shape and
// repeat_times aligned to the right with 1s in front of the shorter (numpy.tile). Returns the
// dims of that view and x's strides along them (0 along the repeats); fails unless `o` is x
// tiled (`what` names it) and every repeat is >= 0.
struct TileView {
  std::vector<int64_t> dims, src;
};

inline TileView plan_tile(const Attrs& attrs, const Tensor& x, const Tensor& o, const char* what) {
  o.expect_dtype(x.dtype(), what);
  std::vector<int64_t> reps = attrs.ints("repeat_times");
  for (int64_t r : reps)
    if (r < 0) fail("repeat_times must not be negative, got %lld", static_cast<long long>(r));
  const size_t nd = std::max(reps.size(), static_cast<size_t>(x.ndim()));
  reps.insert(reps.begin(), nd - reps.size(), 1);
  std::vector<int64_t> xd = dims_of(x);
  xd.insert(xd.begin(), nd - xd.size(), 1);
  const std::vector<int64_t> xs = strides_of(xd);
  bool fits = o.ndim() == static_cast<int32_t>(nd);
  TileView v;
  for (size_t k = 0; k < nd; ++k) {
    int64_t tiled = 0;  // (a product that overflows is no dimension of out)
    const bool overflows = __builtin_mul_overflow(xd[k], reps[k], &tiled);
    fits = fits && !overflows && o.dim(static_cast<int32_t>(k)) == tiled;
    v.dims.insert(v.dims.end(), {reps[k], xd[k]});
    v.src.insert(v.src.end(), {0, xs[k]});
  }
  if (!fits) fail("%s %s is not x %s tiled", what, o.describe().c_str(), x.describe().c_str());
  return v;
}

inline Copy check_tile(const Attrs& attrs, const Slots& in, const Slots& out) {
  const TileView v = plan_tile(attrs, in(0), out(0), "out");
  return plan_copy(v.dims, strides_of(v.dims), v.src, element_size(in(0)));
}

// tile_grad (inputs x, out_grad; output x_grad): the tile view of out_grad.
inline TileView check_tile_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor x = in(0), g = in(1), gx = out(0);
  gx.expect_dtype(x.dtype(), "x_grad");
  paddle_core::expect_same_shape(gx, x, "x_grad and x");
  return plan_tile(attrs, x, g, "out_grad");
}

// tril, triu: x and out of one shape and dtype, at least 2-D. Returns [batch, rows, cols] and
// the diagonal attr (64-bit), clamped to [-rows, cols]: beyond that every diagonal keeps the
// same elements, and triangle_split's sums stay within int64.
struct Triangle {
  int64_t batch = 0, rows = 0, cols = 0, diagonal = 0;
};

inline Triangle check_triangle(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  paddle_core::expect_same_shape(x, o, "x and out");
  o.expect_dtype(x.dtype(), "out");
  if (x.ndim() < 2) fail("x %s must be at least 2-D (matrices)", x.describe().c_str());
  element_size(x);
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  const int64_t diagonal = std::clamp<int64_t>(attrs.l("diagonal"), -rows, cols);
  return {rows * cols == 0 ? 0 : x.numel() / (rows * cols), rows, cols, diagonal};
}

// Where row i of a matrix splits: a tril keeps the elements before it and zeroes the rest, a
// triu zeroes the elements before it and keeps the rest (j - i <= diagonal, j - i >= diagonal).
PADDLE_CORE_HD inline int64_t triangle_split(bool lower, int64_t i, int64_t diagonal,
                                             int64_t cols) {
  const int64_t split = lower ? i + diagonal + 1 : i + diagonal;  // j < split: kept / zeroed
  return split < 0 ? 0 : (split > cols ? cols : split);
}

// shape (x's dims from start to end, as ONNX's Shape: negative counts from the end, then
// clamped to [0, ndim]) or, with `size`, size (x's element count, 0-d): int64 values known
// in prepare, which the kernels write. Checks out.
inline std::vector<int64_t> check_shape_of(const Attrs& attrs, const Tensor& x, const Tensor& o,
                                           bool size) {
  o.expect_dtype(PC_INT64, "out");
  std::vector<int64_t> values;
  if (size) {
    values.push_back(x.numel());
  } else {
    const int64_t nd = x.ndim();
    auto clamp = [nd](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + nd : i, 0, nd); };
    const int64_t start = clamp(attrs.l("start")), end = clamp(attrs.l("end"));
    for (int64_t k = start; k < end; ++k) values.push_back(x.dim(static_cast<int32_t>(k)));
  }
  const bool fits = size ? o.ndim() == 0
                         : o.ndim() == 1 && o.dim(0) == static_cast<int64_t>(values.size());
  if (!fits)
    fail("out %s does not hold the %zu values of x %s's %s", o.describe().c_str(), values.size(),
         x.describe().c_str(), size ? "size" : "shape");
  return values;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_SHAPE_HPP_
