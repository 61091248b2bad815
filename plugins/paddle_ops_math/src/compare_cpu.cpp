// Elementwise comparisons with NumPy broadcasting: equal, not_equal, less, less_equal,
// greater, greater_equal.
//
// Memory contract: inputs x, y are C-contiguous and of one numeric dtype (float16 and bfloat16
// compared in float32, exactly); out has the broadcast shape and is bool (one byte per element,
// 0 or 1). The formulas are functors.hpp's.
#include "binary.hpp"

namespace paddle_ops_math {

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Binary<Equal, AllNumbers, true>>("equal"),
    pc::kernel<Binary<NotEqual, AllNumbers, true>>("not_equal"),
    pc::kernel<Binary<Less, AllNumbers, true>>("less"),
    pc::kernel<Binary<LessEqual, AllNumbers, true>>("less_equal"),
    pc::kernel<Binary<Greater, AllNumbers, true>>("greater"),
    pc::kernel<Binary<GreaterEqual, AllNumbers, true>>("greater_equal"));

}  // namespace paddle_ops_math
