// pool2d (max and average over NCHW windows) and its gradient: oneDNN for float32 where
// enabled (pool_dnnl.cpp, engine.hpp), otherwise loops over the planes (N * C of them, split
// across threads). adaptive_avg_pool2d and adaptive_max_pool2d (pool.hpp's bins) and their
// gradients: loops over the planes.
//
// Memory contract: x [N, C, H, W]; out and out_grad [N, C, OH, OW] with OH from window.hpp's
// window_count (adaptive pools: output_size); x_grad x's shape. With channel_block b, out and
// out_grad are blocked [N, C / b, OH, OW, b] and x and x_grad plain or blocked (layout.hpp); the
// loops then work on plain copies. Checked in prepare (pool.hpp, shared with the CUDA kernels).
// Each window holds at least one input element (padding is smaller than the window, and
// ceil_mode drops a window of padding only; an adaptive bin is never empty, H and W being at
// least 1), so a maximum and an average always exist.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine.hpp"
#include "pool.hpp"
#include "pool_avx2.hpp"

namespace paddle_ops_nn {
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
  parallel_rows(planes, threads, grain, [&](int64_t lo, int64_t hi) {
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
  parallel_rows(planes, threads, grain, [&](int64_t lo, int64_t hi) {
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

// Whether v[0, n) holds a NaN, on the bits (a NaN's magnitude is above infinity's): the portable
// scan, for CPUs without AVX2.
bool nan_in_bits(const float* v, int64_t n) {
  uint32_t largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, v + i, sizeof bits);
    largest = std::max(largest, bits & 0x7fffffffu);
  }
  return largest > 0x7f800000u;
}

// Whether x holds a NaN. oneDNN's max pooling drops NaNs; the loops keep them (as NumPy's and
// PyTorch's max do), so a float32 x with a NaN takes the loops. The scan costs a read of x,
// pool_avx2.cpp's where the CPU has AVX2.
bool has_nan(const Tensor& x, int threads) {
  const float* v = x.data<float>();
  int found = 0;
  parallel_for(x.numel(), threads, kGrain, [&](int64_t lo, int64_t hi) {
    if (use_avx2() ? avx2::has_nan_f32(v + lo, hi - lo) : nan_in_bits(v + lo, hi - lo)) {
#pragma omp atomic write
      found = 1;
    }
  });
  return found != 0;
}

// oneDNN's engine for a float32 x with elements where oneDNN is enabled, else none (the loops).
std::unique_ptr<PoolEngine> engine_for(const PoolPlan& plan, const Tensor& x, bool backward,
                                       const Context& ctx) {
  if constexpr (kOnednnBuilt)
    if (x.dtype() == PC_FLOAT32 && x.numel() > 0 && onednn_enabled())
      return make_dnnl_pool(plan.p, plan.x.n, plan.x.c, backward, ctx.num_threads(),
                            {plan.x.channel_block(), plan.out.channel_block()});
  return nullptr;
}

// What the loops read: a blocked input as a plain copy (in `copy`), a plain one as it is.
template <class T>
const T* plain_input(const Activation& a, const T* data, std::vector<T>& copy, int threads) {
  if (a.block == 0) return data;
  copy.resize(static_cast<size_t>(a.n * a.c * a.plane()));
  to_plain(a, data, copy.data(), threads);
  return copy.data();
}

// Where the loops write a result of layout `a`: its buffer, or for a blocked one a plain copy
// that `finish` then blocks into it.
template <class T> T* plain_output(const Activation& a, T* data, std::vector<T>& copy) {
  if (a.block == 0) return data;
  copy.resize(static_cast<size_t>(a.n * a.c * a.plane()));
  return copy.data();
}

template <class T> void finish(const Activation& a, const std::vector<T>& copy, T* data, int threads) {
  if (a.block != 0) to_blocked(a, copy.data(), data, threads);
}

class Pool2d {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  Pool2d(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : plan_(check_pool2d(attrs, in, out)) {
    engine_ = engine_for(plan_, in(0), false, ctx);
    if (engine_) ws_ = pc::Workspace(ctx, engine_->workspace_bytes());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor x = in(0);
    const int threads = ctx.num_threads();
    if (engine_ && !(plan_.p.max && has_nan(x, threads)))
      return engine_->forward(x.data<void>(), out(0).data<void>(), ws_.data(ctx), threads);
    dispatch(x.dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      std::vector<T> xs, ys;
      const T* xp = plain_input(plan_.x, x.data<T>(), xs, threads);
      T* yp = plain_output(plan_.out, out(0).data<T>(), ys);
      pool(plan_.p, xp, yp, plan_.x.n * plan_.x.c, threads);
      finish(plan_.out, ys, out(0).data<T>(), threads);
    });
  }

 private:
  PoolPlan plan_;
  std::unique_ptr<PoolEngine> engine_;
  pc::Workspace ws_;
};

class Pool2dGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  Pool2dGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : plan_(check_pool2d_grad(attrs, in, out)) {
    engine_ = engine_for(plan_, in(0), true, ctx);
    if (engine_) ws_ = pc::Workspace(ctx, engine_->workspace_bytes());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor x = in(0);
    const int threads = ctx.num_threads();
    if (engine_ && !(plan_.p.max && has_nan(x, threads)))
      return engine_->backward(x.data<void>(), in(1).data<void>(), out(0).data<void>(),
                               ws_.data(ctx), threads);
    dispatch(x.dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      std::vector<T> xs, gs, dxs;
      const T* xp = plain_input(plan_.x, x.data<T>(), xs, threads);
      const T* gp = plain_input(plan_.out, in(1).data<T>(), gs, threads);
      T* dxp = plain_output(plan_.x, out(0).data<T>(), dxs);
      pool_grad(plan_.p, xp, gp, dxp, plan_.x.n * plan_.x.c, threads);
      finish(plan_.x, dxs, out(0).data<T>(), threads);
    });
  }

 private:
  PoolPlan plan_;  // the windows, x's (and x_grad's) layout and out_grad's
  std::unique_ptr<PoolEngine> engine_;
  pc::Workspace ws_;
};

// -- adaptive pooling: loops over the planes, split across threads --------------------------

// The sum of n contiguous values in eight interleaved partial sums: independent additions the
// compiler vectorizes (one running sum is a chain of dependent ones). Global pooling's sum.
template <class T> T contiguous_sum(const T* v, int64_t n) {
  T part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) part[k] += v[i + k];
  T sum = 0;
  for (; i < n; ++i) sum += v[i];
  for (int k = 0; k < 8; ++k) sum += part[k];
  return sum;
}

