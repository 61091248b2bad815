// pool2d's geometry (decoded from its attrs and checked against x in prepare, the same checks
// for the CPU and CUDA kernels), the window arithmetic both devices run (PADDLE_CORE_HD), and the
// oneDNN pooling engine that computes float32 pool2d and its gradient (pool_dnnl.cpp); the bins
// of adaptive_avg_pool2d and adaptive_max_pool2d, likewise shared.
#ifndef PADDLE_OPS_NN_POOL_HPP_
#define PADDLE_OPS_NN_POOL_HPP_

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "window.hpp"

namespace paddle_ops_nn {

struct Pooling {
  bool max = true, exclusive = true;
  Axis h, w;

  PADDLE_CORE_HD int64_t in_plane() const { return h.in * w.in; }
  PADDLE_CORE_HD int64_t out_plane() const { return h.out * w.out; }

  // Input rows [lo, hi) of window `o` along axis `a` (clipped to the input).
  PADDLE_CORE_HD static void range(const Axis& a, int64_t o, int64_t* lo, int64_t* hi) {
    const int64_t start = o * a.stride - a.pad_before;
    *lo = std::max<int64_t>(start, 0);
    *hi = std::min<int64_t>(start + a.kernel, a.in);
  }
  // The average's divisor for the window of input rows [h0, h1) and columns [w0, w1).
  PADDLE_CORE_HD int64_t divisor(int64_t h0, int64_t h1, int64_t w0, int64_t w1) const {
    return exclusive ? (h1 - h0) * (w1 - w0) : h.kernel * w.kernel;
  }
};

// Where a window's first maximum is (the flat index in the plane, `width` columns wide); a NaN
// is the maximum (the first NaN), as in NumPy's and PyTorch's max.
template <class T>
PADDLE_CORE_HD int64_t window_argmax(const T* plane, int64_t width, int64_t h0, int64_t h1,
                                     int64_t w0, int64_t w1) {
  int64_t best = h0 * width + w0;
  for (int64_t ih = h0; ih < h1; ++ih)
    for (int64_t iw = w0; iw < w1; ++iw) {
      const T v = plane[ih * width + iw], b = plane[best];
      if (v > b || (v != v && b == b)) best = ih * width + iw;
    }
  return best;
}

// The windows over x (plain or blocked: its logical sizes).
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

// What a pool2d kernel or its gradient's computes: the windows, and the layouts of x (and
// x_grad) and of out (or out_grad), plain or, with channel_block b, blocked (layout.hpp; only
// the CPU kernels take it, the CUDA kernels refusing it first with plain_only).
struct PoolPlan {
  Pooling p;
  Activation x, out;
};

// pool2d(x) -> out [N, C, OH, OW], x float32 or float64; with channel_block b, out blocked
// and x plain or blocked.
inline PoolPlan check_pool2d(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0);
  const int block = channel_block_of(attrs);
  PoolPlan plan;
  plan.x = activation_of(x, block, "x");
  plan.p = pooling_of(attrs, plan.x);
  dispatch(x.dtype(), Floats{}, [](auto) {});
  expect_same_dtype(x, out(0), "x and out");
  plan.out = output_activation(plan.x.n, plan.x.c, plan.p.h.out, plan.p.w.out, block, "out");
  expect_shape(out(0), plan.out.dims(), "out");
  return plan;
}

// pool2d_grad(x, out_grad) -> x_grad, x's shape, layout and dtype; out_grad in out's layout.
inline PoolPlan check_pool2d_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0), g = in(1);
  const int block = channel_block_of(attrs);
  PoolPlan plan;
  plan.x = activation_of(x, block, "x");
  plan.p = pooling_of(attrs, plan.x);
  dispatch(x.dtype(), Floats{}, [](auto) {});
  expect_same_dtype(x, g, "x and out_grad");
  plan.out = output_activation(plan.x.n, plan.x.c, plan.p.h.out, plan.p.w.out, block, "out_grad");
  expect_shape(g, plan.out.dims(), "out_grad");
  expect_same_shape(x, out(0), "x and x_grad");
  expect_same_dtype(x, out(0), "x and x_grad");
  return plan;
}

// -- adaptive pooling -------------------------------------------------------------------------

// `out` bins over `in` positions (in >= 1, out >= 1): bin i covers [floor(i * in / out),
// ceil((i + 1) * in / out)), PyTorch's bins. They cover the input, and neighbours share a
// position where out does not divide in.
struct Bins {
  int64_t in = 1, out = 1;

  PADDLE_CORE_HD int64_t start(int64_t i) const { return i * in / out; }
  PADDLE_CORE_HD int64_t end(int64_t i) const { return ((i + 1) * in + out - 1) / out; }
  // The bins covering input position p: [*lo, *hi) (end(i) > p and start(i) <= p solved for i).
  PADDLE_CORE_HD void covering(int64_t p, int64_t* lo, int64_t* hi) const {
    *lo = p * out / in;
    *hi = std::min<int64_t>(((p + 1) * out - 1) / in + 1, out);
  }
  // Whether no position lies in two bins.
  PADDLE_CORE_HD bool disjoint() const { return in % out == 0; }
};

