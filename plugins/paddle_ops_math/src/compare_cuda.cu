// CUDA kernels of the elementwise comparisons with NumPy broadcasting: equal, not_equal, less,
// less_equal, greater, greater_equal. Same formulas (functors.hpp), checks and dtypes as
// compare_cpu.cpp.
//
// Memory contract: inputs x, y are C-contiguous CUDA buffers of one dtype; out has the
// broadcast shape and is bool (one byte per element, 0 or 1).
#include "elementwise.cuh"

namespace paddle_ops_math {

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<BinaryCuda<Equal, AllNumbers, true>>("equal_cuda"),
    pc::kernel<BinaryCuda<NotEqual, AllNumbers, true>>("not_equal_cuda"),
    pc::kernel<BinaryCuda<Less, AllNumbers, true>>("less_cuda"),
    pc::kernel<BinaryCuda<LessEqual, AllNumbers, true>>("less_equal_cuda"),
    pc::kernel<BinaryCuda<Greater, AllNumbers, true>>("greater_cuda"),
    pc::kernel<BinaryCuda<GreaterEqual, AllNumbers, true>>("greater_equal_cuda"));

}  // namespace paddle_ops_math
