// Which library computes float32 convolution, pooling and the recurrences' per-step products
// (rnn_engine.hpp). oneDNN where the build found it
// (its wheels exist for Linux x86-64 only) and the user has not switched it off
// (paddle_ops_nn.onednn.set_enabled, like PyTorch's torch.backends.mkldnn.enabled); otherwise
// the built-in engines: im2col + OpenBLAS for convolution, loops for pooling. Read when a
// kernel is prepared, so a plan keeps the engines it was prepared with.
#ifndef PADDLE_OPS_NN_ENGINE_HPP_
#define PADDLE_OPS_NN_ENGINE_HPP_

#include <cstdint>

namespace paddle_ops_nn {

constexpr bool kOnednnBuilt =
#ifdef PADDLE_OPS_NN_WITH_ONEDNN
    true;
#else
    false;
#endif

bool onednn_enabled();  // built and switched on
void set_onednn_enabled(bool enabled);  // no effect where oneDNN is not built

// The Winograd engine's switch (conv.hpp's make_winograd_conv; paddle_ops_nn.winograd), on by
// default; read when a kernel is prepared as oneDNN's is.
bool winograd_enabled();
void set_winograd_enabled(bool enabled);
// Engines made in this process (conv_winograd_avx2.cpp counts) of F(outputs x outputs, 3x3),
// 2 or 4; any other `outputs`: of both.
int64_t winograd_engines_made(int outputs);
void count_winograd_engine(int outputs);

// The channel block (8 or 16) of the blocked layout oneDNN's convolutions choose on this CPU
// for activations (nChw8c, nChw16c: layout.hpp), which the layout pass keeps between ops; 0
// where they choose another layout or oneDNN is not built. dnnl_channel_block (conv_dnnl.cpp,
// built with oneDNN only) asks oneDNN.
int onednn_channel_block();
int dnnl_channel_block();
// The same for plans without gradients, whose convolutions oneDNN computes as inferences: -1
// (channels last, layout.hpp) where it chooses NHWC, as its brgemm kernels do.
int onednn_inference_block();
int dnnl_inference_block();

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_ENGINE_HPP_
