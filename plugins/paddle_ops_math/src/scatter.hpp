// Shapes of the indexed reads and writes, shared by every device: gather_nd (with its
// gradient), scatter (ONNX's ScatterElements) and scatter_nd (ONNX's ScatterND) with theirs.
// The prepare-time checks, the index tests each kernel applies before it reads or writes at
// an index, and the order writes happen in. Needs only the SDK's kernel.hpp, so nvcc
// compiles it too.
//
// Writes are grouped into columns: every column writes its own elements of out, which no
// other column writes, and applies its updates in their order in `updates`. Kernels run
// columns in parallel and each column's updates in order, so repeated indices give the same
// result on every device and thread count: with reduction "none" the last update wins.
#ifndef PADDLE_OPS_MATH_SCATTER_HPP_
#define PADDLE_OPS_MATH_SCATTER_HPP_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <paddle_core/kernel.hpp>

#include "functors.hpp"

namespace paddle_ops_math {

using ScatterIndexTypes = paddle_core::Types<int32_t, int64_t>;

// How scatter and scatter_nd combine an update with what out holds (attr reduction).
enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

inline Reduction reduction_of(const paddle_core::Attrs& attrs) {
  const std::string r = attrs.s("reduction");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  paddle_core::fail("reduction must be none, add, mul, max or min, got '%s'", r.c_str());
}

// out (holding a) combined with update b: integers wrap, max and min propagate NaN
// (functors.hpp), bool adds as "or" and multiplies as "and".
template <class T> PADDLE_CORE_HD inline T combine(Reduction r, T a, T b) {
  switch (r) {
    case Reduction::kAdd: return Add{}(a, b);
    case Reduction::kMul: return Mul{}(a, b);
    case Reduction::kMax: return Maximum{}(a, b);
    case Reduction::kMin: return Minimum{}(a, b);
    default: return b;
  }
}

// An index value i along an axis of `size` elements as a position in [0, size); -1 when i is
// outside [-size, size) (negative i counts from the end, as ONNX allows).
PADDLE_CORE_HD inline int64_t index_position(int64_t i, int64_t size) {
  if (i < -size || i >= size) return -1;
  return i < 0 ? i + size : i;
}

inline void index_out_of_range(int64_t i, int64_t at, int64_t size, const char* what) {
  paddle_core::fail(
      "index %lld (at flat position %lld) is out of range for %s of size %lld (valid: %lld to "
      "%lld)",
      static_cast<long long>(i), static_cast<long long>(at), what, static_cast<long long>(size),
      static_cast<long long>(-size), static_cast<long long>(size - 1));
}

// -- gather_nd and scatter_nd: index [..., q] names slices x[i_0, ..., i_{q-1}] -------------

// x viewed as [batch, indexed dims (q of them), slice]; index as [batch, tuples, q]; the
// gathered (or scattered) values as [batch, tuples, slice]. gather_nd's batch_dims leading
// dims are shared by x and index; scatter_nd has none.
struct NdGeometry {
  static constexpr int kMaxDepth = 64;
  int64_t batch = 1, tuples = 1, slice = 1;
  int32_t depth = 0;                      // q
  int64_t dims[kMaxDepth] = {}, strides[kMaxDepth] = {};  // indexed dims, strides in elements
  int64_t batch_stride = 0;               // elements of x per batch

