// CUDA kernels of pool2d (max and average), adaptive_avg_pool2d, adaptive_max_pool2d and their
// gradients. Same checks, window arithmetic (pool.hpp: the clipped window, the average's
// divisor, the first maximum with NaN as the largest; the adaptive pools' bins) and dtypes as
// pool_cpu.cpp's loops, so the GPU gives the CPU loops' numbers: the same additions in the same
// order, except the adaptive averages' sums (the CPU's in eight partial sums).
//
// Memory contract: as the CPU kernels' (x [N, C, H, W], out and out_grad [N, C, OH, OW], x_grad
// x's shape) with channel_block 0 (the blocked layout is the CPU's: refused in prepare), all on
// the CUDA device of the plan's stream. Forward: one thread per output. The
// gradient gathers: one thread per element of x_grad adds up, in window order, what each window
// covering it sends it (its share of an average; out_grad where it is the window's first
// maximum), so no two threads write one element and no atomics are needed. Max pooling whose
// windows do not overlap (stride >= window: global pooling among them) instead has one thread
// per window write its maximum's gradient, which spares looking for the maximum once per input.
// The adaptive pools run the same way over their bins, except global pooling (output_size 1):
// one block of threads per plane, reducing it (the average's sum in double).
#include "cuda.cuh"
#include "pool.hpp"

namespace paddle_ops_nn {
namespace {

// The window of output element o (any plane): calls f(h0, h1, w0, w1), its clipped extent.
template <class F> __device__ void at_window(const Pooling& p, int64_t o, F&& f) {
  int64_t h0, h1, w0, w1;
  Pooling::range(p.h, o / p.w.out % p.h.out, &h0, &h1);
  Pooling::range(p.w, o % p.w.out, &w0, &w1);
  f(h0, h1, w0, w1);
}

template <class T> __global__ void pool_kernel(Pooling p, const T* x, T* y, int64_t n) {
  for (int64_t o = first_index(); o < n; o += index_step()) {
    const T* plane = x + o / p.out_plane() * p.in_plane();
    at_window(p, o, [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
      if (p.max) {
        y[o] = plane[window_argmax(plane, p.w.in, h0, h1, w0, w1)];
        return;
      }
      T sum = 0;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) sum += plane[ih * p.w.in + iw];
      y[o] = sum / static_cast<T>(p.divisor(h0, h1, w0, w1));
    });
  }
}

// The windows along axis `a` that cover input position i: [*lo, *hi).
__device__ inline void windows_covering(const Axis& a, int64_t i, int64_t* lo, int64_t* hi) {
  const int64_t from = i + a.pad_before - a.kernel + 1;  // the first window starts at or after
  *lo = from <= 0 ? 0 : (from + a.stride - 1) / a.stride;
  *hi = std::min<int64_t>((i + a.pad_before) / a.stride + 1, a.out);
}

// x_grad[e]: the sum over the windows covering e, in window order, as pool_cpu.cpp adds them.
template <class T>
__global__ void pool_grad_gather_kernel(Pooling p, const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t c = e / p.in_plane(), at = e % p.in_plane();
    const int64_t ih = at / p.w.in, iw = at % p.w.in;
    const T* plane = x + c * p.in_plane();
    const T* g = dy + c * p.out_plane();
    int64_t oh0, oh1, ow0, ow1;
    windows_covering(p.h, ih, &oh0, &oh1);
    windows_covering(p.w, iw, &ow0, &ow1);
    T sum = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        int64_t h0, h1, w0, w1;
        Pooling::range(p.h, oh, &h0, &h1);
        Pooling::range(p.w, ow, &w0, &w1);
        const T share = g[oh * p.w.out + ow];
        if (!p.max)
          sum += share / static_cast<T>(p.divisor(h0, h1, w0, w1));
        else if (window_argmax(plane, p.w.in, h0, h1, w0, w1) == at)
          sum += share;
      }
    dx[e] = sum;
  }
}

// Max pooling with windows that share no input: each window adds its gradient at its maximum
// (x_grad zeroed first), one thread per window.
template <class T>
__global__ void pool_grad_scatter_kernel(Pooling p, const T* x, const T* dy, T* dx, int64_t n) {
  for (int64_t o = first_index(); o < n; o += index_step()) {
    const int64_t c = o / p.out_plane();
    const T* plane = x + c * p.in_plane();
    at_window(p, o, [&](int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
      dx[c * p.in_plane() + window_argmax(plane, p.w.in, h0, h1, w0, w1)] += dy[o];
    });
  }
}

// Whether no input lies in two windows: along each axis, one window or a stride of at least
// the window.
bool windows_disjoint(const Pooling& p) {
  return (p.h.out == 1 || p.h.stride >= p.h.kernel) && (p.w.out == 1 || p.w.stride >= p.w.kernel);
}

