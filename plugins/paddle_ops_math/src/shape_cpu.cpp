// Shape ops: reshape (also squeeze and unsqueeze), transpose, concat, split, slice,
// broadcast_to (also expand), and the grad kernels slice_grad and broadcast_to_grad.
//
// Memory contract: C-contiguous tensors; outputs have the shapes the shape rules inferred, and
// prepare checks them against the inputs and attrs, so every copy stays in bounds (empty
// tensors copy nothing). Except for broadcast_to_grad, which sums, the kernels only move
// elements: they copy raw elements of the dtype's size, with no per-dtype code. Inputs and
// outputs do not overlap; reshape alone may run in place (a no-op).
#include <cstring>

#include "common.hpp"

namespace pom {
namespace {

// Bytes per element of t's dtype (the SDK's table), for the raw copies below.
int64_t element_size(const Tensor& t) {
  const int64_t size = t.element_size();
  if (size == 0) fail("dtype %s is not supported by this kernel", pc::dtype_name(t.dtype()));
  return size;
}

std::vector<int64_t> dims_of(const Tensor& t) { return {t.shape(), t.shape() + t.ndim()}; }

// C-contiguous strides, in elements.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = s;
    s *= dims[k];
  }
  return strides;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t k = begin; k < end; ++k) p *= dims[k];
  return p;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* what) {
  if (axis < -ndim || axis >= ndim)
    fail("%s %lld is out of range for %lld dimensions", what, static_cast<long long>(axis),
         static_cast<long long>(ndim));
  return axis < 0 ? axis + ndim : axis;
}

// -- the strided copy behind every kernel -------------------------------------------------------

// dst[dst0 + sum_k i_k * dst_k] = src[src0 + sum_k i_k * src_k] for every index i of `dims`
// (strides in elements, of any sign; a 0 in src repeats an element). Planned at prepare time:
// size-1 dims are dropped and neighbours merged where both sides step evenly across them, so
// a reshape is one run, a concat one run per input row, a slice one run per kept row.
struct Copy {
  int64_t numel = 0, esize = 1, dst0 = 0, src0 = 0;
  std::vector<int64_t> dims, dst, src;  // outermost first; the innermost dim is a run
  int32_t tile = -1;  // a transpose: copy in tiles, with this dim contiguous in src
};

Copy plan_copy(const std::vector<int64_t>& dims, const std::vector<int64_t>& dst,
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

// Elements [lo, hi) of the index space in order, run by run.
template <class U> void copy_runs(const Copy& p, U* dst, const U* src, int64_t lo, int64_t hi) {
  const int32_t nd = static_cast<int32_t>(p.dims.size());
  const int64_t n = p.dims[nd - 1], ds = p.dst[nd - 1], ss = p.src[nd - 1];
  std::vector<int64_t> idx(nd, 0);  // outer index of the current run
  int64_t row = lo / n, col = lo % n, od = 0, os = 0;
  for (int32_t k = nd - 2; k >= 0; --k) {
    idx[k] = row % p.dims[k];
    row /= p.dims[k];
    od += idx[k] * p.dst[k];
    os += idx[k] * p.src[k];
  }
  for (int64_t e = lo; e < hi; col = 0) {
    const int64_t len = std::min(n - col, hi - e);
    U* d = dst + od + col * ds;
    const U* s = src + os + col * ss;
    if (ds == 1 && ss == 1) {
      std::memcpy(d, s, len * sizeof(U));
    } else if (ds == 1 && ss == 0) {
      std::fill(d, d + len, *s);
    } else {
      for (int64_t i = 0; i < len; ++i) d[i * ds] = s[i * ss];
    }
    e += len;
    for (int32_t k = nd - 2; k >= 0; --k) {  // advance to the next run
      od += p.dst[k];
      os += p.src[k];
      if (++idx[k] < p.dims[k]) break;
      od -= p.dst[k] * p.dims[k];
      os -= p.src[k] * p.dims[k];
      idx[k] = 0;
    }
  }
}

constexpr int64_t kTile = 32;

// Transposes: work item = kTile rows of dim `tile` (contiguous in src) for one index of the
// other outer dims, copied in kTile x kTile blocks against the innermost dim.
template <class U> void copy_tiles(const Copy& p, U* dst, const U* src, int64_t lo, int64_t hi) {
  const int32_t last = static_cast<int32_t>(p.dims.size()) - 1, q = p.tile;
  const int64_t rows = p.dims[q], cols = p.dims[last], dq = p.dst[q], sc = p.src[last];
  const int64_t blocks = (rows + kTile - 1) / kTile;
  for (int64_t item = lo; item < hi; ++item) {
    int64_t rest = item / blocks, od = 0, os = 0;
    for (int32_t k = last - 1; k >= 0; --k) {
      if (k == q) continue;
      const int64_t i = rest % p.dims[k];
      rest /= p.dims[k];
      od += i * p.dst[k];
      os += i * p.src[k];
    }
    const int64_t r0 = item % blocks * kTile, r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        U* d = dst + od + r * dq;
        const U* s = src + os + r;
        for (int64_t c = c0; c < c1; ++c) d[c] = s[c * sc];
      }
    }
  }
}

