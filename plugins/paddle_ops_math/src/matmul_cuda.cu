// CUDA kernels of matmul and matmul_2d and their gradients, through cuBLAS (loaded at run
// time: cublas.hpp). Same geometry and checks (matmul.hpp) and dtypes as matmul_cpu.cpp.
//
// Memory contract: all tensors C-contiguous CUDA buffers, shapes checked in prepare. Matrix
// dimensions and the batch count must fit cuBLAS's 32-bit integers. float32 is computed in
// float32 (CUBLAS_COMPUTE_32F, no TF32), float64 in float64, float16 and bfloat16 on tensor
// cores accumulating in float32 (CUBLAS_COMPUTE_32F), as the CPU's sgemm on float32 copies.
#include <climits>
#include <type_traits>

#include "cublas.hpp"
#include "cuda.cuh"
#include "matmul.hpp"

namespace paddle_ops_math {
namespace {

// How cuBLAS holds a dtype; alpha and beta are float for float32 compute, double for float64.
struct Precision {
  cudaDataType data;
  cublasComputeType_t compute;
  int64_t size;
};

// The dtypes cuBLAS multiplies here: every kernel's DTypes.
using GemmTypes = pc::AllFloats;

Precision precision_of(int32_t dtype) {
  return pc::dispatch(dtype, GemmTypes{}, [](auto t) -> Precision {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, double>) {
      return {CUDA_R_64F, CUBLAS_COMPUTE_64F, 8};
    } else if constexpr (std::is_same_v<T, pc::float16>) {
      return {CUDA_R_16F, CUBLAS_COMPUTE_32F, 2};
    } else if constexpr (std::is_same_v<T, pc::bfloat16>) {
      return {CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2};
    } else {
      return {CUDA_R_32F, CUBLAS_COMPUTE_32F, 4};
    }
  });
}

// One row-major product, or `batches` of them at fixed element strides:
// C[M,N] = op(A)[M,K] op(B)[K,N] (+ C when accumulate), ld* = row lengths as stored.
// cuBLAS is column-major, so it computes C^T = op(B)^T op(A)^T: the operands swap.
struct Gemm {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* B = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* C = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batches = 1;
  bool accumulate = false;
};

void gemm(const Gemm& g, const Precision& p, cudaStream_t stream) {
  if (g.M == 0 || g.N == 0 || g.batches == 0) return;
  if (g.K == 0) {  // an empty sum: zeros (cuBLAS is not asked to handle k = 0)
    if (!g.accumulate) {
      for (int64_t b = 0; b < g.batches; ++b)
        zero_async(static_cast<char*>(g.C) + b * g.stride_c * p.size, g.M * g.N * p.size,
                   stream);
    }
    return;
  }
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const bool f64 = p.compute == CUBLAS_COMPUTE_64F;
  const void* alpha = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* beta = g.accumulate ? alpha : f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  const cublasOperation_t op_b = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(g.N), n = static_cast<int>(g.M), k = static_cast<int>(g.K);
  const int lda = static_cast<int>(std::max<int64_t>(g.lda, 1));
  const int ldb = static_cast<int>(std::max<int64_t>(g.ldb, 1));
  const int ldc = static_cast<int>(std::max<int64_t>(g.ldc, 1));
  const Cublas& api = cublas();
  cublasHandle_t handle = cublas_handle(stream);
  if (g.batches == 1) {
    check_cublas(api.gemm_ex(handle, op_b, op_a, m, n, k, alpha, g.B, p.data, ldb, g.A, p.data,
                             lda, beta, g.C, p.data, ldc, p.compute, CUBLAS_GEMM_DEFAULT),
                 "GemmEx");
  } else {
    check_cublas(api.gemm_strided_batched_ex(
                     handle, op_b, op_a, m, n, k, alpha, g.B, p.data, ldb, g.stride_b, g.A,
                     p.data, lda, g.stride_a, beta, g.C, p.data, ldc, g.stride_c,
                     static_cast<int>(g.batches), p.compute, CUBLAS_GEMM_DEFAULT),
                 "GemmStridedBatchedEx");
  }
}

// The element stride between the matrices of `index` (index[b] = matrix of batch b): `size`
// when each batch has its own, 0 when all share one; -1 when neither (a loop of calls).
int64_t regular_stride(const std::vector<int64_t>& index, int64_t size) {
  bool own = true, shared = true;
  for (size_t b = 0; b < index.size(); ++b) {
    own = own && index[b] == static_cast<int64_t>(b);
    shared = shared && index[b] == 0;
  }
  return own ? size : shared ? 0 : -1;
}

// Run g over `batches`, A and B picked per batch by a_index / b_index (strides sa, sb per
// index step), C per batch at stride sc: one strided-batched call when the picks are regular,
// one call per batch otherwise.
void batched_gemm(Gemm g, const std::vector<int64_t>& a_index, int64_t sa,
                  const std::vector<int64_t>& b_index, int64_t sb, int64_t sc,
                  const Precision& p, cudaStream_t stream) {
  const int64_t ra = regular_stride(a_index, sa), rb = regular_stride(b_index, sb);
  g.stride_c = sc;
  if (ra >= 0 && rb >= 0) {
    g.stride_a = ra;
    g.stride_b = rb;
    gemm(g, p, stream);
    return;
  }
  const Gemm all = g;
  g.batches = 1;
  for (size_t b = 0; b < a_index.size(); ++b) {
    g.A = static_cast<const char*>(all.A) + a_index[b] * sa * p.size;
    g.B = static_cast<const char*>(all.B) + b_index[b] * sb * p.size;
    g.C = static_cast<char*>(all.C) + static_cast<int64_t>(b) * sc * p.size;
    gemm(g, p, stream);
  }
}

// Prepare's checks beyond the CPU kernel's: cuBLAS is loaded (else a clear error naming what
// to install), the batch count fits an int, every tensor is on a CUDA device.
void expect_cublas_and_cuda(const Slots& in, const Slots& out, int64_t batches) {
  cublas();
  blas_int(batches, "the batch count");
  expect_cuda(in, out);
}

class MatmulCuda {
 public:
  static constexpr pc::Signature signature{"11?", "1"};
  using DTypes = GemmTypes;
  MatmulCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_matmul(attrs, in, out)), precision_(precision_of(in(0).dtype())) {
    // (the bias is a CPU plan's fusion: paddle-ops-math's matmul_bias pass)
    if (in.has(2)) fail("bias is computed by the CPU kernel only; add it with the add op");
    expect_cublas_and_cuda(in, out, geo_.batches);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Batched& g = geo_;
    Gemm call;
    call.ta = g.tx, call.tb = g.ty, call.M = g.M, call.N = g.N, call.K = g.K;
    call.A = in(0).data<void>(), call.lda = g.tx ? g.M : g.K;
    call.B = in(1).data<void>(), call.ldb = g.ty ? g.K : g.N;
    call.C = out(0).data<void>(), call.ldc = g.N;
    call.batches = g.batches;
    batched_gemm(call, g.x_batch, g.M * g.K, g.y_batch, g.K * g.N, g.M * g.N, precision_,
                 stream_of(ctx));
  }

