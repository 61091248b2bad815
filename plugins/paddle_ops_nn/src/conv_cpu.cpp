// conv2d and conv2d_transpose (NCHW, strides, paddings, dilations, groups, optional bias) and
// their gradients, computed by a convolution engine (conv.hpp): Winograd for float32 3x3
// convolutions of stride 1 where it suits, oneDNN for float32 where enabled (engine.hpp),
// im2col + OpenBLAS otherwise.
//
// Memory contract: x [N, C, H, W]; conv2d's filter [K, C / groups, kh, kw], out
// [N, K, OH, OW]; conv2d_transpose's filter [C, K / groups, kh, kw], out [N, K, OH, OW];
// bias [K]; every gradient the shape of its input. conv2d with channel_block b (float32 on
// oneDNN or the Winograd engine only): out and out_grad blocked [N, K / b, OH, OW, b], x and
// x_grad plain or blocked (layout.hpp). All checked in prepare (conv_checks.hpp, shared with
// the CUDA kernels).
#include <cstring>
#include <vector>

#include "conv_checks.hpp"
#include "engine.hpp"

namespace paddle_ops_nn {

namespace {

// Where the Winograd engine computes a convolution (each pass asked of it): a
// float32 3x3 filter, stride 1, with at least 64 channels in and out (multiples of 8), 32 tiles
// of 2x2 outputs, and at most half the direct convolution's multiplications (16 per tile
// against 9 per output: a tile mostly past the edge of odd or tiny outputs is waste), on
// channels last, nChw8c or plain NCHW. Measured with F(2x2, 3x3) on ResNet-18's shapes (F(4x4,
// 3x3), where make_winograd_conv takes it, was faster still): against oneDNN's brgemm kernels
// in inference, one thread, 0.52-0.65x its time at 128 and 256 channels, 0.89x at 64; against
// its jit kernels on nChw8c in training (1 and 2 threads, batch 1 at 224x224 and batch 32 at
// 32x32), 0.63-0.95x for the forward pass and 0.73-0.84x for the input gradient, which
// transforms the filter at every call. With its filter gradient in place of the built-in
// engine's OpenBLAS products, conv2d_grad (x's and the filter's gradients; ResNet-18's 3x3
// shapes at batch 1 and 32, bench_conv's) took 0.55-0.84x the time at two threads and
// 0.31-1.0x at one, but 1.05-1.22x for 256 channels over 14x14 at batch 1 (49 tiles: short
// sums of a large transformed filter), kept for one rule: ResNet-18's training steps took
// 0.80-0.97x the time at one thread and 0.70-0.99x at two. Slower where these exclude it:
// 1.34x for 7x7 outputs at batch 1 in inference (16 tiles, GEMMs of 16 rows) and 1.5x in
// training, 6x for 1x1 outputs.
bool winograd_suits(const ConvShape& s, int32_t dtype, Layouts layout) {
  const auto unit = [](const Axis& a) { return a.kernel == 3 && a.stride == 1 && a.dilation == 1; };
  // Plain NCHW (staged in nChw8c) was measured on AVX2 only: where oneDNN blocks by 16
  // (AVX-512), its own kernels compute plain convolutions.
  const auto placed = [](int block) {
    return block == kChannelsLast || block == 8 || (block == 0 && onednn_channel_block() != 16);
  };
  const int64_t tiles = s.batch * ((s.h.out + 1) / 2) * ((s.w.out + 1) / 2);
  const int64_t outputs = s.batch * s.h.out * s.w.out;
  return winograd_enabled() && use_avx2() && dtype == PC_FLOAT32 &&
         placed(layout.x) && placed(layout.out) &&
         s.groups == 1 && unit(s.h) && unit(s.w) && s.channels >= 64 && s.filters >= 64 &&
         s.channels % 8 == 0 && s.filters % 8 == 0 && tiles >= 32 && 32 * tiles <= 9 * outputs;
}

}  // namespace

std::unique_ptr<ConvEngine> make_conv_engine(const ConvShape& shape, int32_t dtype, unsigned passes,
                                             bool bias, int threads, Layouts layout,
                                             const ConvEpilogue& epilogue, bool keep_filter) {
  if (winograd_suits(shape, dtype, layout))
    return make_winograd_conv(shape, passes, bias, layout, epilogue, keep_filter);
  if constexpr (kOnednnBuilt)
    if (dtype == PC_FLOAT32 && onednn_enabled())
      return make_dnnl_conv(shape, passes, bias, threads, layout, epilogue, keep_filter);
  if (layout.x != 0 || layout.out != 0)
    fail("channel_block %d (blocked tensors) needs float32 computed by oneDNN, but %s; leave "
         "channel_block 0 (the layout pass sets it only where oneDNN computes)",
         layout.out, dtype != PC_FLOAT32 ? "the tensors are not float32" : "oneDNN is not enabled");
  return make_gemm_conv(shape, dtype, passes, epilogue);
}

namespace {

void zero(const Tensor& t) {
  if (t.numel() > 0) std::memset(t.data<void>(), 0, static_cast<size_t>(t.nbytes()));
}

// out = bias per channel (zeros without one), in out's layout `a`: a convolution with no
// engine (conv_checks.hpp's empty()), which over no input channels gives its bias. A blocked
// out gets it through a plain copy (this is no case to make fast).
void bias_only(const Slots& in, int32_t bias_slot, const Tensor& out, const Activation& a,
               int threads) {
  zero(out);
  if (!in.has(bias_slot) || out.numel() == 0) return;
  const void* b = in(bias_slot).data<void>();
  if (a.block == 0)
    return add_channel_bias(out.dtype(), b, out.data<void>(), a.n, a.c, a.plane(), threads);
  dispatch(out.dtype(), Floats{}, [&](auto t) {
    using T = decltype(t);
    std::vector<T> plain(static_cast<size_t>(out.numel()), T(0));
    add_channel_bias(out.dtype(), b, plain.data(), a.n, a.c, a.plane(), threads);
    to_blocked(a, plain.data(), out.data<T>(), threads);
  });
}

// db = the sums of dy (layout `a`) per channel, over N, H and W, where no engine gives them.
void bias_grad_only(const Tensor& dy, const Tensor& db, const Activation& a, int threads) {
  if (a.block == 0)
    return channel_bias_grad(dy.dtype(), dy.data<void>(), db.data<void>(), a.n, a.c, a.plane(),
                             threads);
  dispatch(dy.dtype(), Floats{}, [&](auto t) {
    using T = decltype(t);
    std::vector<T> plain(static_cast<size_t>(dy.numel()));
    to_plain(a, dy.data<T>(), plain.data(), threads);
    channel_bias_grad(dy.dtype(), plain.data(), db.data<void>(), a.n, a.c, a.plane(), threads);
  });
}

// filter_fingerprint (optional, a fingerprint op's result): while it keeps its value the
// filter keeps its values, and the engine reuses the filter it converted on the last run.
class Conv2d {
 public:
  static constexpr pc::Signature signature{"11???", "1"};
  using DTypes = ConvTypes;
  Conv2d(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : plan_(check_conv2d(attrs, in, out)) {
    if (!plan_.passes) return;
    engine_ = make_conv_engine(plan_.shape, in(kX).dtype(), plan_.passes, in.has(kBias),
                               ctx.num_threads(), plan_.layout, plan_.epilogue,
                               in.has(kFingerprint));
    ws_ = pc::Workspace(ctx, engine_->workspace_bytes());
    ctx.add_state_bytes(engine_->state_bytes());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const void* residual = in.has(kResidual) ? in(kResidual).data<void>() : nullptr;
    if (!engine_) {
      const Tensor o = out(0);
      bias_only(in, kBias, o, conv_out(plan_.shape, plan_.layout.out, "out"), ctx.num_threads());
      return apply_epilogue(o.dtype(), plan_.epilogue, residual, o.data<void>(), o.numel(),
                            ctx.num_threads());
    }
    bool same_filter = false;
    int64_t fingerprint = 0;
    if (in.has(kFingerprint)) {
      fingerprint = *in(kFingerprint).data<int64_t>();
      same_filter = ran_ && fingerprint == fingerprint_;
    }
    engine_->forward(in(kX).data<void>(), in(kFilter).data<void>(),
                     in.has(kBias) ? in(kBias).data<void>() : nullptr, residual,
                     out(0).data<void>(), ws_.data(ctx), ctx.num_threads(), same_filter);
    fingerprint_ = fingerprint, ran_ = true;  // (after a run that converted this filter)
  }

 private:
  ConvPlan plan_;
  std::unique_ptr<ConvEngine> engine_;
  pc::Workspace ws_;
  mutable int64_t fingerprint_ = 0;  // the filter_fingerprint of the last run
  mutable bool ran_ = false;
};

// Outputs x_grad, filter_grad, bias_grad, each computed only when the program asks for it.
class Conv2dGrad {
 public:
  static constexpr pc::Signature signature{"111?", "???"};
  using DTypes = ConvTypes;
  Conv2dGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : plan_(check_conv2d_grad(attrs, in, out)) {
    if (!plan_.passes) return;
    engine_ = make_conv_engine(plan_.shape, in(kX).dtype(), plan_.passes, out.has(2),
                               ctx.num_threads(), plan_.layout);
    ws_ = pc::Workspace(ctx, engine_->workspace_bytes());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int threads = ctx.num_threads();
    const void* g = in(kOutGrad).data<void>();
    char* ws = ws_.data(ctx);
    if (!engine_) {
      for (int slot = 0; slot < 2; ++slot)
        if (out.has(slot)) zero(out(slot));
      if (out.has(2))
        bias_grad_only(in(kOutGrad), out(2),
                       conv_out(plan_.shape, plan_.layout.out, "out_grad"), threads);
      return;
    }
    if (out.has(0))
      engine_->backward_data(g, in(kFilter).data<void>(), out(0).data<void>(), ws, threads);
    if (out.has(1) || out.has(2))
      engine_->backward_weights(in(kX).data<void>(), g, out.has(1) ? out(1).data<void>() : nullptr,
                                out.has(2) ? out(2).data<void>() : nullptr, ws, threads);
  }

