// CUDA kernels of conv2d, conv2d_transpose and their gradients. Same checks (conv_checks.hpp),
// geometry (window.hpp) and dtypes as conv_cpu.cpp, and the same passes of one convolution
// engine (conv_cuda.cuh): cuDNN where it serves, else the direct kernels below.
//
// Memory contract: as the CPU kernels' (NCHW, C-contiguous; shapes checked in prepare; conv2d's
// channel_block 0: the blocked layout is the CPU's, refused in prepare), all on the CUDA device
// of the plan's stream. The direct kernels give each output element one thread
// that adds up its products in T, in a fixed order (forward: one per element of y; backward
// data: one per element of dx, gathering from the windows that cover it); the weights'
// gradient and the bias's are sums over the batch and the image, one block per element of dw
// (or per channel) adding in double with a fixed-order block sum. No atomics anywhere: every
// run gives the same bits. cuDNN's algorithms are chosen deterministic too (cudnn_cuda.cu).
#include <atomic>

#include "conv_checks.hpp"
#include "conv_cuda.cuh"

namespace paddle_ops_nn {
namespace {

// The group of channels (or filters) `c` of `count` in `groups` belongs to, and its index there.
__device__ inline void split_group(int64_t c, int64_t count, int64_t groups, int64_t* g,
                                   int64_t* in_group) {
  const int64_t per = count / groups;
  *g = c / per;
  *in_group = c % per;
}

// y[n, k, oh, ow] = sum over the group's channels c and taps (i, j) of x[n, c, ih, iw] *
// w[k, c', i, j].
template <class T>
__global__ void conv_forward_kernel(ConvShape s, const T* x, const T* w, T* y, int64_t n) {
  const int64_t group_channels = s.channels / s.groups;
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t ow = e % s.w.out, oh = e / s.w.out % s.h.out;
    const int64_t k = e / s.out_plane() % s.filters, image = e / s.out_plane() / s.filters;
    int64_t g, unused;
    split_group(k, s.filters, s.groups, &g, &unused);
    T sum = 0;
    for (int64_t cg = 0; cg < group_channels; ++cg) {
      const T* plane = x + (image * s.channels + g * group_channels + cg) * s.in_plane();
      const T* taps = w + (k * group_channels + cg) * s.h.kernel * s.w.kernel;
      for (int64_t i = 0; i < s.h.kernel; ++i) {
        const int64_t ih = s.h.position(oh, i);
        if (ih < 0 || ih >= s.h.in) continue;
        for (int64_t j = 0; j < s.w.kernel; ++j) {
          const int64_t iw = s.w.position(ow, j);
          if (iw >= 0 && iw < s.w.in) sum += plane[ih * s.w.in + iw] * taps[i * s.w.kernel + j];
        }
      }
    }
    y[e] = sum;
  }
}

// The window along axis `a` whose tap j lands on input position i, or -1 for none.
__device__ inline int64_t window_of_tap(const Axis& a, int64_t i, int64_t j) {
  const int64_t t = i + a.pad_before - j * a.dilation;
  if (t < 0 || t % a.stride != 0) return -1;
  const int64_t o = t / a.stride;
  return o < a.out ? o : -1;
}

// dx[n, c, ih, iw] = sum over the group's filters k and the taps (i, j) that land on (ih, iw)
// of dy[n, k, oh, ow] * w[k, c', i, j].
template <class T>
__global__ void conv_backward_data_kernel(ConvShape s, const T* dy, const T* w, T* dx,
                                          int64_t n) {
  const int64_t group_channels = s.channels / s.groups, group_filters = s.filters / s.groups;
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t iw = e % s.w.in, ih = e / s.w.in % s.h.in;
    const int64_t c = e / s.in_plane() % s.channels, image = e / s.in_plane() / s.channels;
    int64_t g, cg;
    split_group(c, s.channels, s.groups, &g, &cg);
    T sum = 0;
    for (int64_t kg = 0; kg < group_filters; ++kg) {
      const int64_t k = g * group_filters + kg;
      const T* plane = dy + (image * s.filters + k) * s.out_plane();
      const T* taps = w + (k * group_channels + cg) * s.h.kernel * s.w.kernel;
      for (int64_t i = 0; i < s.h.kernel; ++i) {
        const int64_t oh = window_of_tap(s.h, ih, i);
        if (oh < 0) continue;
        for (int64_t j = 0; j < s.w.kernel; ++j) {
          const int64_t ow = window_of_tap(s.w, iw, j);
          if (ow >= 0) sum += plane[oh * s.w.out + ow] * taps[i * s.w.kernel + j];
        }
      }
    }
    dx[e] = sum;
  }
}

