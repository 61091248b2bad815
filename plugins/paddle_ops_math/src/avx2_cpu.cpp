// Whether the CPU kernels run their AVX2+FMA loops (common.hpp's use_avx2).
#include <cstdlib>

#include "common.hpp"

namespace paddle_ops_math {

bool use_avx2() {
  static const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* off = std::getenv("PADDLE_OPS_MATH_DISABLE_AVX2");
  return cpu && !(off != nullptr && *off != '\0' && *off != '0');
}

}  // namespace paddle_ops_math