 private:
  ConvPlan plan_;
  std::unique_ptr<ConvEngine> engine_;
  pc::Workspace ws_;
};

// conv2d_transpose(x, filter) is the gradient of conv2d(out, filter) w.r.t. out: the engine of
// that conv2d runs it backwards (window.hpp's conv_transpose_shape).
class Conv2dTranspose {
 public:
  static constexpr pc::Signature signature{"11?", "1"};
  using DTypes = ConvTypes;
  Conv2dTranspose(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx) {
    const ConvPlan plan = check_conv2d_transpose(attrs, in, out);
    shape_ = plan.shape;
    if (!plan.passes) return;
    engine_ = make_conv_engine(shape_, in(kX).dtype(), plan.passes, false, ctx.num_threads());
    ws_ = pc::Workspace(ctx, engine_->workspace_bytes());
  }

  // Without an engine (an empty convolution), out is zeros plus the bias: over x's no
  // channels, the bias alone.
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor o = out(0);
    if (!engine_)
      zero(o);
    else
      engine_->backward_data(in(kX).data<void>(), in(kFilter).data<void>(), o.data<void>(),
                             ws_.data(ctx), ctx.num_threads());
    if (in.has(kBias) && o.numel() > 0)
      add_channel_bias(o.dtype(), in(kBias).data<void>(), o.data<void>(), shape_.batch,
                       shape_.channels, shape_.in_plane(), ctx.num_threads());
  }

