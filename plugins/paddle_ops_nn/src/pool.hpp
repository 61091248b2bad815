// pool2d's geometry (decoded from its attrs and checked against x in prepare) and the oneDNN
// pooling engine that computes float32 pool2d and its gradient (pool_dnnl.cpp).
#ifndef PADDLE_OPS_NN_POOL_HPP_
#define PADDLE_OPS_NN_POOL_HPP_

#include <algorithm>
#include <memory>
#include <string>

#include "window.hpp"

namespace pon {

struct Pooling {
  bool max = true, exclusive = true;
  Axis h, w;

  int64_t in_plane() const { return h.in * w.in; }
  int64_t out_plane() const { return h.out * w.out; }

  // Input rows [lo, hi) of window `o` along axis `a` (clipped to the input), and the
  // window's full extent (padding included).
  static void range(const Axis& a, int64_t o, int64_t* lo, int64_t* hi) {
    const int64_t start = o * a.stride - a.pad_before;
    *lo = std::max<int64_t>(start, 0);
    *hi = std::min<int64_t>(start + a.kernel, a.in);
  }
};

inline Pooling pooling_of(const Attrs& attrs, const Activation& x) {
  Pooling p;
  const std::string type = attrs.s("pooling_type");
  if (type != "max" && type != "avg") fail("pooling_type must be 'max' or 'avg', got '%s'", type.c_str());
  p.max = type == "max";
  p.exclusive = attrs.b("exclusive");
  if (attrs.b("global_pooling")) {
    p.h = axis_of(x.h, std::max<int64_t>(x.h, 1), 1, 0, 0, 1);
    p.w = axis_of(x.w, std::max<int64_t>(x.w, 1), 1, 0, 0, 1);
    p.h.out = p.w.out = 1;
    if (x.h == 0 || x.w == 0)
      fail("global pooling of an empty plane %lldx%lld", (long long)x.h, (long long)x.w);
    return p;
  }
  const auto k = pair_attr(attrs, "ksize", 1), s = pair_attr(attrs, "strides", 1);
  const auto pad = padding_attr(attrs);
  const bool ceil_mode = attrs.b("ceil_mode");
  p.h = axis_of(x.h, k[0], s[0], pad[0], pad[1], 1);
  p.w = axis_of(x.w, k[1], s[1], pad[2], pad[3], 1);
  for (const Axis* a : {&p.h, &p.w})
    if (a->pad_before >= a->kernel || a->pad_after >= a->kernel)
      fail("padding (%lld, %lld) must be smaller than the window (%lld)", (long long)a->pad_before,
           (long long)a->pad_after, (long long)a->kernel);
  p.h.out = window_count(p.h, ceil_mode, "height");
  p.w.out = window_count(p.w, ceil_mode, "width");
  return p;
}

class PoolEngine {
 public:
  virtual ~PoolEngine() = default;
  virtual void forward(const void* x, void* y, int threads) const = 0;
  virtual void backward(const void* x, const void* dy, void* dx, int threads) const = 0;
};

// float32 pooling of x [batch, channels, H, W] through oneDNN, for forward or backward, x
// (and x_grad) and out (and out_grad) in the layouts `layout` gives (pool_dnnl.cpp, built with
// oneDNN only).
std::unique_ptr<PoolEngine> make_dnnl_pool(const Pooling& p, int64_t batch, int64_t channels,
                                           bool backward, int threads, Layouts layout);

}  // namespace pon

#endif  // PADDLE_OPS_NN_POOL_HPP_