// dw[k, c', i, j] = sum over images and windows of x[n, c, ih, iw] * dy[n, k, oh, ow]: one block
// per element of dw.
template <class T>
__global__ void conv_backward_weights_kernel(ConvShape s, const T* x, const T* dy, T* dw,
                                             int64_t n) {
  const int64_t group_channels = s.channels / s.groups, taps = s.h.kernel * s.w.kernel;
  const int64_t terms = s.batch * s.out_plane();
  for (int64_t e = blockIdx.x; e < n; e += gridDim.x) {
    const int64_t j = e % s.w.kernel, i = e / s.w.kernel % s.h.kernel;
    const int64_t cg = e / taps % group_channels, k = e / taps / group_channels;
    int64_t g, unused;
    split_group(k, s.filters, s.groups, &g, &unused);
    const int64_t c = g * group_channels + cg;
    double sum[1] = {0};
    for (int64_t t = threadIdx.x; t < terms; t += kBlock) {
      const int64_t at = t % s.out_plane(), image = t / s.out_plane();
      const int64_t oh = at / s.w.out, ow = at % s.w.out;
      const int64_t ih = s.h.position(oh, i), iw = s.w.position(ow, j);
      if (ih < 0 || ih >= s.h.in || iw < 0 || iw >= s.w.in) continue;
      sum[0] += double(x[(image * s.channels + c) * s.in_plane() + ih * s.w.in + iw]) *
                double(dy[(image * s.filters + k) * s.out_plane() + at]);
    }
    block_sums(sum);
    if (threadIdx.x == 0) dw[e] = static_cast<T>(sum[0]);
  }
}

// The direct engine: the kernels above, one launch per pass.
template <class T> class DirectConv final : public CudaConvEngine {
 public:
  explicit DirectConv(const ConvShape& s) : s_(s) {}

  void forward(const void* x, const void* w, void* y, cudaStream_t stream) const override {
    const int64_t n = s_.batch * s_.filters * s_.out_plane();
    if (n == 0) return;
    const Grid g = grid_for(n);
    conv_forward_kernel<<<g.blocks, g.threads, 0, stream>>>(
        s_, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), n);
    check_launch();
  }

  void backward_data(const void* dy, const void* w, void* dx, cudaStream_t stream) const override {
    const int64_t n = s_.batch * s_.channels * s_.in_plane();
    if (n == 0) return;
    const Grid g = grid_for(n);
    conv_backward_data_kernel<<<g.blocks, g.threads, 0, stream>>>(
        s_, static_cast<const T*>(dy), static_cast<const T*>(w), static_cast<T*>(dx), n);
    check_launch();
  }

  void backward_weights(const void* x, const void* dy, void* dw,
                        cudaStream_t stream) const override {
    const int64_t n = s_.filters * s_.taps();
    if (n == 0) return;
    conv_backward_weights_kernel<<<blocks_for(n), kBlock, 0, stream>>>(
        s_, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw), n);
    check_launch();
  }

 private:
  ConvShape s_;
};

// How many engines of each kind kernels have prepared in this process (cuDNN's, the direct
// one), so that tests and benchmarks can tell which computed a convolution.
std::atomic<int64_t> cudnn_engines{0}, direct_engines{0};

