// The oneDNN convolution engine (float32). Every primitive is created with `format_tag::any`,
// so oneDNN picks the blocked layouts its fastest implementation wants (plain NCHW descriptors
// measured 1.6x slower); operands are reordered from and to the caller's layout around each
// call where that differs (always for weights and NCHW activations; never for activations the
// layout pass blocked as oneDNN wants them). Primitives and reorders are built in prepare; a
// run only executes them. The blocked buffers and the scratchpads lie in the kernel's
// workspace (dnnl.hpp): a pass's all at once, the passes over the same bytes; but for the
// converted filter of a forward pass that reuses it from call to call (keep_filter), which
// the engine keeps.
#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <unordered_map>

#include "conv.hpp"
#include "dnnl.hpp"
#include "engine.hpp"

namespace paddle_ops_nn {
namespace {

using namespace onednn;

// On AVX2, oneDNN's first choice for a 1x1 or a depthwise convolution on channels last is its
// brgemm kernel; its older jit kernel for the same layouts and post-ops measured 0.65-0.95x that
// time on MobileNetV2's and ResNet-18's shapes, at 1 and 2 threads (0.72x for MobileNetV2's
// last 1x1 convolution, 320 to 1280 channels over 2x2 maps). That kernel's name, or null.
const char* faster_kernel(const std::string& chosen) {
  if (chosen == "brgconv_1x1:avx2") return "jit_1x1:avx2";
  if (chosen == "brdgmm_dw:avx2") return "jit_dw:avx2";
  return nullptr;
}

// Whether the filter gradient comes from the built-in engine (conv_gemm.cpp: the unrolled
// input and an OpenBLAS product per image, or one over the batch for small images) rather than
// from oneDNN's `chosen` implementation:
// - where oneDNN has no kernel of its own for the shape (its GEMM or reference fallback, as for
//   a 3x3 filter over 1x1 images: 29 ms a call for ResNet-18's last stage at 32x32, batch 32,
//   against the built-in engine's 2 ms);
// - where its kernel is the AVX2 jit one and the product is large (gemm_filter_gradient_pays):
//   a training step of one convolution then took 0.77-0.95x its time on ResNet-18's 3x3 layers
//   at batch 1 (224x224 images, 56x56 to 7x7 maps) and on bench_conv's (batch 8, 64 channels
//   over 56x56), at 1 and 2 threads (the fastest of five alternating processes each).
bool builtin_filter_gradient(const ConvShape& s, const std::string& chosen) {
  if (chosen.find("gemm") != std::string::npos || chosen.find("ref") != std::string::npos)
    return true;
  const bool jit = chosen == "jit:avx2" || chosen == "jit_1x1:avx2";
  return jit && gemm_filter_gradient_pays(s);
}

// Whether the forward pass comes from the built-in engine (conv_gemm.cpp: the unrolled input
// and an OpenBLAS product per image, reading the filter as it is) rather than from oneDNN's
// `chosen` AVX2 kernel, which converts the filter at every call unless `keep_filter`
// (gemm_forward_pays: a filter many times the size of the image).
bool builtin_forward(const ConvShape& s, const std::string& chosen, bool keep_filter) {
  const bool avx2 = chosen == "jit:avx2" || chosen == "brgconv:avx2";
  return avx2 && !keep_filter && gemm_forward_pays(s);
}

class DnnlConv final : public ConvEngine {
 public:
  DnnlConv(const ConvShape& s, unsigned passes, bool bias, int threads, Layouts layout,
           const ConvEpilogue& epilogue, bool keep_filter)
      : bias_(bias), residual_(epilogue.residual) {
    ThreadCount count(threads);
    const int64_t g = s.groups;
    const dims src{s.batch, s.channels, s.h.in, s.w.in}, dst{s.batch, s.filters, s.h.out, s.w.out};
    const dims wei = g == 1 ? dims{s.filters, s.channels, s.h.kernel, s.w.kernel}
                            : dims{g, s.filters / g, s.channels / g, s.h.kernel, s.w.kernel};
    const tag wei_tag = g == 1 ? tag::oihw : tag::goihw;
    const dims strides{s.h.stride, s.w.stride}, dilates{s.h.dilation - 1, s.w.dilation - 1};
    const dims pad_l{s.h.pad_before, s.w.pad_before};
    const dims pad_r{s.h.exact_pad_after(), s.w.exact_pad_after()};
    const auto any = [](const dims& d) { return f32(d, tag::any); };
    const memory::desc src_md = activation(src, layout.x), dst_md = activation(dst, layout.out);
    const memory::desc bias_md = bias ? f32({s.filters}, tag::x) : memory::desc();
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::primitive_attr fused = attr;  // the forward pass's: with the epilogue as post-ops
    fused.set_post_ops(post_ops(epilogue, dst_md));

    const auto algo = dnnl::algorithm::convolution_direct;
    // A forward pass alone is an inference as far as oneDNN is concerned (a convolution keeps
    // no workspace), and oneDNN then chooses among more implementations: on AVX2 its brgemm
    // convolution on NHWC, 2-10x faster than the training choice where images are small
    // (bench/bench_onnx.py). The backward passes need the training descriptor as their hint.
    const auto prop = passes == kForward ? dnnl::prop_kind::forward_inference
                                         : dnnl::prop_kind::forward_training;
    dnnl::convolution_forward::primitive_desc fwd(cpu(), prop, algo, any(src), any(wei), bias_md,
                                                  any(dst), strides, dilates, pad_l, pad_r,
                                                  fused);
    // An inference into channels last whose chosen destination is another layout (the first
    // convolution of a network, on 3 channels, where oneDNN picks nChw8c) writes channels last
    // itself where one of its optimised kernels can: not a reorder of the whole output after.
    if (prop == dnnl::prop_kind::forward_inference && layout.out == kChannelsLast &&
        fwd.dst_desc() != dst_md) {
      try {
        const dnnl::convolution_forward::primitive_desc direct(
            cpu(), prop, algo, any(src), any(wei), bias_md, dst_md, strides, dilates, pad_l,
            pad_r, fused);
        if (std::string(direct.impl_info_str()).find("ref") == std::string::npos) fwd = direct;
      } catch (const dnnl::error&) {
      }
    }
    const char* faster = faster_kernel(fwd.impl_info_str());
    if (prop == dnnl::prop_kind::forward_inference && faster != nullptr) {
      try {  // (in the layouts of the first choice: with `any`, that kernel chooses its own)
        dnnl::convolution_forward::primitive_desc pd(cpu(), prop, algo, fwd.src_desc(), any(wei),
                                                     bias_md, fwd.dst_desc(), strides, dilates,
                                                     pad_l, pad_r, fused);
        do {
          if (pd.impl_info_str() == std::string(faster)) {
            fwd = pd;
            break;
          }
        } while (pd.next_impl());
      } catch (const dnnl::error&) {
      }
    }
    if ((passes & kForward) && !epilogue.residual &&
        builtin_forward(s, fwd.impl_info_str(), keep_filter)) {
      Staging at;  // the built-in engine's product, on NCHW copies of x and y
      plain_forward_ = make_gemm_conv(s, PC_FLOAT32, kForward, epilogue);
      x_.emplace(src_md, f32(src, tag::nchw), at);
      y_.emplace(dst_md, f32(dst, tag::nchw), at);
      plain_forward_workspace_ = at.take(plain_forward_->workspace_bytes());
      workspace_ = std::max(workspace_, at.end());
    } else if (passes & kForward) {
      Staging at;
      fwd_.emplace(Pass{dnnl::convolution_forward(fwd), scratchpad(fwd, at)});
      x_.emplace(src_md, fwd.src_desc(), at);
      if (keep_filter) {
        w_.emplace(f32(wei, wei_tag), fwd.weights_desc());
        if (fwd.weights_desc() != f32(wei, wei_tag)) kept_ = fwd.weights_desc().get_size();
      } else {
        w_.emplace(f32(wei, wei_tag), fwd.weights_desc(), at);
      }
      y_.emplace(dst_md, fwd.dst_desc(), at);
      if (bias) b_.emplace(bias_md, fwd.bias_desc(), at);
      residual_md_ = dst_md;
      workspace_ = std::max(workspace_, at.end());
    }
    if (passes & kBackwardData) {
      const dnnl::convolution_backward_data::primitive_desc pd(
          cpu(), algo, any(src), any(wei), any(dst), strides, dilates, pad_l, pad_r, fwd, attr);
      Staging at;
      bwd_data_.emplace(Pass{dnnl::convolution_backward_data(pd), scratchpad(pd, at)});
      bd_dy_.emplace(dst_md, pd.diff_dst_desc(), at);
      bd_w_.emplace(f32(wei, wei_tag), pd.weights_desc(), at);
      bd_dx_.emplace(src_md, pd.diff_src_desc(), at);
      workspace_ = std::max(workspace_, at.end());
    }
    if (passes & kBackwardWeights) {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          cpu(), algo, any(src), any(wei), bias_md, any(dst), strides, dilates, pad_l, pad_r, fwd,
          attr);
      Staging at;
      // The built-in engine's products (builtin_filter_gradient), on NCHW copies of x and dy.
      if (builtin_filter_gradient(s, pd.impl_info_str())) {
        plain_weights_ = make_gemm_conv(s, PC_FLOAT32, kBackwardWeights, {});
        bw_x_.emplace(src_md, f32(src, tag::nchw), at);
        bw_dy_.emplace(dst_md, f32(dst, tag::nchw), at);
        plain_weights_workspace_ = at.take(plain_weights_->workspace_bytes());
      } else {
        bwd_weights_.emplace(Pass{dnnl::convolution_backward_weights(pd), scratchpad(pd, at)});
        bw_x_.emplace(src_md, pd.src_desc(), at);
        bw_dy_.emplace(dst_md, pd.diff_dst_desc(), at);
        bw_dw_.emplace(f32(wei, wei_tag), pd.diff_weights_desc(), at);
        if (bias) {
          bw_db_.emplace(bias_md, pd.diff_bias_desc(), at);
          // oneDNN always computes both; one the kernel does not want goes to a spare buffer
          // (with a bias only: without one, a kernel wants dw or runs no weights pass).
          spare_ = at.take(static_cast<size_t>(s.filters * s.taps() + s.filters) * sizeof(float));
        }
      }
      workspace_ = std::max(workspace_, at.end());
    }
  }

