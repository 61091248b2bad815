// The geometry and prepare checks of matmul and matmul_2d (and their grads), shared by the CPU
// kernels (matmul_cpu.cpp, OpenBLAS) and the CUDA ones (matmul_cuda.cu, cuBLAS), so both
// accept the same tensors. Needs only the SDK's kernel.hpp, so nvcc compiles it too.
#ifndef PADDLE_OPS_MATH_MATMUL_HPP_
#define PADDLE_OPS_MATH_MATMUL_HPP_

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace paddle_ops_math {

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

// Fail unless BLAS can take the sizes of a product [M, K] x [K, N] -> [M, N], or of its
// gradients. Where none of the three matrices holds an element ([2^40, 0] x [0, 0]) no product
// is made (the run loop calls no kernel on tensors that hold none), whatever the sizes.
inline void blas_sizes(int64_t M, int64_t N, int64_t K) {
  if ((M == 0 || K == 0) && (K == 0 || N == 0) && (M == 0 || N == 0)) return;
  blas_int(M, "M"), blas_int(N, "N"), blas_int(K, "K");
}

// One operand of matmul as matrices: its last two dims and its batch dims; a vector (1-D) is
// promoted as NumPy promotes it, x to a row [1, K] and y to a column [K, 1], and never
// transposed. The memory of a vector and of its promoted matrix is the same.
struct MatmulOperand {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> batch;
  bool vector = false;
};

inline MatmulOperand matmul_operand(const Tensor& t, bool left, const char* name) {
  if (t.ndim() == 0) fail("%s %s is 0-d: matmul needs a vector or matrices", name,
                          t.describe().c_str());
  MatmulOperand o;
  if (t.ndim() == 1) {
    o.vector = true;
    (left ? o.cols : o.rows) = t.dim(0);
    (left ? o.rows : o.cols) = 1;
    return o;
  }
  o.rows = t.dim(-2);
  o.cols = t.dim(-1);
  o.batch.assign(t.shape(), t.shape() + t.ndim() - 2);
  return o;
}

// The geometry of a batched product out[..., M, N] = op(x)[..., M, K] op(y)[..., K, N], with
// the batch dims of x and y broadcast (NumPy rules); decided in prepare. A 1-D x or y is a
// vector (matmul_operand), whose dim M or N out lacks, as in numpy.matmul.
struct Batched {
  bool tx = false, ty = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t batches = 1;  // products to make: the output's batches, 0 when its matrices are empty
  std::vector<int64_t> x_batch, y_batch;  // per output batch: index of the x / y matrix

  Batched(const Tensor& x, const Tensor& y, const Tensor& out, bool tx_, bool ty_) {
    const MatmulOperand a = matmul_operand(x, true, "x"), b = matmul_operand(y, false, "y");
    tx = tx_ && !a.vector;
    ty = ty_ && !b.vector;
    M = tx ? a.cols : a.rows;
    K = tx ? a.rows : a.cols;
    N = ty ? b.rows : b.cols;
    if ((ty ? b.cols : b.rows) != K)
      fail("inner dimensions differ: x %s, y %s (transpose_x=%d, transpose_y=%d)",
           x.describe().c_str(), y.describe().c_str(), tx_, ty_);
    // Batch broadcasting: the output's batch dims, then each output batch's x and y matrix.
    const size_t bd = std::max(a.batch.size(), b.batch.size());
    const size_t xl = bd - a.batch.size(), yl = bd - b.batch.size();  // missing leading dims
    std::vector<int64_t> dims(bd);
    for (size_t k = 0; k < bd; ++k) {
      const int64_t dx = k < xl ? 1 : a.batch[k - xl], dy = k < yl ? 1 : b.batch[k - yl];
      if (dx != dy && dx != 1 && dy != 1)
        fail("batch dims of x %s and y %s do not broadcast", x.describe().c_str(),
             y.describe().c_str());
      batches *= dims[k] = dx == 1 ? dy : dx;
    }
    std::vector<int64_t> want = dims;
    if (!a.vector) want.push_back(M);
    if (!b.vector) want.push_back(N);
    if (want != std::vector<int64_t>(out.shape(), out.shape() + out.ndim()))
      fail("out has the wrong shape %s for x %s and y %s", out.describe().c_str(),
           x.describe().c_str(), y.describe().c_str());
    blas_sizes(M, N, K);
    // Products of no element (M or N is 0) contribute nothing: out is empty, the gradients are
    // empty or zeros. None is made, however many batches there are (x [2^31 - 1, 0, 3]).
    if (M == 0 || N == 0) batches = 0;
    x_batch.resize(batches);
    y_batch.resize(batches);
    std::vector<int64_t> idx(bd, 0);
    for (int64_t n = 0; n < batches; ++n) {
      int64_t xi = 0, yi = 0;
      for (size_t k = 0; k < bd; ++k) {
        if (k >= xl) xi = xi * a.batch[k - xl] + (a.batch[k - xl] == 1 ? 0 : idx[k]);
        if (k >= yl) yi = yi * b.batch[k - yl] + (b.batch[k - yl] == 1 ? 0 : idx[k]);
      }
      x_batch[n] = xi;
      y_batch[n] = yi;
      for (size_t k = bd; k-- > 0;) {
        if (++idx[k] < dims[k]) break;
        idx[k] = 0;
      }
    }
    fold_batches();
  }

  // Whether each batch has a matrix of its own in an operand indexed by `index` (x_batch,
  // y_batch): then its gradient's matrices are each written by one product.
  bool owns(const std::vector<int64_t>& index) const {
    if (batches == 0) return false;  // no product writes it: zeros
    for (int64_t n = 0; n < batches; ++n)
      if (index[n] != n) return false;
    return true;
  }

 private:
  // x's matrices, one per batch, against a single y (a Linear's [B, T, in] by its weight):
  // their rows follow one another in x and in out, so they are one product of B * M rows.
  // One GEMM instead of B packs the weight once and threads over all the rows.
  void fold_batches() {
    if (batches < 2 || tx || M > INT_MAX / batches) return;
    for (int64_t n = 0; n < batches; ++n)
      if (x_batch[n] != n || y_batch[n] != 0) return;
    M *= batches;
    batches = 1;
    x_batch.assign(1, 0);
    y_batch.assign(1, 0);
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
    blas_sizes(M, N, K);
  }
};

// The checks of each kernel's prepare; they return the geometry.
inline Batched check_matmul(const Attrs& attrs, const Slots& in, const Slots& out) {
  paddle_core::expect_same_dtype(in(0), in(1), "x and y");
  out(0).expect_dtype(in(0).dtype(), "out");
  Batched g(in(0), in(1), out(0), attrs.b("transpose_x"), attrs.b("transpose_y"));
  if (in.has(2)) {  // bias [N], added to every row of out
    const Tensor& b = in(2);
    b.expect_dtype(in(0).dtype(), "bias");
    if (in(1).ndim() < 2)
      fail("bias needs y as matrices (out's last dimension), but y is %s",
           in(1).describe().c_str());
    if (b.ndim() != 1 || b.dim(0) != g.N)
      fail("bias must be [%lld] (out's last dimension), got %s", (long long)g.N,
           b.describe().c_str());
  }
  return g;
}

// The grads' outputs: x_grad and y_grad, either may be absent; the accumulators x_grad_acc
// and y_grad_acc (inputs 3 and 4), where given, are shaped like the gradient they add to.
inline void check_grad_outputs(const Slots& in, const Slots& out) {
  paddle_core::expect_same_dtype(in(0), in(1), "x and y");
  paddle_core::expect_same_dtype(in(0), in(2), "x and out_grad");
  if (out.has(0)) paddle_core::expect_same_shape(out(0), in(0), "x_grad and x");
  if (out.has(1)) paddle_core::expect_same_shape(out(1), in(1), "y_grad and y");
  const char* names[2][2] = {{"x_grad_acc", "x_grad_acc and x"},
                             {"y_grad_acc", "y_grad_acc and y"}};
  for (int32_t k = 0; k < 2; ++k) {
    if (!in.has(3 + k)) continue;
    if (!out.has(k)) fail("%s is given but %s is not", names[k][0], k ? "y_grad" : "x_grad");
    in(3 + k).expect_dtype(in(0).dtype(), names[k][0]);
    paddle_core::expect_same_shape(in(3 + k), in(k), names[k][1]);
  }
}

// Start gradient `grad` (elements of T): the accumulator `acc` it adds to where given (a copy
// unless the planner gave them one buffer), else zeros when `zero`. Returns the GEMMs' beta.
template <class T>
T start_grad(const Slots& in, int32_t acc, const paddle_core::Tensor& grad, bool zero) {
  T* g = grad.data<T>();
  if (in.has(acc)) {
    const T* a = in(acc).data<T>();
    if (a != g) std::copy(a, a + grad.numel(), g);
    return T(1);
  }
  if (zero) std::fill(g, g + grad.numel(), T(0));
  return T(zero ? 1 : 0);
}

inline Batched check_matmul_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  check_grad_outputs(in, out);
  return Batched(in(0), in(1), in(2), attrs.b("transpose_x"), attrs.b("transpose_y"));
}

inline Flat check_matmul_2d(const Attrs& attrs, const Slots& in, const Slots& out) {
  paddle_core::expect_same_dtype(in(0), in(1), "x and y");
  out(0).expect_dtype(in(0).dtype(), "out");
  Flat flat(in(0), in(1), attrs.i("x_num_col_dims"), attrs.i("y_num_col_dims"));
  if (out(0).numel() != flat.M * flat.N) fail("out has the wrong size");
  return flat;
}

inline Flat check_matmul_2d_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  check_grad_outputs(in, out);
  Flat flat(in(0), in(1), attrs.i("x_num_col_dims"), attrs.i("y_num_col_dims"));
  if (in(2).numel() != flat.M * flat.N)
    fail("out_grad %s does not hold the product's %lld x %lld elements",
         in(2).describe().c_str(), static_cast<long long>(flat.M), static_cast<long long>(flat.N));
  return flat;
}

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_MATMUL_HPP_