 private:
  ConvShape shape_;
  std::unique_ptr<ConvEngine> engine_;
  pc::Workspace ws_;
};

class Conv2dTransposeGrad {
 public:
  static constexpr pc::Signature signature{"111?", "???"};
  using DTypes = ConvTypes;
  Conv2dTransposeGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx) {
    const ConvPlan plan = check_conv2d_transpose_grad(attrs, in, out);
    shape_ = plan.shape;
    if (!plan.passes) return;
    engine_ = make_conv_engine(shape_, in(kX).dtype(), plan.passes, false, ctx.num_threads());
    ws_ = pc::Workspace(ctx, engine_->workspace_bytes());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int threads = ctx.num_threads();
    const Tensor g = in(kOutGrad);
    char* ws = ws_.data(ctx);
    if (!engine_) {
      for (int slot = 0; slot < 2; ++slot)
        if (out.has(slot)) zero(out(slot));
    } else {
      if (out.has(0))
        engine_->forward(g.data<void>(), in(kFilter).data<void>(), nullptr, nullptr,
                         out(0).data<void>(), ws, threads, false);
      if (out.has(1))
        engine_->backward_weights(g.data<void>(), in(kX).data<void>(), out(1).data<void>(),
                                  nullptr, ws, threads);
    }
    if (out.has(2))
      channel_bias_grad(g.dtype(), g.data<void>(), out(2).data<void>(), shape_.batch,
                        shape_.channels, shape_.in_plane(), threads);
  }

 private:
  ConvShape shape_;
  std::unique_ptr<ConvEngine> engine_;
  pc::Workspace ws_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Conv2d>("conv2d"),
    pc::kernel<Conv2dGrad>("conv2d_grad"),
    pc::kernel<Conv2dTranspose>("conv2d_transpose"),
    pc::kernel<Conv2dTransposeGrad>("conv2d_transpose_grad"));

}  // namespace paddle_ops_nn
