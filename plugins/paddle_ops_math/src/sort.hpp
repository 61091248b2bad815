// Shapes and order of the sorting ops (sort, argsort, topk), shared by every device: the
// prepare-time checks, x viewed as [outer, length, inner] around the axis, and the order every
// kernel sorts in. Needs only the SDK's kernel.hpp, so nvcc compiles it too.
//
// The order is NumPy's: NaN sorts after every number (first when descending, as it is the
// largest), and equal elements keep their order in x (stable), also when descending and in
// topk (ONNX: of two equal elements, the lower index comes first).
#ifndef PADDLE_OPS_MATH_SORT_HPP_
#define PADDLE_OPS_MATH_SORT_HPP_

#include <cstdint>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

// a before b in ascending order: a < b, or a a number and b NaN.
template <class T> PADDLE_CORE_HD inline bool sort_less(T a, T b) {
  return a < b || (a == a && b != b);
}

// Element (value, position) a comes first in the sorted row: by value, ascending or
// descending, then by position, so every kernel's order is one total order: the stable one.
template <class T>
PADDLE_CORE_HD inline bool sorts_before(T a, int64_t ia, T b, int64_t ib, bool descending) {
  if (descending ? sort_less(b, a) : sort_less(a, b)) return true;
  if (descending ? sort_less(a, b) : sort_less(b, a)) return false;
  return ia < ib;
}

// x viewed as [outer, length, inner] around the sorted axis.
struct SortGeometry {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t keep = 1;  // elements of each row written: length (sort, argsort) or k (topk)
};

// The axis (negative counts from the end; a 0-d x is one element along axis 0 or -1) and the
// geometry; `out` must be x's shape with the axis cut to `keep` elements (-1: all of them).
inline SortGeometry check_sort(int64_t axis, const paddle_core::Tensor& x,
                               const paddle_core::Tensor& out, int64_t keep, const char* what) {
  using paddle_core::fail;
  const int32_t nd = x.ndim();
  const int64_t rank = nd > 0 ? nd : 1;
  if (axis < -rank || axis >= rank)
    fail("axis %lld is out of range for %d-D x", static_cast<long long>(axis), nd);
  SortGeometry g;
  const int32_t a = static_cast<int32_t>(axis < 0 ? axis + rank : axis);
  if (nd > 0) {
    g.length = x.dim(a);
    for (int32_t k = 0; k < a; ++k) g.outer *= x.dim(k);
    for (int32_t k = a + 1; k < nd; ++k) g.inner *= x.dim(k);
  }
  if (keep == -1) keep = g.length;
  if (keep < 0 || keep > g.length)
    fail("k = %lld is outside [0, %lld], the size of x %s along axis %lld",
         static_cast<long long>(keep), static_cast<long long>(g.length), x.describe().c_str(),
         static_cast<long long>(axis));
  g.keep = keep;
  bool fits = out.ndim() == nd;
  for (int32_t k = 0; fits && k < nd; ++k) fits = out.dim(k) == (k == a ? keep : x.dim(k));
  if (!fits)
    fail("%s %s is not x %s with axis %d cut to %lld", what, out.describe().c_str(),
         x.describe().c_str(), a, static_cast<long long>(keep));
  return g;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_SORT_HPP_