template <class U> void run_copy_as(const Copy& p, void* dst, const void* src, int32_t threads) {
  U* d = static_cast<U*>(dst) + p.dst0;
  const U* s = static_cast<const U*>(src) + p.src0;
  if (p.tile < 0) {
    parallel_for(p.numel, threads, kGrain,
                 [&](int64_t lo, int64_t hi) { copy_runs(p, d, s, lo, hi); });
    return;
  }
  const int64_t rows = p.dims[p.tile], cols = p.dims.back();
  const int64_t items = p.numel / (rows * cols) * ((rows + kTile - 1) / kTile);
  parallel_for(items, threads, std::max<int64_t>(1, kGrain / (kTile * cols)),
               [&](int64_t lo, int64_t hi) { copy_tiles(p, d, s, lo, hi); });
}

void run_copy(const Copy& p, void* dst, const void* src, int32_t threads) {
  if (p.numel == 0) return;  // nothing to move (and the data pointers may be anything)
  switch (p.esize) {
    case 1:
      return run_copy_as<uint8_t>(p, dst, src, threads);
    case 2:
      return run_copy_as<uint16_t>(p, dst, src, threads);
    case 4:
      return run_copy_as<uint32_t>(p, dst, src, threads);
    default:
      return run_copy_as<uint64_t>(p, dst, src, threads);
  }
}

// -- kernels ------------------------------------------------------------------------------------

