// Matrix products through OpenBLAS (scipy-openblas32, NumPy's own build): matmul (batched,
// with transposes, NumPy batch broadcasting), matmul_2d (Paddle fluid's `mul`: both operands
// flattened to 2-D by x_num_col_dims / y_num_col_dims), and their gradients.
//
// Memory contract: all tensors C-contiguous, of one floating dtype, shapes checked in prepare
// (matmul.hpp, shared with matmul_cuda.cu). Matrix dimensions must fit 32-bit integers.
// float16 and bfloat16 are multiplied by sgemm on float32 copies (AsFloat32), accumulating in
// float32, and the result rounded once: scipy-openblas32's header declares sbgemm and shgemm,
// but its library is built without them (it exports neither).
#include <cblas.h>

#include <algorithm>
#include <atomic>

#include "common.hpp"
#include "matmul.hpp"

namespace paddle_ops_math {

// OpenBLAS runs its threaded work through our OpenMP pool (one pool in the process; see
// module.cpp), with the kernel context's thread count.
void set_blas_threads(int32_t threads) {
  threads = std::max(1, std::min(threads, omp_get_thread_limit()));  // honour OMP_THREAD_LIMIT
  static std::atomic<int32_t> current{0};
  if (current.exchange(threads) != threads) scipy_openblas_set_num_threads(threads);
}

namespace {

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major, ld* = row lengths as stored.
template <class T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  const auto op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
  lda = std::max<int64_t>(lda, 1), ldb = std::max<int64_t>(ldb, 1), ldc = std::max<int64_t>(ldc, 1);
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, op_a, op_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  else
    scipy_cblas_dgemm(CblasRowMajor, op_a, op_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Inputs x, y and bias (optional: [N], added to every row of out, as paddle-ops-math's
// matmul_bias pass sets it); output out.
class Matmul {
 public:
  static constexpr pc::Signature signature{"11?", "1"};
  using DTypes = Floats;
  Matmul(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_matmul(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    set_blas_threads(ctx.num_threads());
    fn_(geo_, in(0).data<void>(), in(1).data<void>(), in.has(2) ? in(2).data<void>() : nullptr,
        out(0).data<void>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Batched&, const void*, const void*, const void*, void*, int32_t);

  template <class T>
  static void compute(const Batched& g, const void* xv, const void* yv, const void* bv, void* ov,
                      int32_t threads) {
    const T* x = static_cast<const T*>(xv);
    const T* y = static_cast<const T*>(yv);
    const T* bias = static_cast<const T*>(bv);
    T* out = static_cast<T*>(ov);
    const int64_t xs = g.M * g.K, ys = g.K * g.N, os = g.M * g.N;
    // With a bias, out starts as the bias in every row and the product adds to it (beta 1):
    // OpenBLAS with beta 0 zeroes out first anyway, so the bias costs no pass of its own.
    if (bias) {
      const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(g.N, 1));  // rows
      parallel_rows(g.batches * g.M, threads, grain, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) std::copy(bias, bias + g.N, out + row * g.N);
      });
    }
    for (int64_t b = 0; b < g.batches; ++b)
      gemm(g.tx, g.ty, g.M, g.N, g.K, T(1), x + g.x_batch[b] * xs, g.tx ? g.M : g.K,
           y + g.y_batch[b] * ys, g.ty ? g.K : g.N, T(bias ? 1 : 0), out + b * os, g.N);
  }

  Batched geo_;
  Fn fn_;
};

// Inputs x, y, out_grad, x_grad_acc, y_grad_acc (the last two optional); outputs x_grad,
// y_grad (either may be absent). Broadcast batches, and the accumulators, accumulate into the
// operand's gradient.
class MatmulGrad {
 public:
  static constexpr pc::Signature signature{"111??", "??"};
  using DTypes = Floats;
  MatmulGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_matmul_grad(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    set_blas_threads(ctx.num_threads());
    fn_(geo_, in, out);
  }

 private:
  using Fn = void (*)(const Batched&, const Slots&, const Slots&);

  template <class T> static void compute(const Batched& g, const Slots& in, const Slots& out) {
    const T* x = in(0).data<T>();
    const T* y = in(1).data<T>();
    const T* d = in(2).data<T>();
    const int64_t xs = g.M * g.K, ys = g.K * g.N, os = g.M * g.N;
    const int64_t ldx = g.tx ? g.M : g.K, ldy = g.ty ? g.K : g.N;
    // A gradient whose matrices each batch writes once starts as the product (beta 0, or 1
    // onto an accumulator); one that batches share is zeroed and they accumulate.
    if (out.has(0)) {
      T* dx = out(0).data<T>();
      const T beta = start_grad<T>(in, 3, out(0), !g.owns(g.x_batch));
      for (int64_t b = 0; b < g.batches; ++b) {
        T* dst = dx + g.x_batch[b] * xs;
        const T* yb = y + g.y_batch[b] * ys;
        const T* db = d + b * os;
        if (!g.tx)  // dx[M,K] (+)= d[M,N] op(y)^T
          gemm(false, !g.ty, g.M, g.K, g.N, T(1), db, g.N, yb, ldy, beta, dst, g.K);
        else  // dx[K,M] (+)= op(y)[K,N] d^T
          gemm(g.ty, true, g.K, g.M, g.N, T(1), yb, ldy, db, g.N, beta, dst, g.M);
      }
    }
    if (out.has(1)) {
      T* dy = out(1).data<T>();
      const T beta = start_grad<T>(in, 4, out(1), !g.owns(g.y_batch));
      for (int64_t b = 0; b < g.batches; ++b) {
        T* dst = dy + g.y_batch[b] * ys;
        const T* xb = x + g.x_batch[b] * xs;
        const T* db = d + b * os;
        if (!g.ty)  // dy[K,N] (+)= op(x)^T d
          gemm(!g.tx, false, g.K, g.N, g.M, T(1), xb, ldx, db, g.N, beta, dst, g.N);
        else  // dy[N,K] (+)= d^T op(x)
          gemm(true, g.tx, g.N, g.K, g.M, T(1), db, g.N, xb, ldx, beta, dst, g.K);
      }
    }
  }

  Batched geo_;
  Fn fn_;
};

class Matmul2D {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  Matmul2D(const Attrs& attrs, const Slots& in, const Slots& out)
      : flat_(check_matmul_2d(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    set_blas_threads(ctx.num_threads());
    fn_(flat_, in, out);
  }

 private:
  using Fn = void (*)(const Flat&, const Slots&, const Slots&);
  template <class T> static void compute(const Flat& f, const Slots& in, const Slots& out) {
    gemm(false, false, f.M, f.N, f.K, T(1), in(0).data<T>(), f.K, in(1).data<T>(), f.N, T(0),
         out(0).data<T>(), f.N);
  }
  Flat flat_;
  Fn fn_;
};

// Inputs x, y, out_grad, x_grad_acc, y_grad_acc (the last two optional); outputs x_grad,
// y_grad (either may be absent), each added to its accumulator where given.
class Matmul2DGrad {
 public:
  static constexpr pc::Signature signature{"111??", "??"};
  using DTypes = Floats;
  Matmul2DGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : flat_(check_matmul_2d_grad(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    set_blas_threads(ctx.num_threads());
    fn_(flat_, in, out);
  }

 private:
  using Fn = void (*)(const Flat&, const Slots&, const Slots&);
  template <class T> static void compute(const Flat& f, const Slots& in, const Slots& out) {
    const T* d = in(2).data<T>();
    if (out.has(0))  // dx[M,K] (+)= d[M,N] y^T
      gemm(false, true, f.M, f.K, f.N, T(1), d, f.N, in(1).data<T>(), f.N,
           start_grad<T>(in, 3, out(0), false), out(0).data<T>(), f.K);
    if (out.has(1))  // dy[K,N] (+)= x^T d
      gemm(true, false, f.K, f.N, f.M, T(1), in(0).data<T>(), f.K, d, f.N,
           start_grad<T>(in, 4, out(1), false), out(1).data<T>(), f.N);
  }
  Flat flat_;
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AsFloat32<Matmul>>("matmul"),
    pc::kernel<AsFloat32<MatmulGrad>>("matmul_grad"),
    pc::kernel<AsFloat32<Matmul2D>>("matmul_2d"),
    pc::kernel<AsFloat32<Matmul2DGrad>>("matmul_2d_grad"));

}  // namespace paddle_ops_math
