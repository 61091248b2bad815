// CUDA kernels of the unary elementwise ops that are plain formulas: abs, neg, exp, log, sqrt,
// rsqrt, square, sin, cos, tanh, sigmoid, floor, ceil, round, sign, erf. Same formulas
// (functors.hpp), checks and dtypes as unary_cpu.cpp.
//
// Memory contract: x and out are C-contiguous CUDA buffers with equal shapes and dtypes
// (checked in prepare). Integer abs, neg and square wrap around. The math functions are
// CUDA's (expf: 2 ulp, tanhf: 2 ulp, ...; CUDA C Programming Guide, "Mathematical
// Functions"), so float results may differ from the CPU's in the last bits.
#include "elementwise.cuh"

namespace paddle_ops_math {

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<UnaryCuda<Abs, AllNumbers>>("abs_cuda"),
    pc::kernel<UnaryCuda<Neg, AllNumbers>>("neg_cuda"),
    pc::kernel<UnaryCuda<Exp, AllFloats>>("exp_cuda"),
    pc::kernel<UnaryCuda<Log, AllFloats>>("log_cuda"),
    pc::kernel<UnaryCuda<Sqrt, AllFloats>>("sqrt_cuda"),
    pc::kernel<UnaryCuda<Rsqrt, AllFloats>>("rsqrt_cuda"),
    pc::kernel<UnaryCuda<Square, AllNumbers>>("square_cuda"),
    pc::kernel<UnaryCuda<Sin, AllFloats>>("sin_cuda"),
    pc::kernel<UnaryCuda<Cos, AllFloats>>("cos_cuda"),
    pc::kernel<UnaryCuda<Tanh, AllFloats>>("tanh_cuda"),
    pc::kernel<UnaryCuda<Sigmoid, AllFloats>>("sigmoid_cuda"),
    pc::kernel<UnaryCuda<Floor, AllFloats>>("floor_cuda"),
    pc::kernel<UnaryCuda<Ceil, AllFloats>>("ceil_cuda"),
    pc::kernel<UnaryCuda<Round, AllFloats>>("round_cuda"),
    pc::kernel<UnaryCuda<Sign, AllNumbers>>("sign_cuda"),
    pc::kernel<UnaryCuda<Erf, AllFloats>>("erf_cuda"));

}  // namespace paddle_ops_math
