// Reductions: max, min over a set of axes (NaN propagates, like NumPy); of bool, any and all.
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace paddle_ops_math {

// float32, float64, every integer and bool: the largest bool is true where any element is.
using ExtremeTypes = Join<Join<Floats, AllInts>, Types<bool>>;

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AsFloat32<Reduce<Max, ExtremeTypes>>>("max"),
    pc::kernel<AsFloat32<Reduce<Min, ExtremeTypes>>>("min"));

}  // namespace paddle_ops_math
