// Reductions: sum, mean, prod over a set of axes (keepdim optional).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace paddle_ops_math {
PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AsFloat32<Reduce<Sum, Join<Floats, AllInts>>>>("sum"),
    pc::kernel<AsFloat32<Reduce<Mean, Floats>>>("mean"),
    pc::kernel<AsFloat32<Reduce<Prod, Join<Floats, AllInts>>>>("prod"));

}  // namespace paddle_ops_math
