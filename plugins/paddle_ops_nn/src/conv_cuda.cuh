// The engines behind the CUDA convolution kernels (conv_cuda.cu): the three computations of one
// 2-D convolution (window.hpp's ConvShape, as conv.hpp's CPU engines), on device buffers, queued
// on a stream. cuDNN computes them where it is loaded and enabled and takes the convolution
// (cudnn_cuda.cu); kernels of this plugin otherwise (conv_cuda.cu). The bias is added, and its
// gradient summed, by the kernels of conv_cuda.cu for both engines. Built in a kernel's prepare,
// for the passes (conv.hpp's ConvPass) the kernel computes.
#ifndef PADDLE_OPS_NN_CONV_CUDA_CUH_
#define PADDLE_OPS_NN_CONV_CUDA_CUH_

#include <memory>

#include "conv.hpp"
#include "cuda.cuh"

namespace paddle_ops_nn {

class CudaConvEngine {
 public:
  virtual ~CudaConvEngine() = default;
  // y = conv(x, w); dx = its gradient w.r.t. x given dy; dw its gradient w.r.t. w. Every
  // element of the result is written.
  virtual void forward(const void* x, const void* w, void* y, cudaStream_t stream) const = 0;
  virtual void backward_data(const void* dy, const void* w, void* dx,
                             cudaStream_t stream) const = 0;
  virtual void backward_weights(const void* x, const void* dy, void* dw,
                                cudaStream_t stream) const = 0;
};

// cuDNN's engine for `passes` of the convolution (float32 or float64), or nullptr where cuDNN
// does not serve: not loaded or switched off (paddle_ops_nn.cudnn), or a convolution it does
// not take (padding that differs before and after, sizes beyond 32 bits, no deterministic
// algorithm within the workspace limit). Fails (KernelError) on an error cuDNN reports.
std::unique_ptr<CudaConvEngine> make_cudnn_conv(const ConvShape& shape, int32_t dtype,
                                                unsigned passes, cudaStream_t stream);

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_CONV_CUDA_CUH_