  size_t workspace_bytes() const override { return workspace_; }
  size_t state_bytes() const override { return kept_; }

  void forward(const void* x, const void* w, const void* b, const void* residual, void* y,
               char* ws, int threads, bool same_filter) const override {
    ThreadCount count(threads);
    if (plain_forward_) {
      const void* plain_x = x_->load(stream_, x, ws).get_data_handle();
      void* plain_y = y_->target(y, ws).get_data_handle();
      stream_.wait();
      plain_forward_->forward(plain_x, w, b, nullptr, plain_y, ws + plain_forward_workspace_,
                              threads, false);
      y_->store(stream_, ws);
      stream_.wait();
      return;
    }
    // The filter in the primitive's layout is still there from the previous call: converting
    // it again was a quarter of an inference of ResNet-18 (its 11M weights, every run).
    memory& weights = same_filter ? w_->held(stream_, w, ws) : w_->load(stream_, w, ws);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x_->load(stream_, x, ws)},
                                         {DNNL_ARG_WEIGHTS, weights},
                                         {DNNL_ARG_DST, y_->target(y, ws)}};
    if (bias_) args[DNNL_ARG_BIAS] = b_->load(stream_, b, ws);
    if (residual_)  // the binary post-op's operand, in the caller's layout of out
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] =
          memory(residual_md_, cpu(), const_cast<void*>(residual));
    run(*fwd_, args, ws);
    y_->store(stream_, ws);
    stream_.wait();
  }

  void backward_data(const void* dy, const void* w, void* dx, char* ws,
                     int threads) const override {
    ThreadCount count(threads);
    run(*bwd_data_,
        {{DNNL_ARG_DIFF_DST, bd_dy_->load(stream_, dy, ws)},
         {DNNL_ARG_WEIGHTS, bd_w_->load(stream_, w, ws)},
         {DNNL_ARG_DIFF_SRC, bd_dx_->target(dx, ws)}},
        ws);
    bd_dx_->store(stream_, ws);
    stream_.wait();
  }

  void backward_weights(const void* x, const void* dy, void* dw, void* db, char* ws,
                        int threads) const override {
    ThreadCount count(threads);
    if (plain_weights_) {
      const void* plain_x = bw_x_->load(stream_, x, ws).get_data_handle();
      const void* plain_dy = bw_dy_->load(stream_, dy, ws).get_data_handle();
      stream_.wait();
      return plain_weights_->backward_weights(plain_x, plain_dy, dw, db,
                                              ws + plain_weights_workspace_, threads);
    }
    char* spare = ws + spare_;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, bw_x_->load(stream_, x, ws)},
        {DNNL_ARG_DIFF_DST, bw_dy_->load(stream_, dy, ws)},
        {DNNL_ARG_DIFF_WEIGHTS, bw_dw_->target(dw != nullptr ? dw : spare, ws)}};
    if (bias_) args[DNNL_ARG_DIFF_BIAS] = bw_db_->target(db != nullptr ? db : spare, ws);
    run(*bwd_weights_, args, ws);
    bw_dw_->store(stream_, ws);
    if (bias_) bw_db_->store(stream_, ws);
    stream_.wait();
  }

 private:
  struct Pass {
    dnnl::primitive primitive;
    Staged scratchpad;
  };

  // The epilogue as oneDNN post-ops: the residual added (a binary post-op reading a tensor of
  // out's shape in the caller's layout `out`), then the activation.
  static dnnl::post_ops post_ops(const ConvEpilogue& e, const memory::desc& out) {
    dnnl::post_ops ops;
    if (e.residual) ops.append_binary(dnnl::algorithm::binary_add, out);
    switch (e.activation) {
      case ConvEpilogue::kRelu: ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f); break;
      case ConvEpilogue::kLeakyRelu:
        ops.append_eltwise(dnnl::algorithm::eltwise_relu, e.alpha, 0.f);
        break;
      case ConvEpilogue::kClip:
        ops.append_eltwise(dnnl::algorithm::eltwise_clip_v2, e.alpha, e.beta);
        break;
      case ConvEpilogue::kNone: break;
    }
    return ops;
  }

  void run(const Pass& pass, std::unordered_map<int, memory> args, char* ws) const {
    args[DNNL_ARG_SCRATCHPAD] = pass.scratchpad.at(ws);
    pass.primitive.execute(stream_, args);
  }

  bool bias_, residual_;
  memory::desc residual_md_;
  size_t workspace_ = 0;        // the most bytes of workspace a pass needs
  size_t spare_ = 0;            // where the spare buffer lies in the weights pass's workspace
  size_t kept_ = 0;             // the bytes of the filter kept converted
  mutable dnnl::stream stream_{cpu()};
  std::optional<Pass> fwd_, bwd_data_, bwd_weights_;
  // Per pass: forward x, w, b -> y; backward data dy, w -> dx; backward weights x, dy -> dw, db.
  mutable std::optional<Operand> x_, w_, b_, y_, bd_dy_, bd_w_, bd_dx_, bw_x_, bw_dy_, bw_dw_, bw_db_;
  // The built-in engine's passes (builtin_forward, builtin_filter_gradient), or null; and where
  // their workspace lies in their pass's.
  std::unique_ptr<ConvEngine> plain_forward_, plain_weights_;
  size_t plain_forward_workspace_ = 0, plain_weights_workspace_ = 0;
};

