// Helpers shared by the CPU kernels of paddle-ops-math: dtype dispatch, parallel loops,
// broadcasting. Kernel files include this and the SDK's kernel.hpp only.
#ifndef PADDLE_OPS_MATH_COMMON_HPP_
#define PADDLE_OPS_MATH_COMMON_HPP_

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <paddle_core/kernel.hpp>

namespace pom {

namespace pc = paddle_core;
using pc::Attrs;
using pc::Context;
using pc::fail;
using pc::Slots;
using pc::Tensor;

// -- dtype dispatch ----------------------------------------------------------------------------

template <class... Ts> struct Types {};
using Floats = Types<float, double>;
using Numbers = Types<float, double, int32_t, int64_t>;
using Ints = Types<int32_t, int64_t>;

// Call f(T{}) for the type T in the list whose dtype is `dtype`; fail for any other dtype.
template <class F, class T, class... Ts>
auto dispatch(int32_t dtype, Types<T, Ts...>, F&& f) -> decltype(f(T{})) {
  if (dtype == pc::DType<T>::value) return f(T{});
  if constexpr (sizeof...(Ts) > 0) {
    return dispatch(dtype, Types<Ts...>{}, std::forward<F>(f));
  } else {
    fail("dtype %s is not supported by this kernel", pc::dtype_name(dtype));
  }
}

// -- checks --------------------------------------------------------------------------------

inline void expect_same_dtype(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != b.dtype())
    fail("%s: dtypes differ: %s vs %s", what, a.describe().c_str(), b.describe().c_str());
}

inline void expect_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  if (!a.same_shape(b))
    fail("%s: shapes differ: %s vs %s", what, a.describe().c_str(), b.describe().c_str());
}

// -- parallel loops ----------------------------------------------------------------------------

// Below this many elements per thread, splitting a memory-bound loop costs more than it saves.
constexpr int64_t kGrain = 1 << 15;

// Run f(begin, end) over [0, n) split into contiguous chunks across up to `threads` OpenMP
// threads (inline when the work is too small to split). Chunk bounds are multiples of 16
// elements so threads never share a cache line of the output.
template <class F> void parallel_for(int64_t n, int32_t threads, int64_t grain, F&& f) {
  int64_t chunks = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16;
    int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
    if (begin < end) f(begin, end);
  }
}

// -- broadcasting ------------------------------------------------------------------------------

// How two inputs broadcast to an output, decided once at prepare time. Dimensions where
// all three agree on contiguity are merged, so most cases become a single flat loop.
struct Broadcast {
  enum Kind { kSame, kScalarA, kScalarB, kGeneral } kind = kSame;
  int64_t numel = 0;
  // kGeneral only: merged output dims (outermost first) and per-input strides (0: broadcast).
  std::vector<int64_t> dims, stride_a, stride_b;
};

