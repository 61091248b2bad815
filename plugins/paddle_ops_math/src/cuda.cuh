// What every CUDA kernel of paddle-ops-math needs around its launch (the SDK's
// paddle_core/cuda.hpp: the device check of prepare, grid-stride loops, the launch check),
// named in this plugin's namespace.
#ifndef PADDLE_OPS_MATH_CUDA_CUH_
#define PADDLE_OPS_MATH_CUDA_CUH_

#include <paddle_core/cuda.hpp>

namespace pom {

namespace pc = paddle_core;
using pc::check_launch;
using pc::Context;
using pc::expect_cuda;
using pc::fail;
using pc::first_index;
using pc::Grid;
using pc::grid_for;
using pc::index_step;
using pc::Slots;
using pc::stream_of;

}  // namespace pom

#endif  // PADDLE_OPS_MATH_CUDA_CUH_
