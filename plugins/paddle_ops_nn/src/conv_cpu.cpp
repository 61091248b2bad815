// conv2d and conv2d_transpose (NCHW, strides, paddings, dilations, groups, optional bias) and
// their gradients, computed by a convolution engine (conv.hpp): oneDNN for float32 where
// enabled (engine.hpp), im2col + OpenBLAS otherwise.
//
// Memory contract: x [N, C, H, W]; conv2d's filter [K, C / groups, kh, kw], out
// [N, K, OH, OW]; conv2d_transpose's filter [C, K / groups, kh, kw], out [N, K, OH, OW];
// bias [K]; every gradient the shape of its input. conv2d with channel_block b (float32 on
// oneDNN only): out and out_grad blocked [N, K / b, OH, OW, b], x and x_grad plain or blocked
// (layout.hpp). All checked in prepare (window.hpp).
#include <cstring>

#include "conv.hpp"
#include "engine.hpp"

namespace pon {

std::unique_ptr<ConvEngine> make_conv_engine(const ConvShape& shape, int32_t dtype, unsigned passes,
                                             bool bias, int threads, Layouts layout) {
  if constexpr (kOnednnBuilt)
    if (dtype == PC_FLOAT32 && onednn_enabled())
      return make_dnnl_conv(shape, passes, bias, threads, layout);
  if (layout.x != 0 || layout.out != 0)
    fail("channel_block %d (blocked tensors) needs float32 computed by oneDNN, but %s; leave "
         "channel_block 0 (the layout pass sets it only where oneDNN computes)",
         layout.out, dtype != PC_FLOAT32 ? "the tensors are not float32" : "oneDNN is not enabled");
  return make_gemm_conv(shape, dtype, passes);
}

namespace {

// Input slots: the forward ops' x, filter, bias; the grad ops' x, filter, out_grad, bias
// (dispensable inputs come last). Grad outputs: x_grad, filter_grad, bias_grad.
enum Slot { kX = 0, kFilter = 1, kBias = 2, kOutGrad = 2, kGradBias = 3 };

// Dtypes and the bias's shape, common to the four kernels.
void check_operands(const Slots& in, int bias_slot, int64_t out_channels) {
  const Tensor x = in(kX);
  dispatch(x.dtype(), Floats{}, [](auto) {});
  expect_same_dtype(x, in(kFilter), "x and filter");
  if (in.has(bias_slot)) {
    expect_same_dtype(x, in(bias_slot), "x and bias");
    expect_shape(in(bias_slot), {out_channels}, "bias");
  }
}

bool empty(const ConvShape& s) { return s.batch == 0 || s.channels == 0 || s.filters == 0; }

void zero(const Tensor& t) {
  if (t.numel() > 0) std::memset(t.data<void>(), 0, static_cast<size_t>(t.nbytes()));
}

// out's activation: [N, K, OH, OW] in the op's channel_block layout.
Activation conv_out(const ConvShape& s, int block, const char* what) {
  return output_activation(s.batch, s.filters, s.h.out, s.w.out, block, what);
}

class Conv2d {
 public:
  Conv2d(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : block_(channel_block_of(attrs)),
        x_(activation_of(in(kX), block_, "x")),
        shape_(conv_shape(attrs, x_, in(kFilter))) {
    check_operands(in, kBias, shape_.filters);
    expect_same_dtype(in(kX), out(0), "x and out");
    expect_shape(out(0), conv_out(shape_, block_, "out").dims(), "out");
    if (!empty(shape_))
      engine_ = make_conv_engine(shape_, in(kX).dtype(), kForward, in.has(kBias), ctx.num_threads(),
                                 {x_.block, block_});
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (!engine_) return zero(out(0));
    engine_->forward(in(kX).data<void>(), in(kFilter).data<void>(),
                     in.has(kBias) ? in(kBias).data<void>() : nullptr, out(0).data<void>(),
                     ctx.num_threads());
  }

 private:
  int block_;
  Activation x_;
  ConvShape shape_;
  std::unique_ptr<ConvEngine> engine_;
};

// Outputs x_grad, filter_grad, bias_grad, each computed only when the program asks for it.
class Conv2dGrad {
 public:
  Conv2dGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : block_(channel_block_of(attrs)),
        x_(activation_of(in(kX), block_, "x")),
        shape_(conv_shape(attrs, x_, in(kFilter))) {
    check_operands(in, kGradBias, shape_.filters);
    const Tensor g = in(kOutGrad);
    expect_same_dtype(in(kX), g, "x and out_grad");
    expect_shape(g, conv_out(shape_, block_, "out_grad").dims(), "out_grad");
    check_grads(in, out);
    if (out.has(2) && !in.has(kGradBias)) fail("bias_grad is asked for, but the op has no bias");
    const unsigned passes = (out.has(0) ? kBackwardData : 0) |
                            (out.has(1) || out.has(2) ? kBackwardWeights : 0);
    if (!empty(shape_) && passes)
      engine_ = make_conv_engine(shape_, in(kX).dtype(), passes, out.has(2), ctx.num_threads(),
                                 {x_.block, block_});
  }