inline Broadcast plan_broadcast(const Tensor& a, const Tensor& b, const Tensor& out) {
  Broadcast p;
  p.numel = out.numel();
  const int32_t nd = out.ndim();
  if (a.ndim() > nd || b.ndim() > nd) fail("inputs have more dimensions than the output");
  // Right-aligned input extents (1 for missing leading dims) and element strides.
  std::vector<int64_t> ea(nd, 1), eb(nd, 1), sa(nd, 0), sb(nd, 0);
  for (int32_t k = 0; k < a.ndim(); ++k) ea[nd - a.ndim() + k] = a.dim(k);
  for (int32_t k = 0; k < b.ndim(); ++k) eb[nd - b.ndim() + k] = b.dim(k);
  int64_t ra = 1, rb = 1;
  for (int32_t k = nd - 1; k >= 0; --k) {
    int64_t o = out.dim(k);
    if ((ea[k] != o && ea[k] != 1) || (eb[k] != o && eb[k] != 1))
      fail("shapes %s and %s do not broadcast to %s", a.describe().c_str(),
           b.describe().c_str(), out.describe().c_str());
    sa[k] = ea[k] == 1 ? 0 : ra;
    sb[k] = eb[k] == 1 ? 0 : rb;
    ra *= ea[k];
    rb *= eb[k];
  }
  if (p.numel == 0) return p;  // nothing to compute (and no extent to divide by below)
  if (a.numel() == p.numel && b.numel() == p.numel) return p;  // same shape
  if (a.numel() == 1) return p.kind = Broadcast::kScalarA, p;
  if (b.numel() == 1) return p.kind = Broadcast::kScalarB, p;
  p.kind = Broadcast::kGeneral;
  // Merge adjacent dims whose strides compose (innermost first), dropping size-1 dims.
  for (int32_t k = nd - 1; k >= 0; --k) {
    int64_t o = out.dim(k);
    if (o == 1) continue;
    if (!p.dims.empty() && p.stride_a.back() * p.dims.back() == sa[k] &&
        p.stride_b.back() * p.dims.back() == sb[k] &&
        ((sa[k] == 0) == (p.stride_a.back() == 0)) && ((sb[k] == 0) == (p.stride_b.back() == 0))) {
      p.dims.back() *= o;
      continue;
    }
    p.dims.push_back(o);
    p.stride_a.push_back(sa[k]);
    p.stride_b.push_back(sb[k]);
  }
  std::reverse(p.dims.begin(), p.dims.end());
  std::reverse(p.stride_a.begin(), p.stride_a.end());
  std::reverse(p.stride_b.begin(), p.stride_b.end());
  return p;
}

// out[i] = f(a[i'], b[i'']) over the broadcast, split across threads.
template <class T, class R, class F>
void apply_binary(const Broadcast& p, const T* a, const T* b, R* out, int32_t threads, F f) {
  switch (p.kind) {
    case Broadcast::kSame:
      parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) out[i] = f(a[i], b[i]);
      });
      return;
    case Broadcast::kScalarA: {
      const T s = a[0];
      parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) out[i] = f(s, b[i]);
      });
      return;
    }
    case Broadcast::kScalarB: {
      const T s = b[0];
      parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) out[i] = f(a[i], s);
      });
      return;
    }
    case Broadcast::kGeneral:
      break;
  }
  // General: loop the innermost merged dim, walk the outer ones with an index counter.
  const int32_t nd = static_cast<int32_t>(p.dims.size());
  const int64_t inner = p.dims[nd - 1], ia = p.stride_a[nd - 1], ib = p.stride_b[nd - 1];
  const int64_t rows = p.numel / inner;
  parallel_for(rows, threads, std::max<int64_t>(1, kGrain / inner), [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> idx(nd, 0);  // outer coordinates of the current row
    int64_t oa = 0, ob = 0;             // input offsets of the current row
    int64_t rem = lo;
    for (int32_t k = nd - 2; k >= 0; --k) {
      idx[k] = rem % p.dims[k];
      rem /= p.dims[k];
      oa += idx[k] * p.stride_a[k];
      ob += idx[k] * p.stride_b[k];
    }
    for (int64_t r = lo; r < hi; ++r) {
      const T* ra = a + oa;
      const T* rb = b + ob;
      R* ro = out + r * inner;
      if (ia == 1 && ib == 1) {
        for (int64_t i = 0; i < inner; ++i) ro[i] = f(ra[i], rb[i]);
      } else if (ia == 0) {
        for (int64_t i = 0; i < inner; ++i) ro[i] = f(ra[0], rb[i * ib]);
      } else {
        for (int64_t i = 0; i < inner; ++i) ro[i] = f(ra[i * ia], rb[i * ib]);
      }
      for (int32_t k = nd - 2; k >= 0; --k) {  // advance the row index
        oa += p.stride_a[k];
        ob += p.stride_b[k];
        if (++idx[k] < p.dims[k]) break;
        oa -= p.stride_a[k] * p.dims[k];
        ob -= p.stride_b[k] * p.dims[k];
        idx[k] = 0;
      }
    }
  });
}

}  // namespace pom

#endif  // PADDLE_OPS_MATH_COMMON_HPP_
