// What every CUDA kernel of paddle-ops-nn needs around its launch (the SDK's
// paddle_core/cuda.hpp: the device check of prepare, grid-stride loops, the launch check),
// named in this plugin's namespace.
#ifndef PADDLE_OPS_NN_CUDA_CUH_
#define PADDLE_OPS_NN_CUDA_CUH_

#include <paddle_core/cuda.hpp>

#include "common.hpp"

namespace pon {

using pc::check_launch;
using pc::expect_cuda;
using pc::first_index;
using pc::Grid;
using pc::grid_for;
using pc::index_step;
using pc::stream_of;

// The launch every kernel here makes over n work items (elements or lanes): nothing when n is
// 0; else launch(T{}, grid, stream) for the float dtype, then the launch check.
template <class F> void launch_floats(int64_t n, int32_t dtype, const Context& ctx, F&& launch) {
  if (n == 0) return;
  const Grid grid = grid_for(n);
  dispatch(dtype, Floats{}, [&](auto t) { launch(t, grid, stream_of(ctx)); });
  check_launch();
}

}  // namespace pon

#endif  // PADDLE_OPS_NN_CUDA_CUH_
