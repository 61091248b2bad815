// The oneDNN pooling engine (float32). The primitives compute on oneDNN's blocked layout:
// x's where the caller's x is blocked, else the one oneDNN's convolutions prefer on this CPU
// (engine.hpp), since its pooling of plain NCHW is a reference loop (measured 16x slower on
// 8x64x56x56); each operand is converted only where the caller's layout differs from the
// primitive's. The gradient of max pooling needs the forward pass's workspace (where each
// maximum was): the backward engine runs the forward pass again first, so pool2d_grad needs
// nothing from pool2d but x. Converted operands, scratchpads and the forward pass's results
// lie in the kernel's workspace (dnnl.hpp).
#include <optional>
#include <unordered_map>

#include "dnnl.hpp"
#include "engine.hpp"
#include "pool.hpp"

namespace paddle_ops_nn {
namespace {

using namespace onednn;

class DnnlPool final : public PoolEngine {
 public:
  DnnlPool(const Pooling& p, int64_t batch, int64_t channels, bool backward, int threads,
           Layouts layout) {
    ThreadCount count(threads);
    const dims src_dims{batch, channels, p.h.in, p.w.in}, dst_dims{batch, channels, p.h.out, p.w.out};
    const int block = layout.x != 0 ? layout.x : onednn_channel_block();
    const memory::desc src = activation(src_dims, block), dst = activation(dst_dims, block);
    // The caller's: x and x_grad, out and out_grad.
    const memory::desc x = activation(src_dims, layout.x), out = activation(dst_dims, layout.out);
    const auto algo = p.max         ? dnnl::algorithm::pooling_max
                      : p.exclusive ? dnnl::algorithm::pooling_avg_exclude_padding
                                    : dnnl::algorithm::pooling_avg_include_padding;
    const dims strides{p.h.stride, p.w.stride}, kernel{p.h.kernel, p.w.kernel}, dilation{0, 0};
    const dims pad_l{p.h.pad_before, p.w.pad_before};
    const dims pad_r{p.h.exact_pad_after(), p.w.exact_pad_after()};
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const auto kind = backward ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    const dnnl::pooling_forward::primitive_desc fwd(cpu(), kind, algo, src, dst, strides, kernel,
                                                    dilation, pad_l, pad_r, attr);
    // One pass: the forward one; or the backward one, after the forward one again.
    Staging at;
    forward_ = dnnl::pooling_forward(fwd);
    forward_scratch_ = scratchpad(fwd, at);
    x_.emplace(x, src, at);
    if (!backward) {
      y_.emplace(out, dst, at);
      workspace_ = at.end();
      return;
    }
    const dnnl::pooling_backward::primitive_desc bwd(cpu(), algo, src, dst, strides, kernel,
                                                     dilation, pad_l, pad_r, fwd, attr);
    backward_ = dnnl::pooling_backward(bwd);
    backward_scratch_ = scratchpad(bwd, at);
    if (p.max) {
      recomputed_ = Staged(dst, at);  // the forward result, not wanted
      maxima_ = Staged(fwd.workspace_desc(), at);
    }
    dy_.emplace(out, dst, at);
    dx_.emplace(x, src, at);
    workspace_ = at.end();
  }

  size_t workspace_bytes() const override { return workspace_; }

  void forward(const void* x, void* y, char* ws, int threads) const override {
    ThreadCount count(threads);
    forward_.execute(stream_, {{DNNL_ARG_SRC, x_->load(stream_, x, ws)},
                               {DNNL_ARG_DST, y_->target(y, ws)},
                               {DNNL_ARG_SCRATCHPAD, forward_scratch_.at(ws)}});
    y_->store(stream_, ws);
    stream_.wait();
  }

  void backward(const void* x, const void* dy, void* dx, char* ws, int threads) const override {
    ThreadCount count(threads);
    if (maxima_)
      forward_.execute(stream_, {{DNNL_ARG_SRC, x_->load(stream_, x, ws)},
                                 {DNNL_ARG_DST, recomputed_->at(ws)},
                                 {DNNL_ARG_WORKSPACE, maxima_->at(ws)},
                                 {DNNL_ARG_SCRATCHPAD, forward_scratch_.at(ws)}});
    std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, dy_->load(stream_, dy, ws)},
                                         {DNNL_ARG_DIFF_SRC, dx_->target(dx, ws)},
                                         {DNNL_ARG_SCRATCHPAD, backward_scratch_.at(ws)}};
    if (maxima_) args[DNNL_ARG_WORKSPACE] = maxima_->at(ws);
    backward_.execute(stream_, args);
    dx_->store(stream_, ws);
    stream_.wait();
  }

 private:
  size_t workspace_ = 0;
  mutable dnnl::stream stream_{cpu()};
  dnnl::primitive forward_, backward_;
  Staged forward_scratch_, backward_scratch_;
  // Max pooling's backward pass: the forward result it recomputes, and where the maxima were
  // (oneDNN's workspace, in ours).
  std::optional<Staged> recomputed_, maxima_;
  mutable std::optional<Operand> x_, y_, dy_, dx_;  // in the caller's layouts
};

}  // namespace

std::unique_ptr<PoolEngine> make_dnnl_pool(const Pooling& p, int64_t batch, int64_t channels,
                                           bool backward, int threads, Layouts layout) {
  try {
    return std::make_unique<DnnlPool>(p, batch, channels, backward, threads, layout);
  } catch (const dnnl::error& e) {
    fail("oneDNN has no pooling for this shape: %s", e.what());
  }
}

}  // namespace paddle_ops_nn
