// The prepare-time checks of conv2d, conv2d_transpose and their gradients, shared by the CPU
// kernels (conv_cpu.cpp) and the CUDA kernels (conv_cuda.cu), so that both devices accept
// exactly the same tensors with channel_block 0. Each returns the convolution (window.hpp's
// ConvShape), the passes of it (conv.hpp's ConvPass) the kernel computes, and the layouts of its
// activations: conv2d and conv2d_grad with channel_block b take oneDNN's blocked layout
// (layout.hpp), which only the CPU kernels compute on (the CUDA kernels refuse it first, with
// layout.hpp's plain_only).
//
// Input slots: the forward ops' x, filter, bias; the grad ops' x, filter, out_grad, bias
// (dispensable inputs come last). Grad outputs: x_grad, filter_grad, bias_grad, each computed
// only when the program asks for it.
#ifndef PADDLE_OPS_NN_CONV_CHECKS_HPP_
#define PADDLE_OPS_NN_CONV_CHECKS_HPP_

#include "conv.hpp"

namespace paddle_ops_nn {

enum ConvSlot : int32_t {
  kX = 0,
  kFilter = 1,
  kBias = 2,
  kFingerprint = 3,  // conv2d's filter_fingerprint
  kResidual = 4,     // conv2d's residual
  kOutGrad = 2,
  kGradBias = 3
};

struct ConvPlan {
  ConvShape shape;
  unsigned passes = 0;  // ConvPass bits; none when the convolution is empty (see empty())
  Layouts layout;       // the channel_blocks of x (and x_grad) and out (and out_grad); 0: NCHW
  ConvEpilogue epilogue;  // conv2d's residual and fused activation