 private:
  Batched geo_;
  Precision precision_;
};

// Broadcast batches accumulate into the operand's gradient, in batch order (deterministic).
// The accumulator input `slot` of a grad kernel (x_grad_acc, y_grad_acc), or nullptr.
const void* accumulator(const Slots& in, int32_t slot) {
  return in.has(slot) ? in(slot).data<void>() : nullptr;
}

// Start a gradient of `bytes` at `grad`: acc's copy where given (none when the planner gave
// them one buffer), else zeros when `zero`. Returns whether the products accumulate into it.
bool start_grad(void* grad, const void* acc, int64_t bytes, cudaStream_t stream, bool zero = true) {
  if (acc != nullptr) {
    if (acc != grad) copy_async(grad, acc, bytes, stream);
    return true;
  }
  if (zero) zero_async(grad, bytes, stream);
  return zero;
}

class MatmulGradCuda {
 public:
  static constexpr pc::Signature signature{"111??", "??"};
  using DTypes = GemmTypes;
  MatmulGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_matmul_grad(attrs, in, out)), precision_(precision_of(in(0).dtype())) {
    expect_cublas_and_cuda(in, out, geo_.batches);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Batched& g = geo_;
    const cudaStream_t stream = stream_of(ctx);
    const void *x = in(0).data<void>(), *y = in(1).data<void>(), *d = in(2).data<void>();
    const int64_t xs = g.M * g.K, ys = g.K * g.N, os = g.M * g.N;
    const int64_t ldx = g.tx ? g.M : g.K, ldy = g.ty ? g.K : g.N;
    std::vector<int64_t> own(static_cast<size_t>(g.batches));
    for (int64_t b = 0; b < g.batches; ++b) own[b] = b;
    if (out.has(0)) {
      Gemm call;
      if (!g.tx) {  // dx[M,K] = d[M,N] op(y)^T
        call.ta = false, call.tb = !g.ty, call.M = g.M, call.N = g.K, call.K = g.N;
        call.A = d, call.lda = g.N, call.B = y, call.ldb = ldy, call.ldc = g.K;
      } else {  // dx[K,M] = op(y)[K,N] d^T
        call.ta = g.ty, call.tb = true, call.M = g.K, call.N = g.M, call.K = g.N;
        call.A = y, call.lda = ldy, call.B = d, call.ldb = g.N, call.ldc = g.M;
      }
      run_grad(call, out(0), accumulator(in, 3), g.x_batch, xs, !g.tx ? own : g.y_batch,
               !g.tx ? os : ys, !g.tx ? g.y_batch : own, !g.tx ? ys : os, stream);
    }
    if (out.has(1)) {
      Gemm call;
      if (!g.ty) {  // dy[K,N] = op(x)^T d
        call.ta = !g.tx, call.tb = false, call.M = g.K, call.N = g.N, call.K = g.M;
        call.A = x, call.lda = ldx, call.B = d, call.ldb = g.N, call.ldc = g.N;
      } else {  // dy[N,K] = d^T op(x)
        call.ta = true, call.tb = g.tx, call.M = g.N, call.N = g.K, call.K = g.M;
        call.A = d, call.lda = g.N, call.B = x, call.ldb = ldx, call.ldc = g.K;
      }
      run_grad(call, out(1), accumulator(in, 4), g.y_batch, ys, !g.ty ? g.x_batch : own,
               !g.ty ? xs : os, !g.ty ? own : g.x_batch, !g.ty ? os : xs, stream);
    }
  }

 private:
  // The gradient `target` of an operand whose matrix for batch b is target_index[b]: one
  // product per batch into it. When each batch has its own matrix and there is no
  // accumulator `acc`, the products write it (one batched call); otherwise it starts as zeros
  // or as acc, and they accumulate, one call at a time.
  void run_grad(Gemm call, const Tensor& target, const void* acc,
                const std::vector<int64_t>& target_index, int64_t target_size,
                const std::vector<int64_t>& a_index, int64_t sa,
                const std::vector<int64_t>& b_index, int64_t sb, cudaStream_t stream) const {
    call.C = target.data<void>();
    call.batches = geo_.batches;
    if (acc == nullptr && regular_stride(target_index, target_size) == target_size &&
        geo_.batches * target_size == target.numel()) {
      batched_gemm(call, a_index, sa, b_index, sb, target_size, precision_, stream);
      return;
    }
    start_grad(call.C, acc, target.numel() * precision_.size, stream);
    call.accumulate = true;
    call.batches = 1;
    const Gemm all = call;
    for (int64_t b = 0; b < geo_.batches; ++b) {
      call.A = static_cast<const char*>(all.A) + a_index[b] * sa * precision_.size;
      call.B = static_cast<const char*>(all.B) + b_index[b] * sb * precision_.size;
      call.C = static_cast<char*>(all.C) + target_index[b] * target_size * precision_.size;
      gemm(call, precision_, stream);
    }
  }

  Batched geo_;
  Precision precision_;
};

