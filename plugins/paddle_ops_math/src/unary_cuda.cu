// CUDA kernels of the unary elementwise ops that are plain formulas: abs, neg, exp, log, sqrt,
// rsqrt, square, sin, cos, tanh, sigmoid, floor, ceil, round, sign, erf. Same formulas
// (functors.hpp), checks and dtypes as unary_cpu.cpp.
//
// Memory contract: x and out are C-contiguous CUDA buffers with equal shapes and dtypes
// (checked in prepare). Integer abs, neg and square wrap around. The math functions are
// CUDA's (expf: 2 ulp, tanhf: 2 ulp, ...; CUDA C Programming Guide, "Mathematical
// Functions"), so float results may differ from the CPU's in the last bits.
#include "elementwise.cuh"

namespace pom {

const pc::Family& unary_cuda_kernels() {
  static const pc::Family family = {
      pc::kernel<UnaryCuda<Abs, Numbers>>("abs_cuda"),
      pc::kernel<UnaryCuda<Neg, Numbers>>("neg_cuda"),
      pc::kernel<UnaryCuda<Exp, Floats>>("exp_cuda"),
      pc::kernel<UnaryCuda<Log, Floats>>("log_cuda"),
      pc::kernel<UnaryCuda<Sqrt, Floats>>("sqrt_cuda"),
      pc::kernel<UnaryCuda<Rsqrt, Floats>>("rsqrt_cuda"),
      pc::kernel<UnaryCuda<Square, Numbers>>("square_cuda"),
      pc::kernel<UnaryCuda<Sin, Floats>>("sin_cuda"),
      pc::kernel<UnaryCuda<Cos, Floats>>("cos_cuda"),
      pc::kernel<UnaryCuda<Tanh, Floats>>("tanh_cuda"),
      pc::kernel<UnaryCuda<Sigmoid, Floats>>("sigmoid_cuda"),
      pc::kernel<UnaryCuda<Floor, Floats>>("floor_cuda"),
      pc::kernel<UnaryCuda<Ceil, Floats>>("ceil_cuda"),
      pc::kernel<UnaryCuda<Round, Floats>>("round_cuda"),
      pc::kernel<UnaryCuda<Sign, Numbers>>("sign_cuda"),
      pc::kernel<UnaryCuda<Erf, Floats>>("erf_cuda"),
  };
  return family;
}

}  // namespace pom
