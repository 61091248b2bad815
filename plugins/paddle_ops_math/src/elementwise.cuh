// The CUDA kernel templates of the elementwise families (binary_cuda.cu, compare_cuda.cu,
// unary_cuda.cu, unary_grad_cuda.cu, fill_cuda.cu): out = F(x, y) with NumPy broadcasting,
// out = F(x), and out = F(a, b) on same-shaped inputs, F from functors.hpp.
//
// Memory contract: as the CPU kernels' (C-contiguous, out has the broadcast shape), all on the
// CUDA device of the plan's stream. float16 and bfloat16 elements are loaded as float32
// (compute_t), the functor computes there, and the result is rounded once when stored.
// Prepare runs the CPU kernel's checks (elementwise.hpp), so both devices accept the same
// tensors, then the CUDA ones (how many dims a broadcast may need, tensors on a CUDA device).
#ifndef PADDLE_OPS_MATH_ELEMENTWISE_CUH_
#define PADDLE_OPS_MATH_ELEMENTWISE_CUH_

#include <type_traits>

#include "cuda.cuh"
#include "elementwise.hpp"
#include "functors.hpp"

namespace paddle_ops_math {

using pc::AllFloats;
using pc::AllNumbers;
using pc::Attrs;
using pc::compute_t;
using pc::dispatch;
using pc::Floats;
using pc::Numbers;

// -- binary ------------------------------------------------------------------------------------

// A broadcast as the GPU walks it, passed to the kernel by value: merged output dims
// (outermost first) and per-input element strides (0: broadcast). Same-shape and scalar cases
// are one dim.
struct Strides {
  static constexpr int kMaxDims = 8;
  int32_t ndim = 0;
  int64_t dims[kMaxDims] = {}, a[kMaxDims] = {}, b[kMaxDims] = {};
};

inline Strides strides_of(const Broadcast& p) {
  Strides s;
  if (p.kind != Broadcast::kGeneral) {
    s.ndim = 1;
    s.dims[0] = p.numel;
    s.a[0] = p.kind == Broadcast::kScalarA ? 0 : 1;
    s.b[0] = p.kind == Broadcast::kScalarB ? 0 : 1;
    return s;
  }
  const int ndim = static_cast<int>(p.dims.size());
  if (ndim > Strides::kMaxDims)
    fail("this broadcast needs %d dimensions after merging; the CUDA kernel walks at most %d",
         ndim, Strides::kMaxDims);
  s.ndim = ndim;
  for (int k = 0; k < ndim; ++k) {
    s.dims[k] = p.dims[k];
    s.a[k] = p.stride_a[k];
    s.b[k] = p.stride_b[k];
  }
  return s;
}

template <class F, class T, class R>
__global__ void binary_kernel(const T* a, const T* b, R* out, int64_t n, Strides s) {
  const F f{};
  for (int64_t i = first_index(); i < n; i += index_step()) {
    int64_t ia = i * s.a[0], ib = i * s.b[0];  // one dim: no division
    if (s.ndim > 1) {
      ia = ib = 0;
      for (int64_t k = s.ndim - 1, rest = i; k >= 0; --k) {
        const int64_t q = rest / s.dims[k], j = rest - q * s.dims[k];
        ia += j * s.a[k];
        ib += j * s.b[k];
        rest = q;
      }
    }
    using C = compute_t<T>;
    out[i] = static_cast<R>(f(static_cast<C>(a[ia]), static_cast<C>(b[ib])));
  }
}

// out = F(x, y), broadcasting. R is the output element type: T itself, or uint8_t (bool) for
// comparisons (Bool = true).
template <class F, class TypeList, bool Bool = false> class BinaryCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = TypeList;
  BinaryCuda(const Attrs&, const Slots& in, const Slots& out) {
    const Broadcast plan = check_binary(in, out, Bool);
    numel_ = plan.numel;
    strides_ = strides_of(plan);
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), TypeList{}, [](auto t) -> Launch {
      using T = decltype(t);
      return &launch<T, std::conditional_t<Bool, uint8_t, T>>;
    });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(0).data<void>(), in(1).data<void>(), out(0).data<void>(), numel_, strides_,
            stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, void*, int64_t, const Strides&,
                          cudaStream_t);
  template <class T, class R>
  static void launch(const void* a, const void* b, void* out, int64_t n, const Strides& s,
                     cudaStream_t stream) {
    const Grid g = grid_for(n);
    binary_kernel<F, T, R><<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<R*>(out), n, s);
  }

  int64_t numel_ = 0;
  Strides strides_;
  Launch launch_ = nullptr;
};

// -- unary -------------------------------------------------------------------------------------

// out[i] = f(x[i]); f is passed by value (functors with parameters: ScaleBy).
template <class F, class S, class D>
__global__ void map_kernel(const S* x, D* out, int64_t n, F f) {
  for (int64_t i = first_index(); i < n; i += index_step())
    out[i] = static_cast<D>(f(static_cast<compute_t<S>>(x[i])));
}

// out[i] = f(a[i], b[i]) on same-shaped inputs (gradient formulas); f passed by value.
template <class F, class T>
__global__ void zip_kernel(const T* a, const T* b, T* out, int64_t n, F f) {
  for (int64_t i = first_index(); i < n; i += index_step())
    out[i] = static_cast<T>(f(compute_t<T>(a[i]), compute_t<T>(b[i])));
}

// out = F(x) for the dtypes in TypeList: of x's dtype, or bool for predicates (Bool = true:
// isnan, logical_not).
template <class F, class TypeList, bool Bool = false> class UnaryCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = TypeList;
  UnaryCuda(const Attrs&, const Slots& in, const Slots& out) {
    if constexpr (Bool)
      check_predicate(in, out);
    else
      check_unary(in, out);
    expect_cuda(in, out);
    numel_ = in(0).numel();
    launch_ = dispatch(in(0).dtype(), TypeList{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), numel_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, cudaStream_t);
  template <class T>
  static void launch(const void* x, void* out, int64_t n, cudaStream_t stream) {
    const Grid g = grid_for(n);
    using R = std::conditional_t<Bool, bool, T>;
    map_kernel<<<g.blocks, g.threads, 0, stream>>>(static_cast<const T*>(x),
                                                   static_cast<R*>(out), n, F{});
  }

  int64_t numel_ = 0;
  Launch launch_ = nullptr;
};

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_ELEMENTWISE_CUH_