  // Each gradient output has its input's shape and dtype (x_grad: x's layout too).
  static void check_grads(const Slots& in, const Slots& out) {
    const char* names[] = {"x and x_grad", "filter and filter_grad", "bias and bias_grad"};
    const int inputs[] = {kX, kFilter, kGradBias};
    for (int slot = 0; slot < 3; ++slot)
      if (out.has(slot) && in.has(inputs[slot])) {
        expect_same_shape(in(inputs[slot]), out(slot), names[slot]);
        expect_same_dtype(in(inputs[slot]), out(slot), names[slot]);
      }
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (!engine_) {
      for (int slot = 0; slot < 3; ++slot)
        if (out.has(slot)) zero(out(slot));
      return;
    }
    const int threads = ctx.num_threads();
    const void* g = in(kOutGrad).data<void>();
    if (out.has(0)) engine_->backward_data(g, in(kFilter).data<void>(), out(0).data<void>(), threads);
    if (out.has(1) || out.has(2))
      engine_->backward_weights(in(kX).data<void>(), g, out.has(1) ? out(1).data<void>() : nullptr,
                                out.has(2) ? out(2).data<void>() : nullptr, threads);
  }

 private:
  int block_;
  Activation x_;
  ConvShape shape_;
  std::unique_ptr<ConvEngine> engine_;
};

// conv2d_transpose(x, filter) is the gradient of conv2d(out, filter) w.r.t. out: the engine of
// that conv2d runs it backwards (window.hpp's conv_transpose_shape).
class Conv2dTranspose {
 public:
  Conv2dTranspose(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : shape_(conv_transpose_shape(attrs, in(kX), in(kFilter), out(0))) {
    check_operands(in, kBias, shape_.channels);
    expect_same_dtype(in(kX), out(0), "x and out");
    if (!empty(shape_))
      engine_ = make_conv_engine(shape_, in(kX).dtype(), kBackwardData, false, ctx.num_threads());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (!engine_) return zero(out(0));
    const Tensor o = out(0);
    engine_->backward_data(in(kX).data<void>(), in(kFilter).data<void>(), o.data<void>(),
                           ctx.num_threads());
    if (in.has(kBias))
      add_channel_bias(o.dtype(), in(kBias).data<void>(), o.data<void>(), shape_.batch,
                       shape_.channels, shape_.in_plane(), ctx.num_threads());
  }

 private:
  ConvShape shape_;
  std::unique_ptr<ConvEngine> engine_;
};

class Conv2dTransposeGrad {
 public:
  Conv2dTransposeGrad(const Attrs& attrs, const Slots& in, const Slots& out, const Context& ctx)
      : shape_(conv_transpose_shape(attrs, in(kX), in(kFilter), in(kOutGrad))) {
    check_operands(in, kGradBias, shape_.channels);
    expect_same_dtype(in(kX), in(kOutGrad), "x and out_grad");
    Conv2dGrad::check_grads(in, out);
    if (out.has(2) && !in.has(kGradBias)) fail("bias_grad is asked for, but the op has no bias");
    const unsigned passes = (out.has(0) ? kForward : 0) | (out.has(1) ? kBackwardWeights : 0);
    if (!empty(shape_) && passes)
      engine_ = make_conv_engine(shape_, in(kX).dtype(), passes, false, ctx.num_threads());
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int threads = ctx.num_threads();
    const Tensor g = in(kOutGrad);
    if (!engine_) {
      for (int slot = 0; slot < 2; ++slot)
        if (out.has(slot)) zero(out(slot));
    } else {
      if (out.has(0))
        engine_->forward(g.data<void>(), in(kFilter).data<void>(), nullptr, out(0).data<void>(),
                         threads);
      if (out.has(1))
        engine_->backward_weights(g.data<void>(), in(kX).data<void>(), out(1).data<void>(),
                                  nullptr, threads);
    }
    if (out.has(2))
      channel_bias_grad(g.dtype(), g.data<void>(), out(2).data<void>(), shape_.batch,
                        shape_.channels, shape_.in_plane(), threads);
  }

 private:
  ConvShape shape_;
  std::unique_ptr<ConvEngine> engine_;
};

}  // namespace

const pc::Family& conv_kernels() {
  static const pc::Family family = {
      pc::kernel<Conv2d>("conv2d"),
      pc::kernel<Conv2dGrad>("conv2d_grad"),
      pc::kernel<Conv2dTranspose>("conv2d_transpose"),
      pc::kernel<Conv2dTransposeGrad>("conv2d_transpose_grad"),
  };
  return family;
}

}  // namespace pon
