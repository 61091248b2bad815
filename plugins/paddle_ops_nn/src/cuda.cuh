// What every CUDA kernel of paddle-ops-nn needs around its launch (the SDK's
// paddle_core/cuda.hpp: the device check of prepare, grid-stride loops, the launch check),
// named in this plugin's namespace (scratch memory for the length of one run among them); the
// fixed-order block sums of the reductions.
#ifndef PADDLE_OPS_NN_CUDA_CUH_
#define PADDLE_OPS_NN_CUDA_CUH_

#include <paddle_core/cuda.hpp>

#include "common.hpp"

namespace paddle_ops_nn {

using pc::check_cuda;
using pc::check_launch;
using pc::expect_cuda;
using pc::first_index;
using pc::Grid;
using pc::grid_for;
using pc::index_step;
using pc::Scratch;
using pc::stream_of;
using pc::zero_async;

// The launch every kernel here makes over n work items (elements or lanes): nothing when n is
// 0; else launch(T{}, grid, stream) for the float dtype, then the launch check.
template <class F> void launch_floats(int64_t n, int32_t dtype, const Context& ctx, F&& launch) {
  if (n == 0) return;
  const Grid grid = grid_for(n);
  dispatch(dtype, Floats{}, [&](auto t) { launch(t, grid, stream_of(ctx)); });
  check_launch();
}

// -- deterministic reductions -----------------------------------------------------------------
// A reduction kernel gives each of its kBlock threads a strided part of the elements to add up
// (in double), then joins the block's partial sums in a fixed tree: no atomics, so a result is
// the same on every run (it may differ from the CPU's in the last bits: another order).
constexpr int kBlock = 256;

// The block's sums of K values per thread: every thread passes its partial sums in v and gets
// the block's totals back in v. Called by every thread of the block (it synchronizes).
template <int K> __device__ void block_sums(double (&v)[K]) {
  __shared__ double slots[K][kBlock];
  const int t = static_cast<int>(threadIdx.x);
  for (int k = 0; k < K; ++k) slots[k][t] = v[k];
  __syncthreads();
  for (int half = kBlock / 2; half > 0; half /= 2) {
    if (t < half)
      for (int k = 0; k < K; ++k) slots[k][t] += slots[k][t + half];
    __syncthreads();
  }
  for (int k = 0; k < K; ++k) v[k] = slots[k][0];
  __syncthreads();  // every thread has read the totals before the slots are used again
}

// Blocks for one block per item (a channel, a row), capped: a block then takes several items.
inline unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(items, 1), 65535));
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_CUDA_CUH_
