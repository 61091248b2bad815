// CUDA kernels of the reductions sum, mean, prod, max, min, their gradients, and argmax,
// argmin. Same plan and checks (reduce_plan.hpp), formulas (functors.hpp) and dtypes as the
// CPU kernels (reduce_cpu.cpp, extreme_cpu.cpp, reduce_grad_cpu.cpp, argreduce_cpu.cpp).
//
// Memory contract: as the CPU kernels' (reduce.hpp): C-contiguous CUDA buffers; out has x's
// shape reduced over axes; sum and prod of int32 give int64; integers wrap around; max and
// min propagate NaN. One block per output element: its threads fold strided parts of the
// reduced elements, then join them in a fixed tree, so results are deterministic (no atomics)
// but may differ from the CPU's in the last bits: floats accumulate in double (float32 too),
// without the CPU's compensation.
#include <limits>
#include <type_traits>

#include "cuda.cuh"
#include "functors.hpp"
#include "reduce_plan.hpp"

namespace paddle_ops_math {
namespace {

using pc::AllFloats;
using pc::AllInts;
using pc::compute_t;
using pc::dispatch;
using pc::Floats;
using pc::Join;

// The plan as the GPU walks it, passed by value: the kept dims (one position per output
// element, in out's order) and the reduced dims (the elements of one output), innermost
// first, with their element strides in x.
struct Walk {
  DimWalk<1> kept, reduced;
  int64_t outputs = 0, count = 0;
};

Walk walk_of(const Plan& p) {
  constexpr const char* what = "this reduction (its alternating reduced and kept axes)";
  Walk w;
  w.outputs = p.outputs;
  w.count = p.count;
  if (p.numel == 0) return w;
  // Plan: the innermost block (inner, stride 1) is reduced (rows) or kept (columns); the
  // odometers list the other blocks outermost first.
  (p.rows ? w.reduced : w.kept).push(p.inner, {1}, what);
  for (int k = static_cast<int>(p.reduced.dims.size()) - 1; k >= 0; --k)
    w.reduced.push(p.reduced.dims[k], {p.reduced.strides[k]}, what);
  for (int k = static_cast<int>(p.kept.dims.size()) - 1; k >= 0; --k)
    w.kept.push(p.kept.dims[k], {p.kept.strides[k]}, what);
  return w;
}

// Offset in x of position i of dims d.
__device__ inline int64_t offset(const DimWalk<1>& d, int64_t i) {
  int64_t off[1] = {0};
  d.offsets(i, off);
  return off[0];
}

constexpr int kThreads = 256;

// The folds, on the device. Floats accumulate in double (float16 and bfloat16 too); integers
// in uint64 (wrapping), and sum and prod give int64, or uint64 for unsigned ones (as NumPy).
template <class T>
using Wide = std::conditional_t<std::is_integral_v<T>,
                                std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, T>;
template <class T> using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T> struct SumOp {
  using Out = Wide<T>;
  using A = Acc<T>;
  __device__ static A identity() { return A(0); }
  __device__ static A step(A a, T v) { return a + static_cast<A>(v); }
  __device__ static A join(A a, A b) { return a + b; }
  __device__ static Out finish(A a, int64_t) { return static_cast<Out>(a); }
};
template <class T> struct MeanOp : SumOp<T> {  // floats; mean of nothing is NaN (0 / 0)
  using Out = T;
  __device__ static T finish(double a, int64_t count) {
    return static_cast<T>(a / static_cast<double>(count));
  }
};
template <class T> struct ProdOp {
  using Out = Wide<T>;
  using A = Acc<T>;
  __device__ static A identity() { return A(1); }
  __device__ static A step(A a, T v) { return a * static_cast<A>(v); }
  __device__ static A join(A a, A b) { return a * b; }
  __device__ static Out finish(A a, int64_t) { return static_cast<Out>(a); }
};
// NaN propagates (functors.hpp's Maximum); bool is any (max) and all (min). float16 and
// bfloat16 compare as float32, exactly. No elements give the identity, as on the CPU.
template <class T, bool Max> struct ExtremeOp {
  using Out = T;
  using A = compute_t<T>;
  using F = std::conditional_t<Max, Maximum, Minimum>;
  __device__ static A identity() {
    using L = std::numeric_limits<A>;
    if constexpr (std::is_integral_v<A>) {
      return Max ? L::lowest() : L::max();
    } else {
      return Max ? -L::infinity() : L::infinity();
    }
  }
  __device__ static A step(A a, T v) { return F{}(static_cast<A>(v), a); }
  __device__ static A join(A a, A b) { return F{}(a, b); }
  __device__ static T finish(A a, int64_t) { return static_cast<T>(a); }
};
template <class T> using MaxOp = ExtremeOp<T, true>;
template <class T> using MinOp = ExtremeOp<T, false>;

// Shared memory for one value per thread of a block; raw bytes, since __shared__ variables
// take no constructors.
template <class V> __device__ V* block_slots() {
  __shared__ __align__(16) unsigned char raw[kThreads * 16];
  static_assert(sizeof(V) <= 16, "block_slots holds up to 16 bytes per thread");
  return reinterpret_cast<V*>(raw);
}

// Join the block's values slots[0, kThreads) into slots[0] in a fixed tree.
template <class V, class J> __device__ void tree_join(V* slots, J join) {
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) join(slots[threadIdx.x], slots[threadIdx.x + s]);
    __syncthreads();
  }
}

