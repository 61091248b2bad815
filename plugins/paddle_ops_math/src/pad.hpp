// Shapes of pad and pad_grad, shared by every device: the prepare-time checks and where each
// output element comes from (the same formula on the CPU and the GPU). Needs only the SDK's
// kernel.hpp, so nvcc compiles it too.
#ifndef PADDLE_OPS_MATH_PAD_HPP_
#define PADDLE_OPS_MATH_PAD_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

// What fills the padding: the value attr, x's edge, x mirrored without repeating its edge
// (numpy.pad's reflect), or x repeated (wrap).
enum class PadMode { kConstant, kEdge, kReflect, kWrap };

// Position along one axis of x (size n) that output position o takes, with `before` elements
// of padding in front (negative: cropped); -1 for the constant value. Every mode but
// constant needs n > 0 (checked in prepare).
PADDLE_CORE_HD inline int64_t pad_source(int64_t o, int64_t before, int64_t n, PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      i %= period;
      if (i < 0) i += period;
      return i < n ? i : period - i;
    }
    case PadMode::kWrap:
      i %= n;
      return i < 0 ? i + n : i;
    default: return -1;
  }
}

// x's and out's dims and the padding in front of each axis; passed to CUDA kernels by value.
struct PadGeometry {
  static constexpr int kMaxDims = 64;
  int32_t ndim = 0;
  PadMode mode = PadMode::kConstant;
  int64_t x_dims[kMaxDims] = {}, out_dims[kMaxDims] = {}, before[kMaxDims] = {};

  // Offset in x of the start of out's row r (its position along every axis but the last; x
  // is at least 1-D), or -1 where that row is the constant value.
  PADDLE_CORE_HD int64_t row_source(int64_t r) const {
    int64_t off = 0, stride = x_dims[ndim - 1];
    for (int32_t k = ndim - 2; k >= 0; --k) {
      const int64_t o = r % out_dims[k];
      r /= out_dims[k];
      const int64_t i = pad_source(o, before[k], x_dims[k], mode);
      if (i < 0) return -1;
      off += i * stride;
      stride *= x_dims[k];
    }
    return off;
  }
  // Offset in x of out's element e, or -1 where it is the constant value.
  PADDLE_CORE_HD int64_t source(int64_t e) const {
    if (ndim == 0) return 0;
    const int64_t width = out_dims[ndim - 1];
    const int64_t row = row_source(e / width);
    const int64_t i = pad_source(e % width, before[ndim - 1], x_dims[ndim - 1], mode);
    return row < 0 || i < 0 ? -1 : row + i;
  }
};

// The mode and paddings ([before_0, after_0, before_1, after_1, ...]: one pair per axis of x),
// and `padded` (pad's out, pad_grad's out_grad) of x's dims plus the paddings.
inline PadGeometry check_pad(const paddle_core::Attrs& attrs, const paddle_core::Tensor& x,
                             const paddle_core::Tensor& padded, const char* what) {
  using paddle_core::fail;
  PadGeometry g;
  const std::string mode = attrs.s("mode");
  if (mode == "constant") g.mode = PadMode::kConstant;
  else if (mode == "edge") g.mode = PadMode::kEdge;
  else if (mode == "reflect") g.mode = PadMode::kReflect;
  else if (mode == "wrap") g.mode = PadMode::kWrap;
  else fail("mode must be constant, edge, reflect or wrap, got '%s'", mode.c_str());
  const std::vector<int64_t> pads = attrs.ints("paddings");
  const int32_t nd = x.ndim();
  if (nd > PadGeometry::kMaxDims || pads.size() != 2 * static_cast<size_t>(nd))
    fail("paddings has %zu entries; x %s needs 2 per axis", pads.size(), x.describe().c_str());
  g.ndim = nd;
  bool fits = padded.ndim() == nd;
  for (int32_t k = 0; k < nd; ++k) {
    const int64_t n = x.dim(k), before = pads[2 * k], after = pads[2 * k + 1];
    int64_t size = 0;
    if (__builtin_add_overflow(n, before, &size) || __builtin_add_overflow(size, after, &size) ||
        size < 0)
      fail("axis %d of x %s padded by %lld and %lld has no valid size", k, x.describe().c_str(),
           static_cast<long long>(before), static_cast<long long>(after));
    if (n == 0 && size > 0 && g.mode != PadMode::kConstant)
      fail("axis %d of x %s is empty: mode %s has nothing to repeat", k, x.describe().c_str(),
           mode.c_str());
    fits = fits && padded.dim(k) == size;
    g.x_dims[k] = n;
    g.out_dims[k] = size;
    g.before[k] = before;
  }
  if (!fits)
    fail("%s %s is not x %s padded by %s", what, padded.describe().c_str(), x.describe().c_str(),
         "paddings");
  return g;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_PAD_HPP_
