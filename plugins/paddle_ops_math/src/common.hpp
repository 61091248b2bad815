// Helpers shared by the CPU kernels of paddle-ops-math: defined arithmetic, broadcasting, row
// functions. Dtype dispatch, the common checks (paddle_core/kernel.hpp) and parallel loops
// (paddle_core/parallel.hpp) are the SDK's, used here unqualified. Kernel files include the
// plugin's headers and the SDK only.
#ifndef PADDLE_OPS_MATH_COMMON_HPP_
#define PADDLE_OPS_MATH_COMMON_HPP_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <paddle_core/kernel.hpp>
#include <paddle_core/parallel.hpp>

#include "elementwise.hpp"
#include "functors.hpp"
#include "half.hpp"

namespace paddle_ops_math {

namespace pc = paddle_core;
using pc::AllFloats;
using pc::AllInts;
using pc::AllNumbers;
using pc::Attrs;
using pc::bfloat16;
using pc::compute_t;
using pc::Context;
using pc::dispatch;
using pc::expect_same_dtype;
using pc::expect_same_shape;
using pc::fail;
using pc::float16;
using pc::Floats;
using pc::Ints;
using pc::is_half_float_v;
using pc::Join;
using pc::kGrain;
using pc::Numbers;
using pc::parallel_chunks;
using pc::parallel_for;
using pc::parallel_rows;
using pc::Slots;
using pc::Tensor;
using pc::Types;

// Arithmetic with defined results (Modular, convert_to) is functors.hpp's, broadcasting
// (plan_broadcast) elementwise.hpp's.

// Whether kernels run their AVX2+FMA loops (the *_avx2.cpp files): the CPU has both, and
// PADDLE_OPS_MATH_DISABLE_AVX2 is unset or 0. It reads the environment: kernels ask when
// prepared and keep the answer.
bool use_avx2();

// Sum `full` (shape `out`) down to the shape of `target` (right-aligned broadcast), a row of
// out's last dimension at a time: added into dst where target keeps that dimension, summed into
// one element where it does not, so the inner loops are contiguous (a bias's gradient, [512,
// 1000] to [1000], walked element by element took as long as the GEMM beside it).
template <class T>
void reduce_to(const T* full, const Tensor& out, T* dst, const Tensor& target) {
  const int64_t n = out.numel(), m = target.numel();
  if (n == m) {
    std::copy(full, full + n, dst);
    return;
  }
  std::fill(dst, dst + m, T(0));
  if (n == 0) return;
  const int32_t nd = out.ndim(), td = target.ndim();
  std::vector<int64_t> stride(nd, 0);  // element stride in dst for each output dim
  int64_t s = 1;
  for (int32_t k = nd - 1; k >= 0; --k) {
    int32_t tk = k - (nd - td);
    if (tk >= 0 && target.dim(tk) != 1) {  // kept dim; broadcast and missing dims stay 0
      stride[k] = s;
      s *= target.dim(tk);
    }
  }
  const int64_t inner = out.dim(nd - 1);
  const bool kept = stride[nd - 1] != 0;
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t row = 0; row < n / inner; ++row) {
    const T* src = full + row * inner;
    if (kept) {
      for (int64_t j = 0; j < inner; ++j) dst[off + j] += src[j];
    } else {
      T sum = T(0);
      for (int64_t j = 0; j < inner; ++j) sum += src[j];
      dst[off] += sum;
    }
    for (int32_t k = nd - 2; k >= 0; --k) {
      off += stride[k];
      if (++idx[k] < out.dim(k)) break;
      off -= stride[k] * out.dim(k);
      idx[k] = 0;
    }
  }
}

// -- elementwise loops -------------------------------------------------------------------------
//
// Only the innermost loop depends on the op and the dtype: it is a "row function", one small
// template per (op, dtype). The iteration around it (thread split, scalar broadcasts, walking
// merged dimensions) is compiled once, in broadcast_cpu.cpp, and calls the row function per
// row. This keeps kernel files quick to compile: no OpenMP region or loop nest per op.