template <class Op, class T>
__global__ void reduce_kernel(const T* x, typename Op::Out* out, Walk w) {
  using A = typename Op::A;
  A* slots = block_slots<A>();
  for (int64_t o = blockIdx.x; o < w.outputs; o += gridDim.x) {
    const T* base = x + offset(w.kept, o);
    A acc = Op::identity();
    for (int64_t r = threadIdx.x; r < w.count; r += kThreads)
      acc = Op::step(acc, base[offset(w.reduced, r)]);
    slots[threadIdx.x] = acc;
    tree_join(slots, [](A& a, const A& b) { a = Op::join(a, b); });
    if (threadIdx.x == 0) out[o] = Op::finish(slots[0], w.count);
    __syncthreads();  // slots[0] is read before the next output overwrites it
  }
}

// The dtypes, as the CPU kernels': sum, prod, argmax and argmin take every number; max and
// min bool too.
using ArgTypes = Join<AllFloats, AllInts>;
using ExtremeTypes = Join<ArgTypes, pc::Types<bool>>;

unsigned blocks_for(int64_t outputs) {
  return static_cast<unsigned>(std::min<int64_t>(std::max<int64_t>(outputs, 1), 65536));
}

// out = x reduced over axes (all when empty), keeping size-1 axes with keepdim.
template <template <class> class Op, class TypeList> class ReduceCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = TypeList;
  ReduceCuda(const Attrs& attrs, const Slots& in, const Slots& out) {
    const Plan plan = check_reduce(attrs, in, out);
    walk_ = walk_of(plan);
    launch_ = dispatch(in(0).dtype(), TypeList{}, [&](auto t) -> Launch {
      using T = decltype(t);
      out(0).expect_dtype(pc::DType<typename Op<T>::Out>::value, "out");
      return &launch<T>;
    });
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (walk_.outputs == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), walk_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, const Walk&, cudaStream_t);
  template <class T>
  static void launch(const void* x, void* out, const Walk& w, cudaStream_t stream) {
    using O = Op<T>;
    reduce_kernel<O, T><<<blocks_for(w.outputs), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<typename O::Out*>(out), w);
  }

  Walk walk_;
  Launch launch_ = nullptr;
};

// x_grad of one output's elements: the block builds the output's Stat (see, then join in a
// fixed tree), then each thread writes the gradients of its elements.
// G is the formula in compute_t<T> (float32 for float16 and bfloat16, as the CPU's AsFloat32).
template <class G, class T>
__global__ void reduce_grad_kernel(const T* x, const T* outs, const T* g, T* dx, Walk w, G grad) {
  using Stat = typename G::Stat;
  using C = compute_t<T>;
  Stat* slots = block_slots<Stat>();
  for (int64_t o = blockIdx.x; o < w.outputs; o += gridDim.x) {
    const int64_t base = offset(w.kept, o);
    const C ov = outs != nullptr ? C(outs[o]) : C(0), gv = C(g[o]);
    Stat s{};
    if constexpr (G::kStats) {
      for (int64_t r = threadIdx.x; r < w.count; r += kThreads)
        grad.see(s, C(x[base + offset(w.reduced, r)]), ov);
      slots[threadIdx.x] = s;
      tree_join(slots, [](Stat& a, const Stat& b) { G::join(a, b); });
      s = slots[0];
      __syncthreads();  // every thread has read slots[0] before the next output's stats
    }
    for (int64_t r = threadIdx.x; r < w.count; r += kThreads) {
      const int64_t i = base + offset(w.reduced, r);
      dx[i] = static_cast<T>(grad.grad(s, C(x[i]), ov, gv));
    }
  }
}

