// What computes the product at each step of a recurrence (lstm, gru and their gradients):
// forward hproj = h_prev @ weight_hh^T, backward dh += dgates @ weight_hh, B sequences at a time.
// OpenBLAS packs the whole of weight_hh at every such call, a third of their time at B = 16;
// oneDNN's inner product (rnn_dnnl.cpp) takes weight_hh reordered into its blocked layout once
// per run instead. The kernels call OpenBLAS where there is no engine.
#ifndef PADDLE_OPS_NN_RNN_ENGINE_HPP_
#define PADDLE_OPS_NN_RNN_ENGINE_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace paddle_ops_nn {

// One unit's (layer and direction's) steps at a time: `load` its weight_hh [G * H, H], then
// `forward` or `backward` at each step. Float32; every matrix row-major. Each call gets `ws`,
// workspace_bytes() of scratch memory (64-byte aligned), the same from `load` to the unit's
// last step: the kernel's workspace (pc::Workspace), where the engine keeps weight_hh.
class RecurrenceEngine {
 public:
  virtual ~RecurrenceEngine() = default;
  virtual size_t workspace_bytes() const = 0;
  virtual void load(const float* w_hh, char* ws, int threads) const = 0;
  // hproj [B, G * H] = h_prev @ w_hh^T; h_prev's B rows of H are ld floats apart.
  virtual void forward(const float* h_prev, int64_t ld, float* hproj, char* ws,
                       int threads) const = 0;
  // dh [B, H] += dgates [B, G * H] @ w_hh.
  virtual void backward(const float* dgates, float* dh, char* ws, int threads) const = 0;
};

// oneDNN's engine for float32 where oneDNN is enabled (engine.hpp), for the forward pass or the
// backward one; null otherwise, or where oneDNN has no inner product for the shape.
std::unique_ptr<RecurrenceEngine> make_recurrence_engine(int64_t B, int64_t H, int64_t G,
                                                         bool backward, int32_t dtype,
                                                         int threads);
// The oneDNN engine (rnn_dnnl.cpp, built with oneDNN only); null where oneDNN refuses the shape.
std::unique_ptr<RecurrenceEngine> make_dnnl_recurrence(int64_t B, int64_t H, int64_t G,
                                                       bool backward, int threads);

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_RNN_ENGINE_HPP_
