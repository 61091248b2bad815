// The geometry of 2-D convolution and pooling: how windows slide over the spatial axes of an
// NCHW tensor, decoded from the ops' attrs and checked against the tensors in prepare, so the
// loops that index with it never leave the buffers.
#ifndef PADDLE_OPS_NN_WINDOW_HPP_
#define PADDLE_OPS_NN_WINDOW_HPP_

#include <cstdint>
#include <vector>

#include "layout.hpp"

namespace paddle_ops_nn {

// One spatial axis: window k of `out` covers input positions
// k * stride - pad_before + j * dilation, j in [0, kernel); positions outside [0, in) are padding.
struct Axis {
  int64_t in = 0, out = 0, kernel = 1, stride = 1, pad_before = 0, pad_after = 0, dilation = 1;

  PADDLE_CORE_HD int64_t span() const { return dilation * (kernel - 1) + 1; }
  // The input position of tap j of window o (outside [0, in): padding).
  PADDLE_CORE_HD int64_t position(int64_t o, int64_t j) const {
    return o * stride - pad_before + j * dilation;
  }
  // The pad after that makes exactly `out` windows (negative: the last inputs are unused).
  int64_t exact_pad_after() const { return (out - 1) * stride + span() - in - pad_before; }
};

// A convolution from `channels` to `filters` channels in `groups` groups.
struct ConvShape {
  int64_t batch = 0, channels = 0, filters = 0, groups = 1;
  Axis h, w;