class Pool2dCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;  // launch_floats
  Pool2dCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(check_pool2d(plain_only(attrs), in, out).p) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = out(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      pool_kernel<<<g.blocks, g.threads, 0, stream>>>(p_, in(0).data<T>(), out(0).data<T>(), n);
    });
  }

 private:
  Pooling p_;
};

class Pool2dGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;  // launch_floats
  Pool2dGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(check_pool2d_grad(plain_only(attrs), in, out).p),
        scatter_(p_.max && windows_disjoint(p_)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor x = in(0), dx = out(0);
    if (!scatter_) {
      const int64_t n = dx.numel();
      launch_floats(n, x.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
        using T = decltype(t);
        pool_grad_gather_kernel<<<g.blocks, g.threads, 0, stream>>>(
            p_, x.data<T>(), in(1).data<T>(), dx.data<T>(), n);
      });
      return;
    }
    zero_async(dx.data<void>(), dx.nbytes(), stream_of(ctx));
    const int64_t n = in(1).numel();
    launch_floats(n, x.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      pool_grad_scatter_kernel<<<g.blocks, g.threads, 0, stream>>>(
          p_, x.data<T>(), in(1).data<T>(), dx.data<T>(), n);
    });
  }

 private:
  Pooling p_;
  bool scatter_;
};

// -- adaptive pooling ---------------------------------------------------------------------------

// Whether (v, i) comes before (b, j) as a window's maximum: larger, a NaN where b is not, or
// as large (or both NaN) and earlier; j < 0 is no candidate. window_argmax's order, so a block
// finds the same element as the CPU's loop.
__device__ inline bool beats(double v, int64_t i, double b, int64_t j) {
  if (j < 0) return i >= 0;
  if (i < 0) return false;
  const bool vn = v != v, bn = b != b;
  if (vn != bn) return vn;
  if (!vn && v != b) return v > b;
  return i < j;
}

// Global pooling, one block per plane (N * C of them): the block's threads read strided parts
// of the plane, then join them in a fixed tree. Average: out = the plane's sum (in double) /
// H * W. Max (dy given, with dx zeroed): out = the first maximum, or with dy the plane's
// gradient dy to it.
template <bool Max, class T>
__global__ void global_pool_kernel(AdaptivePooling p, const T* x, T* y, const T* dy, T* dx) {
  __shared__ double best[kBlock];
  __shared__ int64_t at[kBlock];
  const int t = static_cast<int>(threadIdx.x);
  const int64_t n = p.in_plane();
  for (int64_t c = blockIdx.x; c < p.planes; c += gridDim.x) {
    const T* plane = x + c * n;
    if (!Max) {
      double sum[1] = {0};
      for (int64_t i = t; i < n; i += kBlock) sum[0] += double(plane[i]);
      block_sums(sum);
      if (t == 0) y[c] = static_cast<T>(sum[0] / double(n));
      continue;
    }
    double v = 0;
    int64_t i_best = -1;
    for (int64_t i = t; i < n; i += kBlock)
      if (beats(double(plane[i]), i, v, i_best)) v = double(plane[i]), i_best = i;
    best[t] = v, at[t] = i_best;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half /= 2) {
      if (t < half && beats(best[t + half], at[t + half], best[t], at[t]))
        best[t] = best[t + half], at[t] = at[t + half];
      __syncthreads();
    }
    if (t == 0) {
      if (dy != nullptr)
        dx[c * n + at[0]] = dy[c];
      else
        y[c] = plane[at[0]];
    }
    __syncthreads();  // thread 0 has read the winner before the slots are used again
  }
}

// Any other output size: one thread per output.
template <bool Max, class T>
__global__ void adaptive_pool_kernel(AdaptivePooling p, const T* x, T* y, int64_t n) {
  for (int64_t o = first_index(); o < n; o += index_step()) {
    const T* plane = x + o / p.out_plane() * p.in_plane();
    int64_t h0, h1, w0, w1;
    p.bin(o % p.out_plane(), &h0, &h1, &w0, &w1);
    if (Max) {
      y[o] = plane[window_argmax(plane, p.w.in, h0, h1, w0, w1)];
      continue;
    }
    T sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) sum += plane[ih * p.w.in + iw];
    y[o] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
  }
}

// Average's gradient: one thread per element of x_grad, gathering its bins' shares.
template <class T>
__global__ void adaptive_avg_grad_kernel(AdaptivePooling p, const T* dy, T* dx, int64_t n) {
  for (int64_t e = first_index(); e < n; e += index_step())
    dx[e] = adaptive_avg_share(p, dy + e / p.in_plane() * p.out_plane(), e % p.in_plane());
}

