// Whether the CPU kernels run their AVX2+FMA loops (common.hpp's use_avx2).
#include <cstdlib>

#include "common.hpp"

namespace paddle_ops_nn {

bool use_avx2() {
  static const bool yes = [] {  // read once: the softmax lanes ask for every lane
    const char* off = std::getenv("PADDLE_OPS_NN_DISABLE_AVX2");
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           !(off != nullptr && *off != '\0' && *off != '0');
  }();
  return yes;
}

}  // namespace paddle_ops_nn