// reshape, squeeze, unsqueeze: the same elements in the same order, so one flat copy.
class Reshape {
 public:
  Reshape(const Attrs&, const Slots& in, const Slots& out) {
    Tensor x = in(0), o = out(0);
    o.expect_dtype(x.dtype(), "out");
    if (x.numel() != o.numel())
      fail("x %s and out %s hold different numbers of elements", x.describe().c_str(),
           o.describe().c_str());
    copy_ = plan_copy({x.numel()}, {1}, {1}, element_size(x));
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (in(0).data<void>() == out(0).data<void>()) return;  // in place: nothing moves
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// out = x with its axes permuted: out.dim(k) = x.dim(perm[k]); empty perm reverses them.
class Transpose {
 public:
  Transpose(const Attrs& attrs, const Slots& in, const Slots& out) {
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
    copy_ = plan_copy(dims, strides_of(dims), src, element_size(x));
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// Checks that `parts`, joined along `axis`, make `whole`; returns one copy plan per part,
// moving part i between its own rows and its columns of whole's rows (whole viewed as
// [outer, dim(axis) * inner]). `into_whole` picks the direction: concat or split.
std::vector<Copy> plan_join(const Slots& parts, const Tensor& whole, int64_t axis_attr,
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

// out = xs joined along axis.
class Concat {
 public:
  Concat(const Attrs& attrs, const Slots& in, const Slots& out)
      : copies_(plan_join(in, out(0), attrs.i("axis"), true)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      run_copy(copies_[i], out(0).data<void>(), in(0, static_cast<int32_t>(i)).data<void>(),
               ctx.num_threads());
  }

 private:
  std::vector<Copy> copies_;
};

// outs = x cut along axis into the outputs' sizes (the shape rule turned num or sections
// into those sizes).
class Split {
 public:
  Split(const Attrs& attrs, const Slots& in, const Slots& out)
      : copies_(plan_join(out, in(0), attrs.i("axis"), false)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      run_copy(copies_[i], out(0, static_cast<int32_t>(i)).data<void>(), in(0).data<void>(),
               ctx.num_threads());
  }

 private:
  std::vector<Copy> copies_;
};

// Where x[starts:ends:steps] (over `axes`, Python's semantics) lies in x: the slice's dims,
// x's strides scaled by the steps, and the offset of its first element.
struct SliceView {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
};

SliceView plan_slice(const Attrs& attrs, const Tensor& x) {
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
    const int64_t count = step > 0 ? (end > start ? (end - start + step - 1) / step : 0)
                                   : (start > end ? (start - end - step - 1) / -step : 0);
    v.dims[a] = count;
    if (count > 0) v.offset += start * v.strides[a];
    v.strides[a] *= step;
  }
  return v;
}

// out = x sliced.
class Slice {
 public:
  Slice(const Attrs& attrs, const Slots& in, const Slots& out) {
    Tensor x = in(0), o = out(0);
    o.expect_dtype(x.dtype(), "out");
    const SliceView v = plan_slice(attrs, x);
    if (v.dims != dims_of(o))
      fail("out %s is not the slice's shape", o.describe().c_str());
    copy_ = plan_copy(v.dims, strides_of(v.dims), v.strides, element_size(x), 0, v.offset);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// x_grad = zeros of x's shape with out_grad written where the slice took its elements.
// Inputs: x (for its shape), out_grad; output: x_grad.
class SliceGrad {
 public:
  SliceGrad(const Attrs& attrs, const Slots& in, const Slots& out) {
    Tensor x = in(0), g = in(1), gx = out(0);
    g.expect_dtype(x.dtype(), "out_grad");
    gx.expect_dtype(x.dtype(), "x_grad");
    expect_same_shape(gx, x, "x_grad and x");
    const SliceView v = plan_slice(attrs, x);
    if (v.dims != dims_of(g))
      fail("out_grad %s is not the slice's shape", g.describe().c_str());
    const int64_t es = element_size(x);
    bytes_ = x.numel() * es;
    copy_ = plan_copy(v.dims, v.strides, strides_of(v.dims), es, v.offset, 0);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    char* dst = out(0).data<char>();
    parallel_for(bytes_, ctx.num_threads(), 4 * kGrain,
                 [&](int64_t lo, int64_t hi) { std::memset(dst + lo, 0, hi - lo); });
    run_copy(copy_, dst, in(1).data<void>(), ctx.num_threads());
  }

 private:
  int64_t bytes_ = 0;
  Copy copy_;
};

// x's strides as seen from `out` under NumPy broadcasting (0 along broadcast dims); fails
// unless x broadcasts to out.
std::vector<int64_t> broadcast_strides(const Tensor& x, const Tensor& out) {
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

// broadcast_to, expand: out = x repeated along its size-1 and missing leading dims.
class BroadcastTo {
 public:
  BroadcastTo(const Attrs&, const Slots& in, const Slots& out) {
    Tensor x = in(0), o = out(0);
    o.expect_dtype(x.dtype(), "out");
    const std::vector<int64_t> dims = dims_of(o);
    copy_ = plan_copy(dims, strides_of(dims), broadcast_strides(x, o), element_size(x));
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};


// x_grad = out_grad summed over the dims x was broadcast along. Inputs: x (for its shape),
// out_grad; output: x_grad.
class BroadcastToGrad {
 public:
  BroadcastToGrad(const Attrs&, const Slots& in, const Slots& out) {
    Tensor x = in(0), g = in(1), gx = out(0);
    expect_same_dtype(x, g, "x and out_grad");
    gx.expect_dtype(x.dtype(), "x_grad");
    expect_same_shape(gx, x, "x_grad and x");
    broadcast_strides(x, g);
    fn_ = dispatch(x.dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context&) const { fn_(in(1), out(0)); }

 private:
  using Fn = void (*)(const Tensor&, const Tensor&);
  template <class T> static void compute(const Tensor& g, const Tensor& gx) {
    reduce_to(g.data<T>(), g, gx.data<T>(), gx);
  }
  Fn fn_;
};

}  // namespace

const pc::Family& shape_kernels() {
  static const pc::Family family = {
      pc::kernel<Reshape>("reshape"),
      pc::kernel<Transpose>("transpose"),
      pc::kernel<Concat>("concat"),
      pc::kernel<Split>("split"),
      pc::kernel<Slice>("slice"),
      pc::kernel<SliceGrad>("slice_grad"),
      pc::kernel<BroadcastTo>("broadcast_to"),
      pc::kernel<BroadcastToGrad>("broadcast_to_grad"),
  };
  return family;
}

}  // namespace pom
