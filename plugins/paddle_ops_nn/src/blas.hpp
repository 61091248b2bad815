// paddle-ops-nn's calls into OpenBLAS (scipy-openblas32): a row-major GEMM and its thread count,
// for the kernels that build on GEMM (conv_gemm.cpp, rnn_cpu.cpp, attention_cpu.cpp).
#ifndef PADDLE_OPS_NN_BLAS_HPP_
#define PADDLE_OPS_NN_BLAS_HPP_

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace paddle_ops_nn {

// C[M, N] = alpha op(A) op(B) + beta C (op(A) = A^T when ta), row-major with the leading
// dimensions as stored, so a matrix can be a block of a wider one. With K == 0 the product is
// 0 and C becomes beta C (OpenBLAS, not asked then, would leave C as it was).
template <class T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) C[r * ldc + c] = beta == T(0) ? T(0) : beta * C[r * ldc + c];
    return;
  }
  const auto op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
  const blasint m = M, n = N, k = K, la = std::max<int64_t>(lda, 1),
                lb = std::max<int64_t>(ldb, 1), lc = std::max<int64_t>(ldc, 1);
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, op_a, op_b, m, n, k, alpha, A, la, B, lb, beta, C, lc);
  else
    scipy_cblas_dgemm(CblasRowMajor, op_a, op_b, m, n, k, alpha, A, la, B, lb, beta, C, lc);
}

// The same for operands stored whole (A [M, K] or [K, M], B [K, N] or [N, K], C [M, N]), alpha 1.
template <class T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T beta, const T* A, const T* B,
          T* C) {
  gemm<T>(ta, tb, M, N, K, T(1), A, ta ? M : K, B, tb ? K : N, beta, C, N);
}

// OpenBLAS's thread count for the calls that follow (set only when it differs: setting it
// costs a synchronisation with OpenBLAS's threads).
inline void set_blas_threads(int threads) {
  if (scipy_openblas_get_num_threads() != threads) scipy_openblas_set_num_threads(threads);
}

// OpenBLAS single-threaded while our threads call it, its count restored after (other kernels
// and plugins keep theirs: paddle-ops-math caches the count it set).
class BlasOneThread {
 public:
  BlasOneThread() : saved_(scipy_openblas_get_num_threads()) {
    if (saved_ != 1) scipy_openblas_set_num_threads(1);
  }
  ~BlasOneThread() {
    if (saved_ != 1) scipy_openblas_set_num_threads(saved_);
  }
  BlasOneThread(const BlasOneThread&) = delete;
  BlasOneThread& operator=(const BlasOneThread&) = delete;

 private:
  int saved_;
};

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_BLAS_HPP_
