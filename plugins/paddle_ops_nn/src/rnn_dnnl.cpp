// The oneDNN recurrence engine (rnn_engine.hpp): each step's product is an inner product whose
// weights (weight_hh, or its transpose for the backward pass, read as oneDNN's "io" layout of
// the same buffer) are reordered into the blocked layout oneDNN chose once per unit and run
// (in the kernel's workspace, with the scratchpad).
// Its inner products need dense operands (a strided one gets the reference loops), so a step's
// h_prev, B rows of the reserve, is first copied together.
#include <algorithm>

#include "dnnl.hpp"
#include "rnn_engine.hpp"

namespace paddle_ops_nn {
namespace {

using namespace onednn;

class DnnlRecurrence final : public RecurrenceEngine {
 public:
  // Forward: [B, H] x [G * H, H] (oi) -> [B, G * H]. Backward: [B, G * H] x [H, G * H], the
  // transpose of weight_hh (io), added into [B, H].
  DnnlRecurrence(int64_t B, int64_t H, int64_t G, bool backward, int threads)
      : rows_(B), in_(backward ? G * H : H), out_(backward ? H : G * H) {
    ThreadCount count(threads);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (backward) {
      dnnl::post_ops sum;
      sum.append_sum();
      attr.set_post_ops(sum);
    }
    const memory::desc src = f32({rows_, in_}, tag::nc), dst = f32({rows_, out_}, tag::nc);
    const dnnl::inner_product_forward::primitive_desc pd(
        cpu(), dnnl::prop_kind::forward_inference, src, f32({out_, in_}, tag::any), memory::desc(),
        dst, attr);
    product_ = dnnl::inner_product_forward(pd);
    // In the workspace: the scratchpad, weight_hh in oneDNN's layout, h_prev's rows together.
    Staging at;
    scratch_ = scratchpad(pd, at);
    const memory::desc plain = f32({out_, in_}, backward ? tag::io : tag::oi);
    plain_weights_ = memory(plain, cpu(), DNNL_MEMORY_NONE);
    weights_ = Staged(pd.weights_desc(), at);
    to_blocked_ = dnnl::reorder(plain_weights_, memory(pd.weights_desc(), cpu(), DNNL_MEMORY_NONE));
    src_ = memory(src, cpu(), DNNL_MEMORY_NONE);
    dst_ = memory(dst, cpu(), DNNL_MEMORY_NONE);
    if (!backward) dense_ = at.take(static_cast<size_t>(rows_ * in_) * sizeof(float));
    workspace_ = at.end();
  }

  size_t workspace_bytes() const override { return workspace_; }

  void load(const float* w_hh, char* ws, int threads) const override {
    ThreadCount count(threads);
    plain_weights_.set_data_handle(const_cast<float*>(w_hh));
    to_blocked_.execute(stream_, plain_weights_, weights_.at(ws));
    stream_.wait();
  }

  void forward(const float* h_prev, int64_t ld, float* hproj, char* ws,
               int threads) const override {
    float* dense = reinterpret_cast<float*>(ws + dense_);
    for (int64_t b = 0; b < rows_; ++b) std::copy_n(h_prev + b * ld, in_, dense + b * in_);
    execute(dense, hproj, ws, threads);
  }

  void backward(const float* dgates, float* dh, char* ws, int threads) const override {
    execute(dgates, dh, ws, threads);
  }

 private:
  void execute(const float* src, float* dst, char* ws, int threads) const {
    ThreadCount count(threads);
    src_.set_data_handle(const_cast<float*>(src));
    dst_.set_data_handle(dst);
    product_.execute(stream_, {{DNNL_ARG_SRC, src_},
                               {DNNL_ARG_WEIGHTS, weights_.at(ws)},
                               {DNNL_ARG_DST, dst_},
                               {DNNL_ARG_SCRATCHPAD, scratch_.at(ws)}});
    stream_.wait();
  }

  int64_t rows_, in_, out_;
  size_t workspace_ = 0, dense_ = 0;  // dense_: where h_prev's rows go in the workspace
  mutable dnnl::stream stream_{cpu()};
  dnnl::inner_product_forward product_;
  dnnl::reorder to_blocked_;
  Staged scratch_, weights_;                   // weight_hh in oneDNN's layout
  mutable memory plain_weights_, src_, dst_;  // views of the caller's buffers
};

}  // namespace

std::unique_ptr<RecurrenceEngine> make_dnnl_recurrence(int64_t B, int64_t H, int64_t G,
                                                       bool backward, int threads) {
  try {
    return std::make_unique<DnnlRecurrence>(B, H, G, backward, threads);
  } catch (const dnnl::error&) {
    return nullptr;  // OpenBLAS computes the same products
  }
}

}  // namespace paddle_ops_nn
