// The geometry and prepare checks of matmul and matmul_2d (and their grads), shared by the CPU
// kernels (matmul_cpu.cpp, OpenBLAS) and the CUDA ones (matmul_cuda.cu, cuBLAS), so both
// accept the same tensors. Needs only the SDK's kernel.hpp, so nvcc compiles it too.
#ifndef PADDLE_OPS_MATH_MATMUL_HPP_
#define PADDLE_OPS_MATH_MATMUL_HPP_

#include <climits>
#include <cstdint>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace pom {

using paddle_core::Attrs;
using paddle_core::fail;
using paddle_core::Slots;
using paddle_core::Tensor;

// v as a BLAS int: both OpenBLAS (scipy-openblas32) and cuBLAS take 32-bit dimensions.
inline int blas_int(int64_t v, const char* what) {
  if (v > INT_MAX)
    fail("%s = %lld exceeds the 32-bit limit of BLAS (OpenBLAS, cuBLAS)", what,
         static_cast<long long>(v));
  return static_cast<int>(v);
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
    if (nd < 2 || out.dim(-2) != M || out.dim(-1) != N)
      fail("out has the wrong shape %s", out.describe().c_str());
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
        if (kx >= 0 && x.dim(kx) != 1 && x.dim(kx) != dims[k])
          fail("batch dims of x do not broadcast");
        if (ky >= 0 && y.dim(ky) != 1 && y.dim(ky) != dims[k])
          fail("batch dims of y do not broadcast");
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

// matmul_2d's geometry: x viewed as [prod(x.shape[:xk]), prod(x.shape[xk:])], y likewise with yk.
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

// The checks of each kernel's prepare; they return the geometry.
inline Batched check_matmul(const Attrs& attrs, const Slots& in, const Slots& out) {
  paddle_core::expect_same_dtype(in(0), in(1), "x and y");
  out(0).expect_dtype(in(0).dtype(), "out");
  return Batched(in(0), in(1), out(0), attrs.b("transpose_x"), attrs.b("transpose_y"));
}

// The grads' outputs: x_grad and y_grad, either may be absent.
inline void check_grad_outputs(const Slots& in, const Slots& out) {
  paddle_core::expect_same_dtype(in(0), in(1), "x and y");
  paddle_core::expect_same_dtype(in(0), in(2), "x and out_grad");
  if (out.has(0)) paddle_core::expect_same_shape(out(0), in(0), "x_grad and x");
  if (out.has(1)) paddle_core::expect_same_shape(out(1), in(1), "y_grad and y");
}

inline Batched check_matmul_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  check_grad_outputs(in, out);
  return Batched(in(0), in(1), in(2), attrs.b("transpose_x"), attrs.b("transpose_y"));
}

inline Flat check_matmul_2d(const Attrs& attrs, const Slots& in, const Slots& out) {
  paddle_core::expect_same_dtype(in(0), in(1), "x and y");
  Flat flat(in(0), in(1), attrs.i("x_num_col_dims"), attrs.i("y_num_col_dims"));
  if (out(0).numel() != flat.M * flat.N) fail("out has the wrong size");
  return flat;
}

inline Flat check_matmul_2d_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  check_grad_outputs(in, out);
  return Flat(in(0), in(1), attrs.i("x_num_col_dims"), attrs.i("y_num_col_dims"));
}

}  // namespace pom

#endif  // PADDLE_OPS_MATH_MATMUL_HPP_