// The destination layout oneDNN picks for a convolution typical of a network's middle
// (64 -> 64 channels, 3x3, 28x28) in a pass of kind `prop` (it picks the same for most shapes
// on one CPU): its channel_block, 0 where it is none of these.
int chosen_block(dnnl::prop_kind prop, std::initializer_list<int> blocks) {
  try {
    const dims src{8, 64, 28, 28}, wei{64, 64, 3, 3};
    const dnnl::convolution_forward::primitive_desc pd(
        cpu(), prop, dnnl::algorithm::convolution_direct, f32(src, tag::any), f32(wei, tag::any),
        memory::desc(), f32(src, tag::any), {1, 1}, {0, 0}, {1, 1}, {1, 1});
    for (int block : blocks)
      if (pd.dst_desc() == activation(src, block)) return block;
  } catch (const dnnl::error&) {
  }
  return 0;
}

}  // namespace

int dnnl_channel_block() { return chosen_block(dnnl::prop_kind::forward_training, {8, 16}); }

int dnnl_inference_block() {
  return chosen_block(dnnl::prop_kind::forward_inference, {-1, 8, 16});
}

std::unique_ptr<ConvEngine> make_dnnl_conv(const ConvShape& shape, unsigned passes, bool bias,
                                           int threads, Layouts layout,
                                           const ConvEpilogue& epilogue, bool keep_filter) {
  try {
    return std::make_unique<DnnlConv>(shape, passes, bias, threads, layout, epilogue,
                                      keep_filter);
  } catch (const dnnl::error& e) {
    fail("oneDNN has no convolution for this shape: %s", e.what());
  }
}

}  // namespace paddle_ops_nn