// cuDNN's engine where it serves, else the direct one (nullptr for no passes).
std::unique_ptr<CudaConvEngine> engine_for(const ConvPlan& plan, int32_t dtype,
                                           const Context& ctx) {
  if (!plan.passes) return nullptr;
  if (auto cudnn = make_cudnn_conv(plan.shape, dtype, plan.passes, stream_of(ctx))) {
    ++cudnn_engines;
    return cudnn;
  }
  ++direct_engines;
  return dispatch(dtype, ConvTypes{}, [&](auto t) -> std::unique_ptr<CudaConvEngine> {
    return std::make_unique<DirectConv<decltype(t)>>(plan.shape);
  });
}

// -- the bias ----------------------------------------------------------------------------------

// y[n, c, :] += b[c] over planes of `plane` elements.
template <class T>
__global__ void add_bias_kernel(const T* b, T* y, int64_t n, int64_t channels, int64_t plane) {
  for (int64_t e = first_index(); e < n; e += index_step()) y[e] += b[e / plane % channels];
}

// db[c] = the sum of dy[:, c, :], one block per channel, in double.
template <class T>
__global__ void bias_grad_kernel(const T* dy, T* db, int64_t batch, int64_t channels,
                                 int64_t plane) {
  const int64_t terms = batch * plane;
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double sum[1] = {0};
    for (int64_t t = threadIdx.x; t < terms; t += kBlock)
      sum[0] += double(dy[(t / plane * channels + c) * plane + t % plane]);
    block_sums(sum);
    if (threadIdx.x == 0) db[c] = static_cast<T>(sum[0]);
  }
}

void add_bias(const Tensor& b, const Tensor& y, int64_t plane, const Context& ctx) {
  const int64_t n = y.numel(), channels = b.dim(0);
  launch_floats(n, y.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
    using T = decltype(t);
    add_bias_kernel<<<g.blocks, g.threads, 0, stream>>>(b.data<T>(), y.data<T>(), n, channels,
                                                        plane);
  });
}

void bias_grad(const Tensor& dy, const Tensor& db, int64_t batch, int64_t plane,
               const Context& ctx) {
  const int64_t channels = db.dim(0);
  if (channels == 0) return;
  dispatch(dy.dtype(), ConvTypes{}, [&](auto t) {
    using T = decltype(t);
    bias_grad_kernel<<<blocks_for(channels), kBlock, 0, stream_of(ctx)>>>(
        dy.data<T>(), db.data<T>(), batch, channels, plane);
  });
  check_launch();
}

void zero(const Tensor& t, const Context& ctx) {
  zero_async(t.data<void>(), t.nbytes(), stream_of(ctx));
}

// Gradient output `slot`, where the program asks for it: compute(its data) when the plan has
// `pass`, else zeros (an empty convolution, as on the CPU).
template <class F>
void grad_output(const ConvPlan& plan, unsigned pass, const Slots& out, int32_t slot,
                 const Context& ctx, F&& compute) {
  if (!out.has(slot)) return;
  if (plan.passes & pass) return compute(out(slot).data<void>());
  zero(out(slot), ctx);
}

// -- the kernels -------------------------------------------------------------------------------

// What the four kernels hold: the plan their shared check (conv_checks.hpp) made in prepare, and
// its engine.
class ConvCudaKernel {
 protected:
  ConvCudaKernel(const ConvPlan& plan, const Slots& in, const Slots& out, const Context& ctx)
      : plan_(plan) {
    expect_cuda(in, out);
    engine_ = engine_for(plan_, in(kX).dtype(), ctx);
  }

  ConvPlan plan_;
  std::unique_ptr<CudaConvEngine> engine_;
};

// (filter_fingerprint, checked, is for the CPU's oneDNN engine: this one keeps no converted
// filter to reuse; a residual or fuse_activation is refused)
class Conv2dCuda : ConvCudaKernel {
 public:
  static constexpr pc::Signature signature{"11???", "1"};
  using DTypes = ConvTypes;
  Conv2dCuda(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : ConvCudaKernel(without_epilogue(check_conv2d(plain_only(attrs), in, out)), in, out,
                       ctx) {}

  // Without an engine (an empty convolution), out is zeros plus the bias: over no input
  // channels, the bias alone (as on the CPU).
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (!engine_)
      zero(out(0), ctx);
    else
      engine_->forward(in(kX).data<void>(), in(kFilter).data<void>(), out(0).data<void>(),
                       stream_of(ctx));
    if (in.has(kBias)) add_bias(in(kBias), out(0), plan_.shape.out_plane(), ctx);
  }
};

