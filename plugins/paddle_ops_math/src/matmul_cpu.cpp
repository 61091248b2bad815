// Matrix products through OpenBLAS (scipy-openblas32, NumPy's own build): matmul (batched,
// with transposes, NumPy batch broadcasting), matmul_2d (the seeds' `mul`: both operands
// flattened to 2-D by x_num_col_dims / y_num_col_dims), and their gradients.
//
// Memory contract: all tensors C-contiguous, float32 or float64, shapes checked in prepare.
// Matrix dimensions must fit OpenBLAS's 32-bit integers.
#include <cblas.h>

#include <atomic>
#include <climits>

#include "common.hpp"

namespace pom {

// OpenBLAS runs its threaded work through our OpenMP pool (one pool in the process; see
// module.cpp), with the kernel context's thread count.
void set_blas_threads(int32_t threads) {
  threads = std::max(1, std::min(threads, omp_get_thread_limit()));  // honour OMP_THREAD_LIMIT
  static std::atomic<int32_t> current{0};
  if (current.exchange(threads) != threads) scipy_openblas_set_num_threads(threads);
}

namespace {

inline blasint blas_int(int64_t v, const char* what) {
  if (v > INT_MAX) fail("%s = %lld exceeds OpenBLAS's 32-bit limit", what, static_cast<long long>(v));
  return static_cast<blasint>(v);
}

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

// The geometry of a batched product out[..., M, N] = op(x)[..., M, K] op(y)[..., K, N], with
// the batch dims of x and y broadcast (NumPy rules); decided in prepare.
struct Batched {
  bool tx = false, ty = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t batches = 1;
  std::vector<int64_t> x_batch, y_batch;  // per output batch: index of the x / y matrix

