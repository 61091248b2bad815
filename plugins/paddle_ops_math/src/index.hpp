// Shapes of the index ops, shared by every device: the prepare-time checks of gather,
// gather_grad and one_hot, and the index test every kernel applies before it reads or writes
// at an index. Needs only the SDK's kernel.hpp, so nvcc compiles it too.
#ifndef PADDLE_OPS_MATH_INDEX_HPP_
#define PADDLE_OPS_MATH_INDEX_HPP_

#include <cstdint>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

using IndexTypes = paddle_core::Types<int32_t, int64_t>;

// gather's index i along an axis of `size` elements, as a position in [0, size); -1 when i is
// outside [-size, size) (negative i counts from the end, like numpy.take).
PADDLE_CORE_HD inline int64_t gather_position(int64_t i, int64_t size) {
  if (i < -size || i >= size) return -1;
  return i < 0 ? i + size : i;
}

// The first of n index values (host memory) out of range is a KernelError naming it and its
// flat position: outside [-size, size) when `negative` (gather: negative counts from the end),
// else outside [0, size) (one_hot); `range` names the range in the message. Writes each value's
// position in [0, size) to `positions` unless it is null.
template <class I>
void check_positions(const I* values, int64_t n, int64_t size, bool negative, const char* range,
                     int64_t* positions) {
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = static_cast<int64_t>(values[k]);
    const int64_t at = negative ? gather_position(i, size) : (i >= 0 && i < size ? i : -1);
    if (at < 0)
      paddle_core::fail(
          "index %lld (at flat position %lld) is out of range for %s of size %lld (valid: %lld "
          "to %lld)",
          static_cast<long long>(i), static_cast<long long>(k), range,
          static_cast<long long>(size), static_cast<long long>(negative ? -size : 0),
          static_cast<long long>(size - 1));
    if (positions != nullptr) positions[k] = at;
  }
}

// x viewed as [outer, size, inner] around the gather axis; index has `count` elements.
struct GatherGeometry {
  int64_t outer = 1, size = 0, inner = 1, count = 0;
};

// Check gather's x, index and out (or gather_grad's x, index and out_grad, `what` naming it):
// index int32 or int64, out of x's dtype and shape x.shape[:axis] + index.shape +
// x.shape[axis + 1:].
inline GatherGeometry check_gather(int64_t axis_attr, const paddle_core::Tensor& x,
                                   const paddle_core::Tensor& index,
                                   const paddle_core::Tensor& out, const char* what) {
  using paddle_core::fail;
  paddle_core::dispatch(index.dtype(), IndexTypes{}, [](auto) {});
  const int32_t nd = x.ndim();
  if (nd == 0) fail("x %s is 0-d: it has no axis to gather along", x.describe().c_str());
  if (axis_attr < -nd || axis_attr >= nd)
    fail("axis %lld is out of range for %d-D x", static_cast<long long>(axis_attr), nd);
  const int32_t axis = static_cast<int32_t>(axis_attr < 0 ? axis_attr + nd : axis_attr);
  out.expect_dtype(x.dtype(), what);
  GatherGeometry g;
  g.size = x.dim(axis);
  g.count = index.numel();
  bool fits = out.ndim() == nd - 1 + index.ndim();
  for (int32_t k = 0; fits && k < axis; ++k) fits = out.dim(k) == x.dim(k);
  for (int32_t k = 0; fits && k < index.ndim(); ++k) fits = out.dim(axis + k) == index.dim(k);
  for (int32_t k = axis + 1; fits && k < nd; ++k) fits = out.dim(k - 1 + index.ndim()) == x.dim(k);
  if (!fits)
    fail("%s %s is not x %s gathered at index %s along axis %d", what, out.describe().c_str(),
         x.describe().c_str(), index.describe().c_str(), axis);
  for (int32_t k = 0; k < axis; ++k) g.outer *= x.dim(k);
  for (int32_t k = axis + 1; k < nd; ++k) g.inner *= x.dim(k);
  return g;
}

// Check one_hot's index and out: index int32 or int64, out index.shape + [depth]; returns depth.
inline int64_t check_one_hot(const paddle_core::Attrs& attrs, const paddle_core::Tensor& index,
                             const paddle_core::Tensor& out) {
  using paddle_core::fail;
  paddle_core::dispatch(index.dtype(), IndexTypes{}, [](auto) {});
  const int64_t depth = attrs.l("depth");
  if (depth < 1) fail("depth must be at least 1, got %lld", static_cast<long long>(depth));
  bool fits = out.ndim() == index.ndim() + 1 && out.dim(-1) == depth;
  for (int32_t k = 0; fits && k < index.ndim(); ++k) fits = out.dim(k) == index.dim(k);
  if (!fits)
    fail("out %s is not index %s + [%lld]", out.describe().c_str(), index.describe().c_str(),
         static_cast<long long>(depth));
  return depth;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_INDEX_HPP_