// The bias's gradient is this file's kernel, not the engine's: the engine computes the
// weights' gradient only where the program asks for filter_grad.
ConvPlan without_unwanted_weights(ConvPlan plan, const Slots& out) {
  if (!out.has(1)) plan.passes &= ~kBackwardWeights;
  return plan;
}

class Conv2dGradCuda : ConvCudaKernel {
 public:
  static constexpr pc::Signature signature{"111?", "???"};
  using DTypes = ConvTypes;
  Conv2dGradCuda(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : ConvCudaKernel(
            without_unwanted_weights(check_conv2d_grad(plain_only(attrs), in, out), out), in,
            out, ctx) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    const void* g = in(kOutGrad).data<void>();
    grad_output(plan_, kBackwardData, out, 0, ctx, [&](void* dx) {
      engine_->backward_data(g, in(kFilter).data<void>(), dx, stream);
    });
    grad_output(plan_, kBackwardWeights, out, 1, ctx, [&](void* dw) {
      engine_->backward_weights(in(kX).data<void>(), g, dw, stream);
    });
    // The sums of out_grad, also for an empty convolution (over no input channels, out is the
    // bias; no image or filter: zeros or nothing), as on the CPU.
    if (!out.has(2)) return;
    bias_grad(in(kOutGrad), out(2), plan_.shape.batch, plan_.shape.out_plane(), ctx);
  }
};

// conv2d_transpose(x, filter) is the gradient of conv2d(out, filter) w.r.t. out: that
// conv2d's engine runs it backwards.
class Conv2dTransposeCuda : ConvCudaKernel {
 public:
  static constexpr pc::Signature signature{"11?", "1"};
  using DTypes = ConvTypes;
  Conv2dTransposeCuda(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : ConvCudaKernel(check_conv2d_transpose(attrs, in, out), in, out, ctx) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (!engine_)
      zero(out(0), ctx);  // plus the bias below: over x's no channels, the bias alone
    else
      engine_->backward_data(in(kX).data<void>(), in(kFilter).data<void>(), out(0).data<void>(),
                             stream_of(ctx));
    if (in.has(kBias)) add_bias(in(kBias), out(0), plan_.shape.in_plane(), ctx);
  }
};

class Conv2dTransposeGradCuda : ConvCudaKernel {
 public:
  static constexpr pc::Signature signature{"111?", "???"};
  using DTypes = ConvTypes;
  Conv2dTransposeGradCuda(const Attrs& attrs, const Slots& in, const Slots& out,
                          const Context& ctx)
      : ConvCudaKernel(check_conv2d_transpose_grad(attrs, in, out), in, out, ctx) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    const Tensor g = in(kOutGrad);
    grad_output(plan_, kForward, out, 0, ctx, [&](void* dx) {
      engine_->forward(g.data<void>(), in(kFilter).data<void>(), dx, stream);
    });
    grad_output(plan_, kBackwardWeights, out, 1, ctx, [&](void* dw) {
      engine_->backward_weights(g.data<void>(), in(kX).data<void>(), dw, stream);
    });
    if (out.has(2)) bias_grad(g, out(2), plan_.shape.batch, plan_.shape.in_plane(), ctx);
  }
};

}  // namespace

void conv_engines_prepared(int64_t* cudnn, int64_t* direct) {
  *cudnn = cudnn_engines.load();
  *direct = direct_engines.load();
}

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Conv2dCuda>("conv2d_cuda"),
    pc::kernel<Conv2dGradCuda>("conv2d_grad_cuda"),
    pc::kernel<Conv2dTransposeCuda>("conv2d_transpose_cuda"),
    pc::kernel<Conv2dTransposeGradCuda>("conv2d_transpose_grad_cuda"));

}  // namespace paddle_ops_nn