  Batched(const Tensor& x, const Tensor& y, const Tensor& out, bool tx_, bool ty_)
      : tx(tx_), ty(ty_) {
    if (x.ndim() < 2 || y.ndim() < 2) fail("x and y must be at least 2-D");
    const int64_t xr = x.dim(-2), xc = x.dim(-1), yr = y.dim(-2), yc = y.dim(-1);
    M = tx ? xc : xr;
    K = tx ? xr : xc;
    N = ty ? yr : yc;
    if ((ty ? yc : yr) != K)
      fail("inner dimensions differ: x %s, y %s (transpose_x=%d, transpose_y=%d)",
           x.describe().c_str(), y.describe().c_str(), tx, ty);
    const int32_t nd = out.ndim();
    if (nd < 2 || out.dim(-2) != M || out.dim(-1) != N) fail("out has the wrong shape %s", out.describe().c_str());
    blas_int(M, "M"), blas_int(N, "N"), blas_int(K, "K");
    // Batch broadcasting: walk the output batch index and map it to x's and y's.
    const int32_t bd = nd - 2, xb = x.ndim() - 2, yb = y.ndim() - 2;
    std::vector<int64_t> dims(bd);
    for (int32_t k = 0; k < bd; ++k) batches *= dims[k] = out.dim(k);
    x_batch.resize(batches);
    y_batch.resize(batches);
    std::vector<int64_t> idx(bd, 0);
    for (int64_t b = 0; b < batches; ++b) {
      int64_t xi = 0, yi = 0;
      for (int32_t k = 0; k < bd; ++k) {
        int32_t kx = k - (bd - xb), ky = k - (bd - yb);
        if (kx >= 0) xi = xi * x.dim(kx) + (x.dim(kx) == 1 ? 0 : idx[k]);
        if (ky >= 0) yi = yi * y.dim(ky) + (y.dim(ky) == 1 ? 0 : idx[k]);
        if (kx >= 0 && x.dim(kx) != 1 && x.dim(kx) != dims[k]) fail("batch dims of x do not broadcast");
        if (ky >= 0 && y.dim(ky) != 1 && y.dim(ky) != dims[k]) fail("batch dims of y do not broadcast");
      }
      x_batch[b] = xi;
      y_batch[b] = yi;
      for (int32_t k = bd - 1; k >= 0; --k) {
        if (++idx[k] < dims[k]) break;
        idx[k] = 0;
      }
    }
  }
};

class Matmul {
 public:
  Matmul(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(in(0), in(1), out(0), attrs.b("transpose_x"), attrs.b("transpose_y")) {
    expect_same_dtype(in(0), in(1), "x and y");
    out(0).expect_dtype(in(0).dtype(), "out");
    fn_ = dispatch(in(0).dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    set_blas_threads(ctx.num_threads());
    fn_(geo_, in(0).data<void>(), in(1).data<void>(), out(0).data<void>());
  }

 private:
  using Fn = void (*)(const Batched&, const void*, const void*, void*);

  template <class T> static void compute(const Batched& g, const void* xv, const void* yv, void* ov) {
    const T* x = static_cast<const T*>(xv);
    const T* y = static_cast<const T*>(yv);
    T* out = static_cast<T*>(ov);
    const int64_t xs = g.M * g.K, ys = g.K * g.N, os = g.M * g.N;
    for (int64_t b = 0; b < g.batches; ++b)
      gemm(g.tx, g.ty, g.M, g.N, g.K, T(1), x + g.x_batch[b] * xs, g.tx ? g.M : g.K,
           y + g.y_batch[b] * ys, g.ty ? g.K : g.N, T(0), out + b * os, g.N);
  }

  Batched geo_;
  Fn fn_;
};

// Inputs x, y, out_grad; outputs x_grad, y_grad (either may be absent). Broadcast batches
// accumulate into the operand's gradient.
class MatmulGrad {
 public:
  MatmulGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(in(0), in(1), in(2), attrs.b("transpose_x"), attrs.b("transpose_y")) {
    expect_same_dtype(in(0), in(1), "x and y");
    expect_same_dtype(in(0), in(2), "x and out_grad");
    if (out.has(0)) expect_same_shape(out(0), in(0), "x_grad and x");
    if (out.has(1)) expect_same_shape(out(1), in(1), "y_grad and y");
    fn_ = dispatch(in(0).dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
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
    if (out.has(0)) {
      T* dx = out(0).data<T>();
      std::fill(dx, dx + out(0).numel(), T(0));
      for (int64_t b = 0; b < g.batches; ++b) {
        T* dst = dx + g.x_batch[b] * xs;
        const T* yb = y + g.y_batch[b] * ys;
        const T* db = d + b * os;
        if (!g.tx)  // dx[M,K] += d[M,N] op(y)^T
          gemm(false, !g.ty, g.M, g.K, g.N, T(1), db, g.N, yb, ldy, T(1), dst, g.K);
        else  // dx[K,M] += op(y)[K,N] d^T
          gemm(g.ty, true, g.K, g.M, g.N, T(1), yb, ldy, db, g.N, T(1), dst, g.M);
      }
    }
    if (out.has(1)) {
      T* dy = out(1).data<T>();
      std::fill(dy, dy + out(1).numel(), T(0));
      for (int64_t b = 0; b < g.batches; ++b) {
        T* dst = dy + g.y_batch[b] * ys;
        const T* xb = x + g.x_batch[b] * xs;
        const T* db = d + b * os;
        if (!g.ty)  // dy[K,N] += op(x)^T d
          gemm(!g.tx, false, g.K, g.N, g.M, T(1), xb, ldx, db, g.N, T(1), dst, g.N);
        else  // dy[N,K] += d^T op(x)
          gemm(true, g.tx, g.N, g.K, g.M, T(1), db, g.N, xb, ldx, T(1), dst, g.K);
      }
    }
  }

  Batched geo_;
  Fn fn_;
};

// matmul_2d: x viewed as [prod(x.shape[:xk]), prod(x.shape[xk:])], y likewise with yk.
struct Flat {
  int64_t M = 1, K = 1, N = 1;
  Flat(const Tensor& x, const Tensor& y, int64_t xk, int64_t yk) {
    if (xk < 1 || xk >= x.ndim() + 1 || yk < 1 || yk >= y.ndim() + 1)
      fail("x_num_col_dims and y_num_col_dims must be in [1, ndim]");
    int64_t xr = 1, xc = 1, yr = 1, yc = 1;
    for (int32_t k = 0; k < x.ndim(); ++k) (k < xk ? xr : xc) *= x.dim(k);
    for (int32_t k = 0; k < y.ndim(); ++k) (k < yk ? yr : yc) *= y.dim(k);
    if (xc != yr)
      fail("x flattens to [%lld, %lld] and y to [%lld, %lld]: inner dimensions differ",
           (long long)xr, (long long)xc, (long long)yr, (long long)yc);
    M = xr, K = xc, N = yc;
    blas_int(M, "M"), blas_int(N, "N"), blas_int(K, "K");
  }
};

class Matmul2D {
 public:
  Matmul2D(const Attrs& attrs, const Slots& in, const Slots& out)
      : flat_(in(0), in(1), attrs.i("x_num_col_dims"), attrs.i("y_num_col_dims")) {
    expect_same_dtype(in(0), in(1), "x and y");
    if (out(0).numel() != flat_.M * flat_.N) fail("out has the wrong size");
    fn_ = dispatch(in(0).dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
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

class Matmul2DGrad {
 public:
  Matmul2DGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : flat_(in(0), in(1), attrs.i("x_num_col_dims"), attrs.i("y_num_col_dims")) {
    expect_same_dtype(in(0), in(1), "x and y");
    expect_same_dtype(in(0), in(2), "x and out_grad");
    if (out.has(0)) expect_same_shape(out(0), in(0), "x_grad and x");
    if (out.has(1)) expect_same_shape(out(1), in(1), "y_grad and y");
    fn_ = dispatch(in(0).dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    set_blas_threads(ctx.num_threads());
    fn_(flat_, in, out);
  }

 private:
  using Fn = void (*)(const Flat&, const Slots&, const Slots&);
  template <class T> static void compute(const Flat& f, const Slots& in, const Slots& out) {
    const T* d = in(2).data<T>();
    if (out.has(0))  // dx[M,K] = d[M,N] y^T
      gemm(false, true, f.M, f.K, f.N, T(1), d, f.N, in(1).data<T>(), f.N, T(0), out(0).data<T>(), f.K);
    if (out.has(1))  // dy[K,N] = x^T d
      gemm(true, false, f.K, f.N, f.M, T(1), in(0).data<T>(), f.K, d, f.N, T(0), out(1).data<T>(), f.N);
  }
  Flat flat_;
  Fn fn_;
};

}  // namespace

const pc::Family& matmul_kernels() {
  static const pc::Family family = {
      pc::kernel<Matmul>("matmul"),
      pc::kernel<MatmulGrad>("matmul_grad"),
      pc::kernel<Matmul2D>("matmul_2d"),
      pc::kernel<Matmul2DGrad>("matmul_2d_grad"),
  };
  return family;
}

}  // namespace pom
