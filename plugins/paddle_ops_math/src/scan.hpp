// Shapes and types of the scans (cumsum), shared by every device: the prepare-time check and
// the geometry [outer, length, inner] around the axis, and the output and accumulator types.
// Needs only the SDK's kernel.hpp and functors.hpp, so nvcc compiles it too.
#ifndef PADDLE_OPS_MATH_SCAN_HPP_
#define PADDLE_OPS_MATH_SCAN_HPP_

#include <cstdint>
#include <type_traits>

#include <paddle_core/kernel.hpp>

#include "functors.hpp"

namespace paddle_ops_math {

// cumsum's output element type: int64 for int32 (like NumPy and PyTorch), else the input's.
template <class T> using CumsumOut = std::conditional_t<std::is_same_v<T, int32_t>, int64_t, T>;
// The running sum's type: double for floats (float16 and bfloat16 too), the wrapping
// (unsigned) type for integers.
template <class T>
using CumsumAcc = std::conditional_t<std::is_floating_point_v<paddle_core::compute_t<T>>, double,
                                     Modular<CumsumOut<T>>>;

// cumsum's dtypes: every floating one, int32 and int64.
using CumsumTypes = paddle_core::Join<paddle_core::AllFloats, paddle_core::Ints>;

// x viewed as [outer, length, inner] around the scanned axis.
struct ScanGeometry {
  int64_t outer = 1, length = 1, inner = 1;
};

// Check cumsum's axis (a 0-d x: 0 or -1), x and out (x's shape; int64 for an int32 x).
inline ScanGeometry check_cumsum(const paddle_core::Attrs& attrs, const paddle_core::Tensor& x,
                                 const paddle_core::Tensor& out) {
  paddle_core::expect_same_shape(x, out, "x and out");
  out.expect_dtype(x.dtype() == PC_INT32 ? PC_INT64 : x.dtype(), "out");
  const int64_t axis = attrs.i("axis"), rank = x.ndim() > 0 ? x.ndim() : 1;
  if (axis < -rank || axis >= rank)
    paddle_core::fail("axis %lld is out of range for %d-D x", static_cast<long long>(axis),
                      x.ndim());
  ScanGeometry g;
  if (x.ndim() == 0) return g;
  const int32_t a = static_cast<int32_t>(axis < 0 ? axis + rank : axis);
  g.length = x.dim(a);
  for (int32_t k = 0; k < a; ++k) g.outer *= x.dim(k);
  for (int32_t k = a + 1; k < x.ndim(); ++k) g.inner *= x.dim(k);
  return g;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_SCAN_HPP_
