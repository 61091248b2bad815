// What every CUDA kernel of paddle-ops-math needs around its launch (the SDK's
// paddle_core/cuda.hpp: the device check of prepare, grid-stride loops, the launch check),
// named in this plugin's namespace.
#ifndef PADDLE_OPS_MATH_CUDA_CUH_
#define PADDLE_OPS_MATH_CUDA_CUH_

#include <paddle_core/cuda.hpp>

namespace paddle_ops_math {

namespace pc = paddle_core;
using pc::check_launch;
using pc::Context;
using pc::copy_async;
using pc::expect_cuda;
using pc::fail;
using pc::first_index;
using pc::Grid;
using pc::grid_for;
using pc::index_step;
using pc::Slots;
using pc::stream_of;
using pc::zero_async;

// Dims a kernel walks, innermost first, each with the element strides of S tensors; passed to
// kernels by value. Position i of the walk is at offsets(i) in the S tensors.
template <int S> struct DimWalk {
  static constexpr int kMaxDims = 8;
  int32_t n = 0;
  int64_t size[kMaxDims] = {};
  int64_t stride[kMaxDims][S] = {};

  // Append the next dim outward, merged into the last one where every stride composes; fail
  // naming `what` beyond kMaxDims.
  void push(int64_t extent, const int64_t (&strides)[S], const char* what) {
    bool composes = n > 0;
    for (int t = 0; composes && t < S; ++t)
      composes = stride[n - 1][t] * size[n - 1] == strides[t];
    if (composes) {
      size[n - 1] *= extent;
      return;
    }
    if (n == kMaxDims)
      fail("%s needs more than %d dimensions after merging; the CUDA kernel walks at most %d",
           what, kMaxDims, kMaxDims);
    size[n] = extent;
    for (int t = 0; t < S; ++t) stride[n][t] = strides[t];
    ++n;
  }

  // Add the offsets of position i to off.
  __device__ void offsets(int64_t i, int64_t (&off)[S]) const {
    for (int32_t k = 0; k < n; ++k) {
      const int64_t q = i / size[k], j = i - q * size[k];
      for (int t = 0; t < S; ++t) off[t] += j * stride[k][t];
      i = q;
    }
  }
};

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_CUDA_CUH_