// out[i] = f(a[i * sa], b[i * sb]) for i in [0, n); a stride is 0 (broadcast) or 1 in practice.
using RowFn = void (*)(const void* a, int64_t sa, const void* b, int64_t sb, void* out, int64_t n);

// out[i] = f(x[i], y[i], g[i]) for i in [0, n) (gradient formulas).
using Row3Fn = void (*)(const void* x, const void* y, const void* g, void* out, int64_t n);

// Run `row` over broadcast `p`; `*_size` are element sizes in bytes.
void run_broadcast(const Broadcast& p, const void* a, int a_size, const void* b, int b_size,
                   void* out, int out_size, RowFn row, int32_t threads);

// Run `row` over n elements of same-shaped x, y, g and out, all of element size `size`.
void run_elementwise3(int64_t n, const void* x, const void* y, const void* g, void* out,
                      int size, Row3Fn row, int32_t threads);

// x[i * stride] for i in [0, n) as float32 in buf, returned with its stride there: 0 (a
// broadcast scalar, buf[0] only) or 1.
template <class T> int64_t widen_row(const T* x, int64_t stride, int64_t n, float* buf) {
  if (stride == 0) {
    buf[0] = x[0];
    return 0;
  }
  if (stride == 1) {
    widen(x, buf, n);
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = x[i * stride];
  }
  return 1;
}

template <class A, class B, class R, class F>
void binary_row(const void* av, int64_t sa, const void* bv, int64_t sb, void* ov, int64_t n);

// binary_row of float16 or bfloat16 inputs A: chunks widened to float32, F computed there, and
// the results rounded to R = A (or written as they are: a comparison's bool).
template <class A, class R, class F>
void half_binary_row(const A* a, int64_t sa, const A* b, int64_t sb, R* out, int64_t n) {
  float x[kHalfChunk], y[kHalfChunk], z[kHalfChunk];
  for (int64_t i = 0; i < n; i += kHalfChunk) {
    const int64_t m = std::min(kHalfChunk, n - i);
    const int64_t xs = widen_row(a + i * sa, sa, m, x), ys = widen_row(b + i * sb, sb, m, y);
    if constexpr (std::is_same_v<R, A>) {
      binary_row<float, float, float, F>(x, xs, y, ys, z, m);
      narrow(z, out + i, m);
    } else {
      binary_row<float, float, R, F>(x, xs, y, ys, out + i, m);
    }
  }
}

// The row function of functor F; A and B are the input element types, R the output's.
template <class A, class B, class R, class F>
void binary_row(const void* av, int64_t sa, const void* bv, int64_t sb, void* ov, int64_t n) {
  if constexpr (is_half_float_v<A>) {
    static_assert(std::is_same_v<A, B>, "16-bit float rows take one dtype");
    half_binary_row<A, R, F>(static_cast<const A*>(av), sa, static_cast<const A*>(bv), sb,
                             static_cast<R*>(ov), n);
  } else {
    const A* a = static_cast<const A*>(av);
    const B* b = static_cast<const B*>(bv);
    R* out = static_cast<R*>(ov);
    const F f{};
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
    } else if (sa == 0 && sb == 1) {
      const A s = a[0];
      for (int64_t i = 0; i < n; ++i) out[i] = f(s, b[i]);
    } else if (sa == 1 && sb == 0) {
      const B s = b[0];
      for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], s);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * sa], b[i * sb]);
    }
  }
}

template <class T, class G>
void ternary_row(const void* xv, const void* yv, const void* gv, void* ov, int64_t n) {
  const T* x = static_cast<const T*>(xv);
  const T* y = static_cast<const T*>(yv);
  const T* g = static_cast<const T*>(gv);
  T* out = static_cast<T*>(ov);
  const G f{};
  for (int64_t i = 0; i < n; ++i) out[i] = f(x[i], y[i], g[i]);
}

// f(a, b) = a: with run_broadcast, copies `a` broadcast to the shape of `b`.
struct First {
  template <class T> T operator()(T a, T) const { return a; }
};

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_COMMON_HPP_
