// What the CPU kernels of paddle-ops-nn share. Dtype dispatch, the common checks
// (paddle_core/kernel.hpp) and parallel loops (paddle_core/parallel.hpp) are the SDK's, used
// here unqualified. Kernel files include this header only.
#ifndef PADDLE_OPS_NN_COMMON_HPP_
#define PADDLE_OPS_NN_COMMON_HPP_

#include <cstdint>

#include <paddle_core/kernel.hpp>
#include <paddle_core/parallel.hpp>

namespace pon {

namespace pc = paddle_core;
using pc::Attrs;
using pc::Context;
using pc::dispatch;
using pc::expect_same_dtype;
using pc::expect_same_shape;
using pc::fail;
using pc::Floats;
using pc::kGrain;
using pc::parallel_for;
using pc::Slots;
using pc::Tensor;
using pc::Types;

}  // namespace pon

#endif  // PADDLE_OPS_NN_COMMON_HPP_