  // Offset in x of the slice named by one index tuple (its values in [-dim, dim)).
  template <class I> PADDLE_CORE_HD int64_t offset(const I* tuple) const {
    int64_t off = 0;
    for (int32_t k = 0; k < depth; ++k) {
      const int64_t i = static_cast<int64_t>(tuple[k]);
      off += (i < 0 ? i + dims[k] : i) * strides[k];
    }
    return off;
  }
};

// The geometry of x [B..., D_0..D_{q-1}, S...] and index [B..., T..., q] (b = batch_dims); the
// values (gather_nd's out, scatter_nd's updates, `what`) must be [B..., T..., S...].
inline NdGeometry check_nd(const paddle_core::Tensor& x, const paddle_core::Tensor& index,
                           const paddle_core::Tensor& values, int64_t batch_dims,
                           const char* what) {
  using paddle_core::fail;
  paddle_core::dispatch(index.dtype(), ScatterIndexTypes{}, [](auto) {});
  const int32_t r = x.ndim(), m = index.ndim();
  if (m < 1) fail("index %s must be at least 1-D ([..., q])", index.describe().c_str());
  const int64_t q = index.dim(-1);
  if (batch_dims < 0 || batch_dims >= m || batch_dims > r)
    fail("batch_dims %lld must be in [0, %d) and at most x's rank %d",
         static_cast<long long>(batch_dims), m, r);
  const int32_t b = static_cast<int32_t>(batch_dims);
  if (q < 1 || q > r - b || q > NdGeometry::kMaxDepth)
    fail("index %s has tuples of %lld entries; x %s has %d dims after its %d batch dims",
         index.describe().c_str(), static_cast<long long>(q), x.describe().c_str(), r - b, b);
  NdGeometry g;
  g.depth = static_cast<int32_t>(q);
  bool fits = values.ndim() == m - 1 + r - b - g.depth;
  for (int32_t k = 0; k < b; ++k) {
    if (index.dim(k) != x.dim(k))
      fail("batch dim %d differs: index %s, x %s", k, index.describe().c_str(),
           x.describe().c_str());
    g.batch *= x.dim(k);
  }
  for (int32_t k = b; k < m - 1; ++k) g.tuples *= index.dim(k);
  for (int32_t k = b + g.depth; k < r; ++k) g.slice *= x.dim(k);
  for (int32_t k = 0; fits && k < m - 1; ++k) fits = values.dim(k) == index.dim(k);
  for (int32_t k = b + g.depth; fits && k < r; ++k)
    fits = values.dim(m - 1 + k - b - g.depth) == x.dim(k);
  if (!fits)
    fail("%s %s is not index %s's tuples of x %s's slices (batch_dims %d)", what,
         values.describe().c_str(), index.describe().c_str(), x.describe().c_str(), b);
  int64_t stride = g.slice;
  for (int32_t k = g.depth - 1; k >= 0; --k) {
    g.dims[k] = x.dim(b + k);
    g.strides[k] = stride;
    stride *= g.dims[k];
  }
  g.batch_stride = stride;
  return g;
}

// The first value of index (host memory) out of range for its indexed dim is a KernelError
// naming it and its flat position.
template <class I> void check_nd_index(const I* index, const NdGeometry& g) {
  const int64_t n = g.batch * g.tuples * g.depth;
  for (int64_t at = 0; at < n; ++at) {
    const int32_t k = static_cast<int32_t>(at % g.depth);
    const int64_t i = static_cast<int64_t>(index[at]);
    if (index_position(i, g.dims[k]) < 0) {
      const std::string what = "indexed axis " + std::to_string(k) + " of x";
      index_out_of_range(i, at, g.dims[k], what.c_str());
    }
  }
}

// -- scatter (ONNX's ScatterElements): out[..., index[p], ...] = updates[p] ---------------

// index (and updates, of its shape) viewed as [outer, count, inner] around the axis; each
// (outer, inner) pair is a column, writing x's elements base + position * axis_stride.
struct ElementsGeometry {
  static constexpr int kMaxDims = 64;
  int64_t outer = 1, count = 1, inner = 1;
  int64_t size = 0;         // x's size along the axis: positions are in [0, size)
  int64_t axis_stride = 1;  // x's stride along the axis
  int32_t ndim = 0, axis = 0;
  int64_t index_dims[kMaxDims] = {}, x_strides[kMaxDims] = {};

  int64_t columns() const { return outer * inner; }
  // Offset in x of column c's position 0 along the axis.
  PADDLE_CORE_HD int64_t base(int64_t c) const {
    int64_t o = c / inner, i = c - (c / inner) * inner, off = 0;
    for (int32_t k = ndim - 1; k > axis; --k) {
      off += (i % index_dims[k]) * x_strides[k];
      i /= index_dims[k];
    }
    for (int32_t k = axis - 1; k >= 0; --k) {
      off += (o % index_dims[k]) * x_strides[k];
      o /= index_dims[k];
    }
    return off;
  }
  // Element of index (and updates) of column c's k-th update.
  PADDLE_CORE_HD int64_t element(int64_t c, int64_t k) const {
    return (c / inner * count + k) * inner + c % inner;
  }
};

// x, index and updates (index's shape, x's dtype) of one rank; index's dims at most x's but
// along the axis.
inline ElementsGeometry check_elements(int64_t axis_attr, const paddle_core::Tensor& x,
                                       const paddle_core::Tensor& index,
                                       const paddle_core::Tensor& updates) {
  using paddle_core::fail;
  paddle_core::dispatch(index.dtype(), ScatterIndexTypes{}, [](auto) {});
  const int32_t r = x.ndim();
  if (r == 0) fail("x %s is 0-d: it has no axis to scatter along", x.describe().c_str());
  if (r > ElementsGeometry::kMaxDims) fail("x %s has too many dims", x.describe().c_str());
  if (axis_attr < -r || axis_attr >= r)
    fail("axis %lld is out of range for %d-D x", static_cast<long long>(axis_attr), r);
  paddle_core::expect_same_shape(index, updates, "index and updates");
  updates.expect_dtype(x.dtype(), "updates");
  ElementsGeometry g;
  g.ndim = r;
  g.axis = static_cast<int32_t>(axis_attr < 0 ? axis_attr + r : axis_attr);
  bool fits = index.ndim() == r;
  for (int32_t k = 0; fits && k < r; ++k) fits = k == g.axis || index.dim(k) <= x.dim(k);
  if (!fits)
    fail("index %s must have x %s's rank, and no dim larger than x's but along axis %d",
         index.describe().c_str(), x.describe().c_str(), g.axis);
  int64_t stride = 1;
  for (int32_t k = r - 1; k >= 0; --k) {
    g.x_strides[k] = stride;
    g.index_dims[k] = index.dim(k);
    stride *= x.dim(k);
  }
  for (int32_t k = 0; k < g.axis; ++k) g.outer *= index.dim(k);
  for (int32_t k = g.axis + 1; k < r; ++k) g.inner *= index.dim(k);
  g.count = index.dim(g.axis);
  g.size = x.dim(g.axis);
  g.axis_stride = g.x_strides[g.axis];
  return g;
}

// The first value of index (host memory) outside [-size, size) is a KernelError naming it.
template <class I> void check_elements_index(const I* index, int64_t n, int64_t size) {
  for (int64_t at = 0; at < n; ++at) {
    const int64_t i = static_cast<int64_t>(index[at]);
    if (index_position(i, size) < 0) index_out_of_range(i, at, size, "the scatter axis");
  }
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_SCATTER_HPP_