// Inputs: x, [out,] out_grad; output: x_grad.
template <template <class> class G, bool Mean = false> class ReduceGradCuda {
 public:
  static constexpr pc::Signature signature{G<float>::kUsesOut ? "111" : "11", "1"};
  using DTypes = AllFloats;
  ReduceGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : walk_(walk_of(check_reduce_grad(attrs, in, out, G<float>::kUsesOut))) {
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    constexpr bool uses_out = G<float>::kUsesOut;
    if (walk_.outputs == 0 || walk_.count == 0) return;
    const Tensor g = in(uses_out ? 2 : 1);
    launch_(in(0).data<void>(), uses_out ? in(1).data<void>() : nullptr, g.data<void>(),
            out(0).data<void>(), walk_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, const void*, void*, const Walk&,
                          cudaStream_t);
  template <class T>
  static void launch(const void* x, const void* outs, const void* g, void* dx, const Walk& w,
                     cudaStream_t stream) {
    using C = compute_t<T>;
    G<C> grad{};
    if constexpr (Mean) grad.scale = static_cast<C>(1.0 / static_cast<double>(w.count));
    reduce_grad_kernel<<<blocks_for(w.outputs), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(outs), static_cast<const T*>(g),
        static_cast<T*>(dx), w, grad);
  }

  Walk walk_;
  Launch launch_ = nullptr;
};

// The best (value, index) of one output's elements: each thread scans its strided part in
// order, then the block joins the parts in a fixed tree. Two candidates are compared as the
// CPU's scan meets them, the lower index first (arg_better), so the result is the first
// (or, with `last`, the last) one, as the CPU finds.
template <class T> struct Best {
  T value;
  int64_t index;  // -1: no element yet
};

template <bool Max, class T>
__device__ Best<T> pick(const Best<T>& a, const Best<T>& b, bool last) {
  if (b.index < 0) return a;
  if (a.index < 0) return b;
  const Best<T>& early = a.index < b.index ? a : b;
  const Best<T>& late = a.index < b.index ? b : a;
  return arg_better<Max>(late.value, early.value, last) ? late : early;
}

template <bool Max, class T>
__global__ void arg_reduce_kernel(const T* x, int64_t* out, Walk w, bool last) {
  Best<T>* slots = block_slots<Best<T>>();
  for (int64_t o = blockIdx.x; o < w.outputs; o += gridDim.x) {
    const T* base = x + offset(w.kept, o);
    Best<T> best{T(0), -1};
    for (int64_t r = threadIdx.x; r < w.count; r += kThreads)
      best = pick<Max>(best, Best<T>{base[offset(w.reduced, r)], r}, last);
    slots[threadIdx.x] = best;
    tree_join(slots, [last](Best<T>& a, const Best<T>& b) { a = pick<Max>(a, b, last); });
    if (threadIdx.x == 0) out[o] = slots[0].index;
    __syncthreads();
  }
}

// argmax, argmin: int64 indices along one axis.
template <bool Max> class ArgReduceCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = ArgTypes;
  ArgReduceCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : walk_(walk_of(check_arg_reduce(attrs, in, out))), last_(attrs.b("select_last_index")) {
    launch_ = dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (walk_.outputs == 0) return;
    launch_(in(0).data<void>(), out(0).data<int64_t>(), walk_, last_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, int64_t*, const Walk&, bool, cudaStream_t);
  template <class T>
  static void launch(const void* x, int64_t* out, const Walk& w, bool last,
                     cudaStream_t stream) {
    arg_reduce_kernel<Max, T>
        <<<blocks_for(w.outputs), kThreads, 0, stream>>>(static_cast<const T*>(x), out, w, last);
  }

  Walk walk_;
  bool last_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<ReduceCuda<SumOp, ArgTypes>>("sum_cuda"),
    pc::kernel<ReduceCuda<MeanOp, AllFloats>>("mean_cuda"),
    pc::kernel<ReduceCuda<ProdOp, ArgTypes>>("prod_cuda"),
    pc::kernel<ReduceCuda<MaxOp, ExtremeTypes>>("max_cuda"),
    pc::kernel<ReduceCuda<MinOp, ExtremeTypes>>("min_cuda"),
    pc::kernel<ReduceGradCuda<SumGrad>>("sum_grad_cuda"),
    pc::kernel<ReduceGradCuda<SumGrad, true>>("mean_grad_cuda"),
    pc::kernel<ReduceGradCuda<ExtremeGrad>>("max_grad_cuda"),
    pc::kernel<ReduceGradCuda<ExtremeGrad>>("min_grad_cuda"),
    pc::kernel<ReduceGradCuda<ProdGrad>>("prod_grad_cuda"),
    pc::kernel<ArgReduceCuda<true>>("argmax_cuda"),
    pc::kernel<ArgReduceCuda<false>>("argmin_cuda"));

}  // namespace paddle_ops_math
