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

}  // namespace pon

#endif  // PADDLE_OPS_NN_CUDA_CUH_
