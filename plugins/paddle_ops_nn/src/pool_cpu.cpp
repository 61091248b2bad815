// pool2d (max and average over NCHW windows) and its gradient: oneDNN for float32 where
// enabled (pool_dnnl.cpp, engine.hpp), otherwise loops over the planes (N * C of them, split
// across threads).
//
// Memory contract: x [N, C, H, W]; out and out_grad [N, C, OH, OW] with OH from window.hpp's
// window_count; x_grad x's shape. Checked in prepare. Each window holds at least one input
// element (padding is smaller than the window, and ceil_mode drops a window of padding only),
// so a maximum and an average always exist.
#include <algorithm>
#include <limits>
#include <string>

#include "engine.hpp"
#include "pool.hpp"

namespace pon {
namespace {

// Calls f(out_index, h_lo, h_hi, w_lo, w_hi, count) for every window of one plane; count is the
// average's divisor.
template <class F> void for_windows(const Pooling& p, F&& f) {
  for (int64_t oh = 0; oh < p.h.out; ++oh) {
    int64_t h0, h1;
    Pooling::range(p.h, oh, &h0, &h1);
    for (int64_t ow = 0; ow < p.w.out; ++ow) {
      int64_t w0, w1;
      Pooling::range(p.w, ow, &w0, &w1);
      f(oh * p.w.out + ow, h0, h1, w0, w1, p.divisor(h0, h1, w0, w1));
    }
  }
}

template <class T> void pool(const Pooling& p, const T* x, T* y, int64_t planes, int threads) {
  const int64_t grain = std::max<int64_t>(kGrain / std::max<int64_t>(p.in_plane(), 1), 1);
  parallel_for(planes, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      const T* plane = x + c * p.in_plane();
      T* out = y + c * p.out_plane();
      for_windows(p, [&](int64_t o, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t count) {
        if (p.max) {
          out[o] = plane[window_argmax(plane, p.w.in, h0, h1, w0, w1)];
          return;
        }
        T sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) sum += plane[ih * p.w.in + iw];
        out[o] = sum / static_cast<T>(count);
      });
    }
  });
}

template <class T>
void pool_grad(const Pooling& p, const T* x, const T* dy, T* dx, int64_t planes, int threads) {
  const int64_t grain = std::max<int64_t>(kGrain / std::max<int64_t>(p.in_plane(), 1), 1);
  parallel_for(planes, threads, grain, [&](int64_t lo, int64_t hi) {
    std::fill(dx + lo * p.in_plane(), dx + hi * p.in_plane(), T(0));
    for (int64_t c = lo; c < hi; ++c) {
      const T* plane = x + c * p.in_plane();
      const T* g = dy + c * p.out_plane();
      T* d = dx + c * p.in_plane();
      for_windows(p, [&](int64_t o, int64_t h0, int64_t h1, int64_t w0, int64_t w1, int64_t count) {
        if (p.max) {
          d[window_argmax(plane, p.w.in, h0, h1, w0, w1)] += g[o];
          return;
        }
        const T share = g[o] / static_cast<T>(count);
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) d[ih * p.w.in + iw] += share;
      });
    }
  });
}

// Whether x holds a NaN. oneDNN's max pooling drops NaNs; the loops keep them (as NumPy's and
// PyTorch's max do), so a float32 x with a NaN takes the loops. The scan costs a read of x.
bool has_nan(const Tensor& x, int threads) {
  const float* v = x.data<float>();
  int found = 0;
  parallel_for(x.numel(), threads, kGrain, [&](int64_t lo, int64_t hi) {
    bool nan = false;
    for (int64_t i = lo; i < hi; ++i) nan |= v[i] != v[i];
    if (nan) {
#pragma omp atomic write
      found = 1;
    }
  });
  return found != 0;
}

// oneDNN's engine for a float32 x with elements where oneDNN is enabled, else none (the loops).
std::unique_ptr<PoolEngine> engine_for(const Pooling& p, const Tensor& x, bool backward,
                                       const Context& ctx) {
  if constexpr (kOnednnBuilt)
    if (x.dtype() == PC_FLOAT32 && x.numel() > 0 && onednn_enabled())
      return make_dnnl_pool(p, x.dim(0), x.dim(1), backward, ctx.num_threads());
  return nullptr;
}

class Pool2d {
 public:
  Pool2d(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : p_(check_pool2d(attrs, in, out)) {
    engine_ = engine_for(p_, in(0), false, ctx);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor x = in(0);
    if (engine_ && !(p_.max && has_nan(x, ctx.num_threads())))
      return engine_->forward(x.data<void>(), out(0).data<void>(), ctx.num_threads());
    dispatch(x.dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      pool(p_, x.data<T>(), out(0).data<T>(), x.dim(0) * x.dim(1), ctx.num_threads());
    });
  }

 private:
  Pooling p_;
  std::unique_ptr<PoolEngine> engine_;
};

class Pool2dGrad {
 public:
  Pool2dGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : p_(check_pool2d_grad(attrs, in, out)) {
    engine_ = engine_for(p_, in(0), true, ctx);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor x = in(0);
    if (engine_ && !(p_.max && has_nan(x, ctx.num_threads())))
      return engine_->backward(x.data<void>(), in(1).data<void>(), out(0).data<void>(),
                               ctx.num_threads());
    dispatch(x.dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      pool_grad(p_, x.data<T>(), in(1).data<T>(), out(0).data<T>(), x.dim(0) * x.dim(1),
                ctx.num_threads());
    });
  }

 private:
  Pooling p_;
  std::unique_ptr<PoolEngine> engine_;
};

}  // namespace

const pc::Family& pool_kernels() {
  static const pc::Family family = {
      pc::kernel<Pool2d>("pool2d"),
      pc::kernel<Pool2dGrad>("pool2d_grad"),
  };
  return family;
}

}  // namespace pon