class Matmul2DCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = GemmTypes;
  Matmul2DCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : flat_(check_matmul_2d(attrs, in, out)), precision_(precision_of(in(0).dtype())) {
    expect_cublas_and_cuda(in, out, 1);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    Gemm call;
    call.M = flat_.M, call.N = flat_.N, call.K = flat_.K;
    call.A = in(0).data<void>(), call.lda = flat_.K;
    call.B = in(1).data<void>(), call.ldb = flat_.N;
    call.C = out(0).data<void>(), call.ldc = flat_.N;
    gemm(call, precision_, stream_of(ctx));
  }

 private:
  Flat flat_;
  Precision precision_;
};

class Matmul2DGradCuda {
 public:
  static constexpr pc::Signature signature{"111??", "??"};
  using DTypes = GemmTypes;
  Matmul2DGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : flat_(check_matmul_2d_grad(attrs, in, out)),
        precision_(precision_of(in(0).dtype())) {
    expect_cublas_and_cuda(in, out, 1);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Flat& f = flat_;
    const void* d = in(2).data<void>();
    const cudaStream_t stream = stream_of(ctx);
    if (out.has(0)) {  // dx[M,K] (+)= d[M,N] y^T
      Gemm call;
      call.tb = true, call.M = f.M, call.N = f.K, call.K = f.N;
      call.A = d, call.lda = f.N, call.B = in(1).data<void>(), call.ldb = f.N;
      call.C = out(0).data<void>(), call.ldc = f.K;
      call.accumulate =
          start_grad(call.C, accumulator(in, 3), out(0).numel() * precision_.size, stream, false);
      gemm(call, precision_, stream);
    }
    if (out.has(1)) {  // dy[K,N] (+)= x^T d
      Gemm call;
      call.ta = true, call.M = f.K, call.N = f.N, call.K = f.M;
      call.A = in(0).data<void>(), call.lda = f.K, call.B = d, call.ldb = f.N;
      call.C = out(1).data<void>(), call.ldc = f.N;
      call.accumulate =
          start_grad(call.C, accumulator(in, 4), out(1).numel() * precision_.size, stream, false);
      gemm(call, precision_, stream);
    }
  }

 private:
  Flat flat_;
  Precision precision_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<MatmulCuda>("matmul_cuda"),
    pc::kernel<MatmulGradCuda>("matmul_grad_cuda"),
    pc::kernel<Matmul2DCuda>("matmul_2d_cuda"),
    pc::kernel<Matmul2DGradCuda>("matmul_2d_grad_cuda"));

}  // namespace paddle_ops_math