// adaptive_avg_pool2d / adaptive_max_pool2d over `planes` (N * C) planes of h.in x w.in.
struct AdaptivePooling {
  int64_t planes = 0;
  Bins h, w;

  PADDLE_CORE_HD int64_t in_plane() const { return h.in * w.in; }
  PADDLE_CORE_HD int64_t out_plane() const { return h.out * w.out; }
  // Bin o of a plane: rows [*h0, *h1), columns [*w0, *w1).
  PADDLE_CORE_HD void bin(int64_t o, int64_t* h0, int64_t* h1, int64_t* w0, int64_t* w1) const {
    const int64_t oh = o / w.out, ow = o % w.out;
    *h0 = h.start(oh), *h1 = h.end(oh), *w0 = w.start(ow), *w1 = w.end(ow);
  }
  // Whether a bin is the whole plane (global pooling: a reduction over it).
  PADDLE_CORE_HD bool global() const { return h.out == 1 && w.out == 1; }
};

// The average pool's gradient at position `at` of a plane: the shares of out_grad's plane `g`
// from the bins covering it, in bin order.
template <class T>
PADDLE_CORE_HD T adaptive_avg_share(const AdaptivePooling& p, const T* g, int64_t at) {
  int64_t oh0, oh1, ow0, ow1;
  p.h.covering(at / p.w.in, &oh0, &oh1);
  p.w.covering(at % p.w.in, &ow0, &ow1);
  T sum = 0;
  for (int64_t oh = oh0; oh < oh1; ++oh)
    for (int64_t ow = ow0; ow < ow1; ++ow) {
      const int64_t count = (p.h.end(oh) - p.h.start(oh)) * (p.w.end(ow) - p.w.start(ow));
      sum += g[oh * p.w.out + ow] / static_cast<T>(count);
    }
  return sum;
}

// output_size: [oh, ow], or one value for both, each at least 1.
inline std::vector<int64_t> output_size_attr(const Attrs& attrs) {
  std::vector<int64_t> v = attrs.ints("output_size");
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2)
    fail("attr 'output_size' must have 1 value (both axes) or 2 (height, width), got %zu",
         v.size());
  for (int64_t x : v)
    if (x < 1) fail("attr 'output_size' values must be >= 1, got %lld", (long long)x);
  return v;
}

// The bins of x [N, C, H, W] (float32 or float64, H and W at least 1) into `out` (named
// `what`: out or out_grad) [N, C, OH, OW], of x's dtype.
inline AdaptivePooling adaptive_pooling_of(const Attrs& attrs, const Tensor& x, const Tensor& out,
                                           const char* what) {
  expect_nchw(x, "x");
  dispatch(x.dtype(), Floats{}, [](auto) {});
  if (x.dim(2) == 0 || x.dim(3) == 0)
    fail("x %s has empty planes: there is nothing to pool into bins", x.describe().c_str());
  const std::vector<int64_t> size = output_size_attr(attrs);
  expect_same_dtype(x, out, what);
  expect_shape(out, {x.dim(0), x.dim(1), size[0], size[1]}, what);
  AdaptivePooling p;
  p.planes = x.dim(0) * x.dim(1);
  p.h = {x.dim(2), size[0]};
  p.w = {x.dim(3), size[1]};
  for (const Bins* b : {&p.h, &p.w})  // the bins' arithmetic forms (i + 1) * in + out - 1
    if (b->in > (std::numeric_limits<int64_t>::max() - b->out) / b->out)
      fail("x %s into %lld bins per axis is beyond 64-bit index arithmetic",
           x.describe().c_str(), (long long)b->out);
  return p;
}

// adaptive_*_pool2d(x) -> out.
inline AdaptivePooling check_adaptive_pool2d(const Attrs& attrs, const Slots& in,
                                             const Slots& out) {
  return adaptive_pooling_of(attrs, in(0), out(0), "out");
}

// adaptive_*_pool2d_grad(x, out_grad) -> x_grad, x's shape and dtype.
inline AdaptivePooling check_adaptive_pool2d_grad(const Attrs& attrs, const Slots& in,
                                                  const Slots& out) {
  const AdaptivePooling p = adaptive_pooling_of(attrs, in(0), in(1), "out_grad");
  expect_same_shape(in(0), out(0), "x and x_grad");
  expect_same_dtype(in(0), out(0), "x and x_grad");
  return p;
}

// Each call gets `ws`, workspace_bytes() of scratch memory (64-byte aligned, content
// undefined): the kernel's workspace (pc::Workspace).
class PoolEngine {
 public:
  virtual ~PoolEngine() = default;
  virtual size_t workspace_bytes() const = 0;
  virtual void forward(const void* x, void* y, char* ws, int threads) const = 0;
  virtual void backward(const void* x, const void* dy, void* dx, char* ws, int threads) const = 0;
};

// float32 pooling of x [batch, channels, H, W] through oneDNN, for forward or backward, x
// (and x_grad) and out (and out_grad) in the layouts `layout` gives (pool_dnnl.cpp, built with
// oneDNN only).
std::unique_ptr<PoolEngine> make_dnnl_pool(const Pooling& p, int64_t batch, int64_t channels,
                                           bool backward, int threads, Layouts layout);

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_POOL_HPP_
