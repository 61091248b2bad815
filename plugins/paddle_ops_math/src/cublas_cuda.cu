// Whether cuBLAS (the SDK's paddle_core/cublas.hpp, loaded at run time) serves the matmul
// kernels, for module.cpp, which nvcc does not compile.
#include "cublas.hpp"

namespace paddle_ops_math {

const char* cublas_unavailable_reason() { return paddle_core::cublas_unavailable_reason(); }

}  // namespace paddle_ops_math