  PADDLE_CORE_HD int64_t in_plane() const { return h.in * w.in; }
  PADDLE_CORE_HD int64_t out_plane() const { return h.out * w.out; }
  // Rows of one group's unrolled input (im2col): its channels times the kernel's taps.
  int64_t taps() const { return channels / groups * h.kernel * w.kernel; }
};

// Two values (one per spatial axis) from an INTS attr, each at least `min`.
inline std::vector<int64_t> pair_attr(const Attrs& attrs, const char* name, int64_t min) {
  std::vector<int64_t> v = attrs.ints(name);
  if (v.size() != 2) fail("attr '%s' must have 2 values (height, width), got %zu", name, v.size());
  for (int64_t x : v)
    if (x < min) fail("attr '%s' values must be >= %lld, got %lld", name, (long long)min, (long long)x);
  return v;
}

// `paddings`: [both sides of h, both of w] or [top, bottom, left, right].
inline std::vector<int64_t> padding_attr(const Attrs& attrs) {
  std::vector<int64_t> p = attrs.ints("paddings");
  if (p.size() == 2) p = {p[0], p[0], p[1], p[1]};
  if (p.size() != 4)
    fail("attr 'paddings' must have 2 values (h, w) or 4 (top, bottom, left, right), got %zu",
         p.size());
  for (int64_t x : p)
    if (x < 0) fail("attr 'paddings' values must be >= 0, got %lld", (long long)x);
  return p;
}

// Windows over `in` positions: the count of full windows (one more for ceil_mode where a
// partial one starts inside the input or its leading padding); fails when none fits.
inline int64_t window_count(const Axis& a, bool ceil_mode, const char* axis) {
  const int64_t room = a.in + a.pad_before + a.pad_after - a.span();
  if (room < 0)
    fail("the %s window (%lld with dilation) is larger than the padded input (%lld)", axis,
         (long long)a.span(), (long long)(a.in + a.pad_before + a.pad_after));
  int64_t out = room / a.stride + 1;
  if (ceil_mode && room % a.stride != 0) {
    ++out;
    if ((out - 1) * a.stride >= a.in + a.pad_before) --out;  // it would hold padding only
  }
  return out;
}

inline Axis axis_of(int64_t in, int64_t kernel, int64_t stride, int64_t pad_before,
                    int64_t pad_after, int64_t dilation) {
  Axis a;
  a.in = in, a.kernel = kernel, a.stride = stride, a.pad_before = pad_before;
  a.pad_after = pad_after, a.dilation = dilation;
  return a;
}

inline void expect_nchw(const Tensor& t, const char* what) {
  if (t.ndim() != 4) fail("%s must be 4-D (NCHW), got %s", what, t.describe().c_str());
}

// conv2d: x [N, C, H, W] (plain or blocked, layout.hpp), filter [K, C / groups, kh, kw], out
// [N, K, OH, OW].
inline ConvShape conv_shape(const Attrs& attrs, const Activation& x, const Tensor& filter) {
  expect_nchw(filter, "filter");
  ConvShape s;
  s.groups = attrs.i("groups");
  s.batch = x.n, s.channels = x.c, s.filters = filter.dim(0);
  if (s.groups < 1) fail("attr 'groups' must be >= 1, got %lld", (long long)s.groups);
  if (s.channels % s.groups != 0 || s.filters % s.groups != 0)
    fail("channels (%lld) and filters (%lld) must be divisible by groups (%lld)",
         (long long)s.channels, (long long)s.filters, (long long)s.groups);
  if (filter.dim(1) != s.channels / s.groups)
    fail("filter %s must have channels / groups = %lld input channels", filter.describe().c_str(),
         (long long)(s.channels / s.groups));
  const auto stride = pair_attr(attrs, "strides", 1), dilation = pair_attr(attrs, "dilations", 1);
  const auto pad = padding_attr(attrs);
  s.h = axis_of(x.h, filter.dim(2), stride[0], pad[0], pad[1], dilation[0]);
  s.w = axis_of(x.w, filter.dim(3), stride[1], pad[2], pad[3], dilation[1]);
  s.h.out = window_count(s.h, false, "height");
  s.w.out = window_count(s.w, false, "width");
  return s;
}

// conv2d_transpose: x [N, C, H, W], filter [C, K / groups, kh, kw], out [N, K, OH, OW] is the
// gradient of a conv2d from out's K channels to x's C (same filter): returned as that conv2d,
// so `in` is out's size and `out` is x's.
inline ConvShape conv_transpose_shape(const Attrs& attrs, const Tensor& x, const Tensor& filter,
                                      const Tensor& out) {
  expect_nchw(x, "x");
  expect_nchw(filter, "filter");
  expect_nchw(out, "out");
  ConvShape s;
  s.groups = attrs.i("groups");
  s.batch = x.dim(0), s.filters = x.dim(1), s.channels = filter.dim(1) * s.groups;
  if (s.groups < 1) fail("attr 'groups' must be >= 1, got %lld", (long long)s.groups);
  if (filter.dim(0) != s.filters || s.filters % s.groups != 0)
    fail("filter %s must have x's %lld channels first, divisible by groups (%lld)",
         filter.describe().c_str(), (long long)s.filters, (long long)s.groups);
  const auto stride = pair_attr(attrs, "strides", 1), dilation = pair_attr(attrs, "dilations", 1);
  const auto pad = padding_attr(attrs);
  s.h = axis_of(out.dim(2), filter.dim(2), stride[0], pad[0], 0, dilation[0]);
  s.w = axis_of(out.dim(3), filter.dim(3), stride[1], pad[2], 0, dilation[1]);
  s.h.out = x.dim(2), s.w.out = x.dim(3);
  for (Axis* a : {&s.h, &s.w}) {
    const int64_t least = (a->out - 1) * a->stride - a->pad_before + a->span();  // pad after 0
    const int64_t pad_after = pad[a == &s.h ? 1 : 3];
    if (a->in < least - pad_after || a->in >= least - pad_after + a->stride)
      fail("out %s does not fit x %s: its %s must be in [%lld, %lld)", out.describe().c_str(),
           x.describe().c_str(), a == &s.h ? "height" : "width", (long long)(least - pad_after),
           (long long)(least - pad_after + a->stride));
    a->pad_after = a->exact_pad_after();
  }
  expect_shape(out, {s.batch, s.channels, s.h.in, s.w.in}, "out");
  return s;
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_WINDOW_HPP_