// The sum over rows [h0, h1), columns [w0, w1) of a plane `width` wide.
template <class T>
T bin_sum(const T* plane, int64_t width, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
  if (w0 == 0 && w1 == width) return contiguous_sum(plane + h0 * width, (h1 - h0) * width);
  T sum = 0;
  for (int64_t ih = h0; ih < h1; ++ih) sum += contiguous_sum(plane + ih * width + w0, w1 - w0);
  return sum;
}

// Rows of planes per thread chunk: about kGrain elements.
inline int64_t plane_grain(const AdaptivePooling& p) {
  return std::max<int64_t>(kGrain / std::max<int64_t>(p.in_plane(), 1), 1);
}

template <bool Max, class T>
void adaptive_pool(const AdaptivePooling& p, const T* x, T* y, int threads) {
  parallel_rows(p.planes, threads, plane_grain(p), [&](int64_t lo, int64_t hi) {
    if (p.global()) {  // one bin, the plane (a network's last pooling: planes of 4 to 49)
      const int64_t n = p.in_plane();
      for (int64_t c = lo; c < hi; ++c)
        y[c] = Max ? x[c * n + window_argmax(x + c * n, p.w.in, 0, p.h.in, 0, p.w.in)]
                   : contiguous_sum(x + c * n, n) / static_cast<T>(n);
      return;
    }
    for (int64_t c = lo; c < hi; ++c) {
      const T* plane = x + c * p.in_plane();
      T* out = y + c * p.out_plane();
      for (int64_t o = 0; o < p.out_plane(); ++o) {
        int64_t h0, h1, w0, w1;
        p.bin(o, &h0, &h1, &w0, &w1);
        const int64_t count = (h1 - h0) * (w1 - w0);
        out[o] = Max ? plane[window_argmax(plane, p.w.in, h0, h1, w0, w1)]
                     : bin_sum(plane, p.w.in, h0, h1, w0, w1) / static_cast<T>(count);
      }
    }
  });
}