  // No image, channel or filter: no engine is needed. The outputs are zeros or empty, but for
  // a convolution over no input channels, whose out is its bias (and bias_grad the sums of
  // out_grad): the kernels compute those without an engine.
  bool empty() const { return shape.batch == 0 || shape.channels == 0 || shape.filters == 0; }
};

// conv2d's out (or out_grad): [N, K, OH, OW] in the op's channel_block layout.
inline Activation conv_out(const ConvShape& s, int block, const char* what) {
  return output_activation(s.batch, s.filters, s.h.out, s.w.out, block, what);
}

// The dtypes of the four kernels (their DTypes), on both devices.
using ConvTypes = Floats;

// Dtypes and the bias's shape, common to the four kernels.
inline void check_conv_operands(const Slots& in, int32_t bias_slot, int64_t out_channels) {
  const Tensor x = in(kX);
  dispatch(x.dtype(), ConvTypes{}, [](auto) {});
  expect_same_dtype(x, in(kFilter), "x and filter");
  if (in.has(bias_slot)) {
    expect_same_dtype(x, in(bias_slot), "x and bias");
    expect_shape(in(bias_slot), {out_channels}, "bias");
  }
}

// Each gradient output has its input's shape and dtype; bias_grad needs a bias.
inline void check_conv_grads(const Slots& in, const Slots& out) {
  const char* names[] = {"x and x_grad", "filter and filter_grad", "bias and bias_grad"};
  const int32_t inputs[] = {kX, kFilter, kGradBias};
  for (int32_t slot = 0; slot < 3; ++slot)
    if (out.has(slot) && in.has(inputs[slot])) {
      expect_same_shape(in(inputs[slot]), out(slot), names[slot]);
      expect_same_dtype(in(inputs[slot]), out(slot), names[slot]);
    }
  if (out.has(2) && !in.has(kGradBias)) fail("bias_grad is asked for, but the op has no bias");
}

inline ConvPlan conv_plan(const ConvShape& shape, unsigned passes, Layouts layout = {},
                          ConvEpilogue epilogue = {}) {
  ConvPlan p{shape, passes, layout, epilogue};
  if (p.empty()) p.passes = 0;
  return p;
}

// conv2d's fuse_activation, fuse_alpha and fuse_beta, and whether it has a residual (out's
// shape, layout and dtype).
inline ConvEpilogue conv2d_epilogue(const Attrs& attrs, const Slots& in, const Tensor& out) {
  ConvEpilogue e;
  const std::string act = attrs.s("fuse_activation");
  e.alpha = static_cast<float>(attrs.f("fuse_alpha"));
  e.beta = static_cast<float>(attrs.f("fuse_beta"));
  if (act == "relu") e.activation = ConvEpilogue::kRelu;
  else if (act == "leaky_relu") e.activation = ConvEpilogue::kLeakyRelu;
  else if (act == "clip") e.activation = ConvEpilogue::kClip;
  else if (!act.empty())
    fail("attr 'fuse_activation' must be \"\", \"relu\", \"leaky_relu\" or \"clip\", got \"%s\"",
         act.c_str());
  if (e.activation == ConvEpilogue::kClip && !(e.alpha <= e.beta))
    fail("clip's bounds fuse_alpha %g and fuse_beta %g must be ordered", e.alpha, e.beta);
  e.residual = in.has(kResidual);
  if (e.residual) {
    expect_same_shape(out, in(kResidual), "out and residual");
    expect_same_dtype(out, in(kResidual), "out and residual");
  }
  return e;
}

// conv2d(x, filter, bias?) -> out; with channel_block b, out blocked and x plain or blocked.
inline ConvPlan check_conv2d(const Attrs& attrs, const Slots& in, const Slots& out) {
  const int block = channel_block_of(attrs);
  const Activation x = activation_of(in(kX), block, "x");
  const ConvShape s = conv_shape(attrs, x, in(kFilter));
  check_conv_operands(in, kBias, s.filters);
  expect_same_dtype(in(kX), out(0), "x and out");
  const Activation o = conv_out(s, block, "out");
  expect_shape(out(0), o.dims(), "out");
  if (in.has(kFingerprint)) {
    in(kFingerprint).expect_dtype(PC_INT64, "filter_fingerprint");
    expect_shape(in(kFingerprint), {1}, "filter_fingerprint");
  }
  return conv_plan(s, kForward, {x.channel_block(), o.channel_block()},
                   conv2d_epilogue(attrs, in, out(0)));
}

// `plan`, for a kernel that computes no epilogue (the CUDA kernels): fails unless the conv2d
// has neither residual nor fuse_activation (the fusion pass sets them in CPU plans only).
inline ConvPlan without_epilogue(const ConvPlan& plan) {
  if (plan.epilogue.residual || plan.epilogue.activation != ConvEpilogue::kNone)
    fail("a residual and fuse_activation are computed by the CPU's kernels only (paddle-ops-nn's "
         "fusion pass sets them in CPU plans); on CUDA, add and activate with ops of their own");
  return plan;
}

// conv2d_grad(x, filter, out_grad, bias?) -> x_grad?, filter_grad?, bias_grad?; with
// channel_block b, out_grad blocked and x (and x_grad, in x's layout) plain or blocked.
inline ConvPlan check_conv2d_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  const int block = channel_block_of(attrs);
  const Activation x = activation_of(in(kX), block, "x");
  const ConvShape s = conv_shape(attrs, x, in(kFilter));
  check_conv_operands(in, kGradBias, s.filters);
  const Tensor g = in(kOutGrad);
  expect_same_dtype(in(kX), g, "x and out_grad");
  const Activation o = conv_out(s, block, "out_grad");
  expect_shape(g, o.dims(), "out_grad");
  check_conv_grads(in, out);
  return conv_plan(s,
                   (out.has(0) ? kBackwardData : 0u) |
                       (out.has(1) || out.has(2) ? kBackwardWeights : 0u),
                   {x.channel_block(), o.channel_block()});
}

// conv2d_transpose(x, filter, bias?) -> out, NCHW (it has no channel_block): the gradient of
// conv2d(out, filter) w.r.t. out, so the engine of that conv2d runs it backwards (window.hpp's
// conv_transpose_shape).
inline ConvPlan check_conv2d_transpose(const Attrs& attrs, const Slots& in, const Slots& out) {
  const ConvShape s = conv_transpose_shape(attrs, in(kX), in(kFilter), out(0));
  check_conv_operands(in, kBias, s.channels);
  expect_same_dtype(in(kX), out(0), "x and out");
  return conv_plan(s, kBackwardData);
}

// conv2d_transpose_grad(x, filter, out_grad, bias?) -> x_grad?, filter_grad?, bias_grad?:
// x_grad is that conv2d's forward pass of out_grad, filter_grad its weights' gradient with
// out_grad as the image and x as the output's gradient.
inline ConvPlan check_conv2d_transpose_grad(const Attrs& attrs, const Slots& in,
                                            const Slots& out) {
  const ConvShape s = conv_transpose_shape(attrs, in(kX), in(kFilter), in(kOutGrad));
  check_conv_operands(in, kGradBias, s.channels);
  expect_same_dtype(in(kX), in(kOutGrad), "x and out_grad");
  check_conv_grads(in, out);
  return conv_plan(s, (out.has(0) ? kForward : 0u) | (out.has(1) ? kBackwardWeights : 0u));
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_CONV_CHECKS_HPP_
