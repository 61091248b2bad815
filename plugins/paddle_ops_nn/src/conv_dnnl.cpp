// The oneDNN convolution engine (float32). Every primitive is created with `format_tag::any`,
// so oneDNN picks the blocked layouts its fastest implementation wants (plain NCHW descriptors
// measured 1.6x slower); operands are reordered from and to the caller's layout around each
// call where that differs (always for weights and NCHW activations; never for activations the
// layout pass blocked as oneDNN wants them). Primitives and reorders are built in prepare; a
// run only executes them. The blocked buffers and the scratchpads lie in the kernel's
// workspace (dnnl.hpp): a pass's all at once, the passes over the same bytes.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "conv.hpp"
#include "dnnl.hpp"
#include "engine.hpp"

namespace paddle_ops_nn {
namespace {

using namespace onednn;

class DnnlConv final : public ConvEngine {
 public:
  DnnlConv(const ConvShape& s, unsigned passes, bool bias, int threads, Layouts layout)
      : bias_(bias) {
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

    const auto algo = dnnl::algorithm::convolution_direct;
    const dnnl::convolution_forward::primitive_desc fwd(
        cpu(), dnnl::prop_kind::forward_training, algo, any(src), any(wei), bias_md, any(dst),
        strides, dilates, pad_l, pad_r, attr);
    if (passes & kForward) {
      Staging at;
      fwd_.emplace(Pass{dnnl::convolution_forward(fwd), scratchpad(fwd, at)});
      x_.emplace(src_md, fwd.src_desc(), at);
      w_.emplace(f32(wei, wei_tag), fwd.weights_desc(), at);
      y_.emplace(dst_md, fwd.dst_desc(), at);
      if (bias) b_.emplace(bias_md, fwd.bias_desc(), at);
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
      workspace_ = std::max(workspace_, at.end());
    }
  }

  size_t workspace_bytes() const override { return workspace_; }

  void forward(const void* x, const void* w, const void* b, void* y, char* ws,
               int threads) const override {
    ThreadCount count(threads);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, x_->load(stream_, x, ws)},
                                         {DNNL_ARG_WEIGHTS, w_->load(stream_, w, ws)},
                                         {DNNL_ARG_DST, y_->target(y, ws)}};
    if (bias_) args[DNNL_ARG_BIAS] = b_->load(stream_, b, ws);
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

  void run(const Pass& pass, std::unordered_map<int, memory> args, char* ws) const {
    args[DNNL_ARG_SCRATCHPAD] = pass.scratchpad.at(ws);
    pass.primitive.execute(stream_, args);
  }

  bool bias_;
  size_t workspace_ = 0;  // the most bytes of workspace a pass needs
  size_t spare_ = 0;      // where the spare buffer lies in the weights pass's workspace
  mutable dnnl::stream stream_{cpu()};
  std::optional<Pass> fwd_, bwd_data_, bwd_weights_;
  // Per pass: forward x, w, b -> y; backward data dy, w -> dx; backward weights x, dy -> dw, db.
  mutable std::optional<Operand> x_, w_, b_, y_, bd_dy_, bd_w_, bd_dx_, bw_x_, bw_dy_, bw_dw_, bw_db_;
};

}  // namespace

int dnnl_channel_block() {
  // The destination layout oneDNN picks for a convolution typical of a network's middle
  // (64 -> 64 channels, 3x3, 28x28); it picks the same for most shapes on one CPU.
  try {
    const dims src{8, 64, 28, 28}, wei{64, 64, 3, 3};
    const dnnl::convolution_forward::primitive_desc pd(
        cpu(), dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
        f32(src, tag::any), f32(wei, tag::any), memory::desc(), f32(src, tag::any), {1, 1},
        {0, 0}, {1, 1}, {1, 1});
    for (int block : {8, 16})
      if (pd.dst_desc() == activation(src, block)) return block;
  } catch (const dnnl::error&) {
  }
  return 0;
}

std::unique_ptr<ConvEngine> make_dnnl_conv(const ConvShape& shape, unsigned passes, bool bias,
                                           int threads, Layouts layout) {
  try {
    return std::make_unique<DnnlConv>(shape, passes, bias, threads, layout);
  } catch (const dnnl::error& e) {
    fail("oneDNN has no convolution for this shape: %s", e.what());
  }
}

}  // namespace paddle_ops_nn
