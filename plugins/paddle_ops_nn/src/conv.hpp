// Convolution engines: the three computations of one 2-D convolution (see window.hpp's
// ConvShape), behind one interface so the ops' kernels (conv_cpu.cpp) do not care which library
// computes them:
//   forward           y = conv(x, w) (+ b per output channel)
//   backward_data     dx = the gradient of forward w.r.t. x, given dy (also conv2d_transpose)
//   backward_weights  dw (and db) given x and dy
// Tensors are C-contiguous, as the core binds them; weights [K, C / groups, kh, kw], and
// activations plain NCHW or, for the oneDNN and Winograd engines, blocked as `Layouts` says
// (layout.hpp: x and dx, y and dy). An engine is built in a kernel's prepare, for the
// directions the kernel needs.
#ifndef PADDLE_OPS_NN_CONV_HPP_
#define PADDLE_OPS_NN_CONV_HPP_

#include <cstddef>
#include <memory>

#include "window.hpp"

namespace paddle_ops_nn {

enum ConvPass : unsigned { kForward = 1, kBackwardData = 2, kBackwardWeights = 4 };

// What conv2d adds before writing out (its residual input and fuse_* attrs, which the fusion
// pass sets): out = act(convolution + bias + residual). oneDNN computes it as post-ops of the
// convolution, the other engines in a pass over out (apply_epilogue).
struct ConvEpilogue {
  enum Activation { kNone, kRelu, kLeakyRelu, kClip } activation = kNone;
  float alpha = 0, beta = 0;  // leaky_relu's slope; clip's bounds
  bool residual = false;
};

// y[i] = act(y[i] + r[i]) over n elements (r: null without a residual), float32 or float64;
// elementwise, so in any layout out and residual share.
void apply_epilogue(int32_t dtype, const ConvEpilogue& e, const void* r, void* y, int64_t n,
                    int threads);

// Each call gets `ws`, workspace_bytes() of scratch memory (64-byte aligned, content
// undefined): the kernel's workspace (pc::Workspace).
class ConvEngine {
 public:
  virtual ~ConvEngine() = default;
  virtual size_t workspace_bytes() const = 0;
  // The bytes the engine keeps for the plan's life (a filter kept converted: keep_filter).
  virtual size_t state_bytes() const { return 0; }
  // same_filter: w holds the values of the previous call's (conv2d's filter_fingerprint says
  // so), and an engine that keeps the filter converted to its own layout may reuse that.
  // residual: the epilogue's (null without one).
  virtual void forward(const void* x, const void* w, const void* b, const void* residual,
                       void* y, char* ws, int threads, bool same_filter) const = 0;
  virtual void backward_data(const void* dy, const void* w, void* dx, char* ws,
                             int threads) const = 0;
  // db may be null (no bias gradient wanted); dw may be null too.
  virtual void backward_weights(const void* x, const void* dy, void* dw, void* db, char* ws,
                                int threads) const = 0;
};

// Winograd where it suits and is enabled (engine.hpp), else oneDNN for float32 where enabled,
// im2col + OpenBLAS otherwise (plain layouts only: a blocked one fails). `bias`: forward adds
// b / backward_weights gives db (so oneDNN fuses them). `keep_filter`: the forward pass keeps
// the filter it converted between calls (in the engine, not the workspace), for calls with
// same_filter.
std::unique_ptr<ConvEngine> make_conv_engine(const ConvShape& shape, int32_t dtype, unsigned passes,
                                             bool bias, int threads, Layouts layout = {},
                                             const ConvEpilogue& epilogue = {},
                                             bool keep_filter = false);
// The im2col + OpenBLAS engine (conv_gemm.cpp), float32 or float64.
std::unique_ptr<ConvEngine> make_gemm_conv(const ConvShape& shape, int32_t dtype, unsigned passes,
                                           const ConvEpilogue& epilogue);
// Whether that engine's filter gradient outpaces oneDNN's jit kernel on AVX2 for `shape`
// (conv_gemm.cpp says where it was measured).
bool gemm_filter_gradient_pays(const ConvShape& shape);
// Whether its forward pass outpaces oneDNN's AVX2 kernels in a training step (the filter
// converted at every call) for `shape` (likewise).
bool gemm_forward_pays(const ConvShape& shape);
// The oneDNN engine (conv_dnnl.cpp, built with oneDNN only), float32 only.
std::unique_ptr<ConvEngine> make_dnnl_conv(const ConvShape& shape, unsigned passes, bool bias,
                                           int threads, Layouts layout,
                                           const ConvEpilogue& epilogue, bool keep_filter);

// The Winograd engine (conv_winograd_avx2.cpp): the forward passes, input gradients and
// filter and bias gradients of float32 3x3 convolutions of stride 1, channels and filters
// multiples of 8, on channels-last, nChw8c or plain activations, by F(4x4, 3x3) where its
// tiles are at least as many as the filters and F(2x2, 3x3) elsewhere. Made only where
// use_avx2(); make_conv_engine chooses it where it measured faster.
std::unique_ptr<ConvEngine> make_winograd_conv(const ConvShape& shape, unsigned passes, bool bias,
                                               Layouts layout, const ConvEpilogue& epilogue,
                                               bool keep_filter);

// y[n, k, :] += b[k] / db[k] = sum of dy[:, k, :], over planes of `plane` elements (float32 or
// float64): the bias of engines that do not fuse it, and conv2d_transpose's.
void add_channel_bias(int32_t dtype, const void* b, void* y, int64_t batch, int64_t channels,
                      int64_t plane, int threads);
void channel_bias_grad(int32_t dtype, const void* dy, void* db, int64_t batch, int64_t channels,
                       int64_t plane, int threads);

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_CONV_HPP_