// Max: each bin's gradient to its first maximum, bins in order (x_grad zeroed first).
template <class T>
void adaptive_max_pool_grad(const AdaptivePooling& p, const T* x, const T* dy, T* dx, int threads) {
  parallel_rows(p.planes, threads, plane_grain(p), [&](int64_t lo, int64_t hi) {
    std::fill(dx + lo * p.in_plane(), dx + hi * p.in_plane(), T(0));
    for (int64_t c = lo; c < hi; ++c) {
      const T* plane = x + c * p.in_plane();
      for (int64_t o = 0; o < p.out_plane(); ++o) {
        int64_t h0, h1, w0, w1;
        p.bin(o, &h0, &h1, &w0, &w1);
        dx[c * p.in_plane() + window_argmax(plane, p.w.in, h0, h1, w0, w1)] +=
            dy[c * p.out_plane() + o];
      }
    }
  });
}

// Average: each bin's share (its out_grad over its size) added to the positions it covers, bins
// in order (x_grad zeroed first). Each position sums the shares of the bins covering it in bin
// order, the CUDA kernel's arithmetic (adaptive_avg_share), without its integer divisions per
// position: ResNet-18's [1, 512, 7, 7] took 556 us that way.
template <class T>
void adaptive_avg_pool_grad(const AdaptivePooling& p, const T* dy, T* dx, int threads) {
  parallel_rows(p.planes, threads, plane_grain(p), [&](int64_t lo, int64_t hi) {
    std::fill(dx + lo * p.in_plane(), dx + hi * p.in_plane(), T(0));
    for (int64_t c = lo; c < hi; ++c) {
      T* plane = dx + c * p.in_plane();
      for (int64_t o = 0; o < p.out_plane(); ++o) {
        int64_t h0, h1, w0, w1;
        p.bin(o, &h0, &h1, &w0, &w1);
        const T share = dy[c * p.out_plane() + o] / static_cast<T>((h1 - h0) * (w1 - w0));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) plane[ih * p.w.in + iw] += share;
      }
    }
  });
}

// adaptive_avg_pool2d (Max false) and adaptive_max_pool2d.
template <bool Max> class AdaptivePool2d {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  AdaptivePool2d(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(check_adaptive_pool2d(attrs, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      adaptive_pool<Max>(p_, in(0).data<T>(), out(0).data<T>(), ctx.num_threads());
    });
  }

 private:
  AdaptivePooling p_;
};

// Their gradients. Inputs: x, out_grad; output: x_grad.
template <bool Max> class AdaptivePool2dGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  AdaptivePool2dGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(check_adaptive_pool2d_grad(attrs, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      const T* dy = in(1).data<T>();
      T* dx = out(0).data<T>();
      if (Max)
        adaptive_max_pool_grad(p_, in(0).data<T>(), dy, dx, ctx.num_threads());
      else
        adaptive_avg_pool_grad(p_, dy, dx, ctx.num_threads());
    });
  }

 private:
  AdaptivePooling p_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Pool2d>("pool2d"),
    pc::kernel<Pool2dGrad>("pool2d_grad"),
    pc::kernel<AdaptivePool2d<false>>("adaptive_avg_pool2d"),
    pc::kernel<AdaptivePool2dGrad<false>>("adaptive_avg_pool2d_grad"),
    pc::kernel<AdaptivePool2d<true>>("adaptive_max_pool2d"),
    pc::kernel<AdaptivePool2dGrad<true>>("adaptive_max_pool2d_grad"));

}  // namespace paddle_ops_nn