// Max's gradient where no element lies in two bins: one thread per bin adds its gradient at
// its maximum (x_grad zeroed first).
template <class T>
__global__ void adaptive_max_grad_scatter_kernel(AdaptivePooling p, const T* x, const T* dy,
                                                 T* dx, int64_t n) {
  for (int64_t o = first_index(); o < n; o += index_step()) {
    const int64_t c = o / p.out_plane();
    const T* plane = x + c * p.in_plane();
    int64_t h0, h1, w0, w1;
    p.bin(o % p.out_plane(), &h0, &h1, &w0, &w1);
    dx[c * p.in_plane() + window_argmax(plane, p.w.in, h0, h1, w0, w1)] += dy[o];
  }
}

// Max's gradient where bins share elements: one thread per element of x_grad adds, in bin
// order, the gradient of each bin covering it whose maximum it is.
template <class T>
__global__ void adaptive_max_grad_gather_kernel(AdaptivePooling p, const T* x, const T* dy,
                                                T* dx, int64_t n) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t c = e / p.in_plane(), at = e % p.in_plane();
    const T* plane = x + c * p.in_plane();
    int64_t oh0, oh1, ow0, ow1;
    p.h.covering(at / p.w.in, &oh0, &oh1);
    p.w.covering(at % p.w.in, &ow0, &ow1);
    T sum = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t h0 = p.h.start(oh), h1 = p.h.end(oh), w0 = p.w.start(ow), w1 = p.w.end(ow);
        if (window_argmax(plane, p.w.in, h0, h1, w0, w1) == at)
          sum += dy[c * p.out_plane() + oh * p.w.out + ow];
      }
    dx[e] = sum;
  }
}

// One block per plane for global pooling (launch_floats' grid is one thread per item).
template <bool Max>
void launch_global(const AdaptivePooling& p, int32_t dtype, const void* x, void* y,
                   const void* dy, void* dx, cudaStream_t stream) {
  if (p.planes == 0) return;
  dispatch(dtype, Floats{}, [&](auto t) {
    using T = decltype(t);
    global_pool_kernel<Max, T><<<blocks_for(p.planes), kBlock, 0, stream>>>(
        p, static_cast<const T*>(x), static_cast<T*>(y), static_cast<const T*>(dy),
        static_cast<T*>(dx));
  });
  check_launch();
}

// adaptive_avg_pool2d (Max false) and adaptive_max_pool2d.
template <bool Max> class AdaptivePool2dCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;  // launch_floats
  AdaptivePool2dCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(check_adaptive_pool2d(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (p_.global())
      return launch_global<Max>(p_, in(0).dtype(), in(0).data<void>(), out(0).data<void>(),
                                nullptr, nullptr, stream_of(ctx));
    const int64_t n = out(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      adaptive_pool_kernel<Max><<<g.blocks, g.threads, 0, stream>>>(
          p_, in(0).data<T>(), out(0).data<T>(), n);
    });
  }

 private:
  AdaptivePooling p_;
};

// Their gradients. Inputs: x, out_grad; output: x_grad.
template <bool Max> class AdaptivePool2dGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;  // launch_floats
  AdaptivePool2dGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(check_adaptive_pool2d_grad(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor x = in(0), dx = out(0);
    if (!Max) {
      launch_floats(dx.numel(), x.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
        using T = decltype(t);
        adaptive_avg_grad_kernel<<<g.blocks, g.threads, 0, stream>>>(
            p_, in(1).data<T>(), dx.data<T>(), dx.numel());
      });
      return;
    }
    if (!(p_.h.disjoint() && p_.w.disjoint())) {
      launch_floats(dx.numel(), x.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
        using T = decltype(t);
        adaptive_max_grad_gather_kernel<<<g.blocks, g.threads, 0, stream>>>(
            p_, x.data<T>(), in(1).data<T>(), dx.data<T>(), dx.numel());
      });
      return;
    }
    zero_async(dx.data<void>(), dx.nbytes(), stream_of(ctx));
    if (p_.global())
      return launch_global<true>(p_, x.dtype(), x.data<void>(), nullptr, in(1).data<void>(),
                                 dx.data<void>(), stream_of(ctx));
    const int64_t n = in(1).numel();
    launch_floats(n, x.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      adaptive_max_grad_scatter_kernel<<<g.blocks, g.threads, 0, stream>>>(
          p_, x.data<T>(), in(1).data<T>(), dx.data<T>(), n);
    });
  }

 private:
  AdaptivePooling p_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Pool2dCuda>("pool2d_cuda"),
    pc::kernel<Pool2dGradCuda>("pool2d_grad_cuda"),
    pc::kernel<AdaptivePool2dCuda<false>>("adaptive_avg_pool2d_cuda"),
    pc::kernel<AdaptivePool2dGradCuda<false>>("adaptive_avg_pool2d_grad_cuda"),
    pc::kernel<AdaptivePool2dCuda<true>>("adaptive_max_pool2d_cuda"),
    pc::kernel<AdaptivePool2dGradCuda<true>>("adaptive_max_pool2d_grad_cuda"));

}  // namespace paddle_ops_nn
