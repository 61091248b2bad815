// The machinery shared by the CPU reduction kernels (reduce_cpu.cpp, extreme_cpu.cpp,
// argreduce_cpu.cpp, reduce_grad_cpu.cpp): the walks, the folds, the Reduce kernel. The plan
// and the prepare checks are reduce_plan.hpp's, shared with the CUDA kernels.
//
// Memory contract: x is C-contiguous and read only; out has x's shape with the reduced axes
// dropped (or kept as 1 with keepdim) and is checked against it in prepare. sum and prod of
// integers produce int64, or uint64 for unsigned ones (like NumPy); integer sums and products
// wrap around on overflow. max and min of bool are any and all. argmax / argmin produce int64
// indices along their axis. float16 and bfloat16 run the float32 code on widened copies
// (AsFloat32: they accumulate in float32, and the result is rounded once).
//
// Layout: prepare drops size-1 axes and merges neighbouring axes that are both reduced or both
// kept, so x becomes alternating blocks. If the innermost block is reduced ("rows": sum over
// all axes, over the last axis), each output folds contiguous runs of x. If it is kept
// ("columns": sum over the first axis), a span of neighbouring outputs folds rows of x that
// are contiguous across the span, vectorised across it. Any further blocks (axes [0, 2] of a
// 3-D x) are walked with an odometer. The hottest float32 loops also have AVX2 builds
// (reduce_avx2.cpp), chosen when the kernel is prepared (use_avx2), with the same results.
//
// Accuracy: float32 sums add 8 elements per vector lane in float32, then carry every lane in
// double, so the error stays at the level of those 8-element partial sums (within 1 ulp of
// the exact sum in our tests on 4M and 16M elements) instead of growing with the element count
// as a running sum's does; NumPy's pairwise sum starts from 16-element partials. float64 sums
// add 16 elements per lane, then carry lanes with Neumaier compensation. Products multiply
// floats in double. Work is cut into fixed segments joined in order: results do not depend on
// the number of threads.
#ifndef PADDLE_OPS_MATH_REDUCE_HPP_
#define PADDLE_OPS_MATH_REDUCE_HPP_

#include <cmath>
#include <limits>

#include "common.hpp"
#include "reduce_plan.hpp"

namespace paddle_ops_math {

// reduce_avx2.cpp: AVX2 builds of fold_run's full blocks (float32 sums, maxima and minima) and
// of fold_rows for float32 sums, with the same results.
void sum_blocks_f32_avx2(const float* x, int64_t blocks, double* wide);
void sum_rows_f32_avx2(const float* const* rows, int n, int64_t w, double* acc);
bool max_blocks_f32(const float* x, int64_t blocks, float* wide);
bool min_blocks_f32(const float* x, int64_t blocks, float* wide);

namespace {

// -- plan (reduce_plan.hpp) ------------------------------------------------------------------

// Call f(offset) for positions [begin, end) of `od` in order.
template <class F> void walk(const Odometer& od, int64_t begin, int64_t end, F&& f) {
  const int nd = static_cast<int>(od.dims.size());
  int64_t idx[Odometer::kMaxDims];
  int64_t off = 0, rem = begin;
  for (int k = nd - 1; k >= 0; --k) {
    idx[k] = rem % od.dims[k];
    rem /= od.dims[k];
    off += idx[k] * od.strides[k];
  }
  for (int64_t i = begin; i < end; ++i) {
    f(off);
    for (int k = nd - 1; k >= 0; --k) {
      off += od.strides[k];
      if (++idx[k] < od.dims[k]) break;
      off -= od.strides[k] * od.dims[k];
      idx[k] = 0;
    }
  }
}

// Split outputs [lo, hi) into spans inside one group of `p.inner` outputs (columns layout):
// f(offset in x of the span's first output, first output, span width).
template <class F> void for_spans(const Plan& p, int64_t lo, int64_t hi, F&& f) {
  const int64_t w = p.inner;
  int64_t g = lo / w;
  walk(p.kept, g, (hi + w - 1) / w, [&](int64_t base) {
    const int64_t a = std::max(lo, g * w), b = std::min(hi, (g + 1) * w);
    f(base + a - g * w, a, b - a);
    ++g;
  });
}

// -- the folds -------------------------------------------------------------------------------
//
// An op steps elements into `Lane`s (vector lanes, kPerLane elements each, in the element's
// precision), folds lanes into `Acc`s (wider), joins Accs, and finishes an Acc into an output.

// A double sum with Neumaier's compensation: its error does not grow with the number of terms.
struct Compensated {
  double s = 0, c = 0;
  void add(double v) {
    const double t = s + v;
    c += std::fabs(s) >= std::fabs(v) ? (s - t) + v : (v - t) + s;
    s = t;
  }
  double value() const { return std::isfinite(s) ? s + c : s; }  // inf, NaN: c is meaningless
};

inline void accumulate(double& a, double v) { a += v; }
inline void accumulate(uint64_t& a, uint64_t v) { a += v; }
inline void accumulate(Compensated& a, double v) { a.add(v); }
inline void combine(double& a, double b) { a += b; }
inline void combine(uint64_t& a, uint64_t b) { a += b; }
inline void combine(Compensated& a, const Compensated& b) { a.add(b.s), a.c += b.c; }
inline double value(double a) { return a; }
inline double value(const Compensated& a) { return a.value(); }
inline uint64_t value(uint64_t a) { return a; }

template <class T> constexpr bool kInt = std::is_integral_v<T>;
// sum and prod, as NumPy's: integers give int64 (signed) or uint64 (unsigned); they fold in
// uint64 so that overflow wraps (defined).
template <class T>
using Wide =
    std::conditional_t<kInt<T>, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, T>;
template <class T> using WideLane = std::conditional_t<kInt<T>, uint64_t, T>;

template <class T> struct Sum {
  static constexpr int kPerLane = std::is_same_v<T, float> ? 8 : 16;
  using Out = Wide<T>;
  using Lane = WideLane<T>;
  using Acc = std::conditional_t<kInt<T>, uint64_t,
                                 std::conditional_t<std::is_same_v<T, float>, double, Compensated>>;
  static Lane lane() { return Lane(0); }
  static Acc acc() { return Acc{}; }
  static Lane step(Lane a, T v) { return a + static_cast<Lane>(v); }
  static void fold(Acc& a, Lane v) { accumulate(a, v); }
  static void join(Acc& a, const Acc& b) { combine(a, b); }
  static Out finish(const Acc& a, int64_t) { return static_cast<Out>(value(a)); }
};

template <class T> struct Mean : Sum<T> {  // floats only; mean of nothing is NaN, like NumPy
  static T finish(const typename Sum<T>::Acc& a, int64_t count) {
    return static_cast<T>(value(a) / static_cast<double>(count));
  }
};

// Float products multiply in double throughout: float32 products keep full precision.
template <class T> struct Prod {
  static constexpr int kPerLane = 16;
  using Out = Wide<T>;
  using Lane = std::conditional_t<kInt<T>, uint64_t, double>;
  using Acc = Lane;
  static Lane lane() { return Lane(1); }
  static Acc acc() { return Acc(1); }
  static Lane step(Lane a, T v) { return a * static_cast<Lane>(v); }
  static void fold(Acc& a, Lane v) { a *= v; }
  static void join(Acc& a, const Acc& b) { a *= b; }
  static Out finish(const Acc& a, int64_t) { return static_cast<Out>(a); }
};

// max and min propagate NaN, like NumPy's. Over no elements they give their identity (-inf or
// inf; an integer type's lowest or highest value), as ONNX does (NumPy raises instead). bool
// folds as bytes (0 or 1, and std::vector<bool> holds no bools to fold into): its maximum is
// any, its minimum all, and over no elements they are false and true.
template <class T, bool Max> struct Extreme {
  static constexpr bool kMax = Max;
  static constexpr int kPerLane = 8;
  using Out = T;
  using Lane = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
  using Acc = Lane;
  static Lane lane() {
    if constexpr (kInt<T>) {
      return Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    } else {
      return Max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    }
  }
  static Lane acc() { return lane(); }
  static Lane step(Lane a, T x) {  // written so that GCC vectorises it
    const Lane v = static_cast<Lane>(x);
    const Lane m = (Max ? v > a : v < a) ? v : a;
    return v != v ? v : m;
  }
  static void fold(Acc& a, Lane v) { a = step(a, static_cast<T>(v)); }
  static void join(Acc& a, Acc b) { a = step(a, static_cast<T>(b)); }
  static Out finish(Acc a, int64_t) { return static_cast<Out>(a); }
};
template <class T> using Max = Extreme<T, true>;
template <class T> using Min = Extreme<T, false>;
template <class Op> constexpr bool kIsExtreme = false;
template <class T, bool M> constexpr bool kIsExtreme<Extreme<T, M>> = true;

// Vector lanes: 128 bytes of them (32 float, 16 double): enough independent chains to hide
// the add latency, few enough to stay in registers.
template <class Lane> constexpr int kLanes = 128 / sizeof(Lane);
// How far ahead of a contiguous fold to prefetch.
constexpr size_t kPrefetchBytes = 2048;
// A long reduction is cut into segments of this many elements, folded in parallel.
constexpr int64_t kSegment = 32768;
// Widest span of outputs the columns layout folds at once (its Accs stay in L1/L2), and how
// many rows it reads at once (more streams read faster, up to the prefetchers' limits).
constexpr int64_t kColumns = 2048;
constexpr int kRows = 8;

// Fold the contiguous elements x[0, n) into acc.
// avx2: whether to run reduce_avx2.cpp's loops (use_avx2(), asked when the kernel was prepared).
template <class Op, class T>
void fold_run(const T* x, int64_t n, typename Op::Acc& acc, bool avx2) {
  using Lane = typename Op::Lane;
  using Acc = typename Op::Acc;
  constexpr int L = kLanes<Lane>;
  constexpr int64_t B = L * Op::kPerLane;  // elements per block
  if (n < L) {  // short runs (small last axes): no lanes to set up and join
    Lane a = Op::lane();
    for (int64_t i = 0; i < n; ++i) a = Op::step(a, x[i]);
    Op::fold(acc, a);
    return;
  }
  Acc wide[L];
  for (int k = 0; k < L; ++k) wide[k] = Op::acc();
  Lane lane[L];
  int64_t i = 0;
  if constexpr (std::is_base_of_v<Sum<float>, Op>) {  // sum and mean of float32
    static_assert(L == 32 && B == 256, "see reduce_avx2.cpp");
    if (avx2) sum_blocks_f32_avx2(x, n / B, wide), i = n / B * B;
  } else if constexpr (kIsExtreme<Op> && std::is_same_v<T, float>) {  // max and min
    static_assert(L == 32 && B == 256, "see reduce_avx2.cpp");
    const auto blocks = Op::kMax ? &max_blocks_f32 : &min_blocks_f32;
    if (avx2 && blocks(x, n / B, wide)) i = n / B * B;
  }
  for (; i + B <= n; i += B) {  // full blocks: constant trip counts, lanes in registers
    // The block's bookkeeping leaves fewer loads in flight than a bare loop would: prefetch
    // (SSE2 build of the float32 sum, one core: 12 -> 17 GB/s).
    const char* ahead = reinterpret_cast<const char*>(x + i) + kPrefetchBytes;
    for (size_t b = 0; b < B * sizeof(T); b += 64) __builtin_prefetch(ahead + b);
    for (int k = 0; k < L; ++k) lane[k] = Op::lane();
    for (int64_t j = i; j < i + B; j += L)
      for (int k = 0; k < L; ++k) lane[k] = Op::step(lane[k], x[j + k]);
    for (int k = 0; k < L; ++k) Op::fold(wide[k], lane[k]);
  }
  if (i < n) {  // the last, partial block
    for (int k = 0; k < L; ++k) lane[k] = Op::lane();
    for (int64_t j = i, k = 0; j < n; ++j, k = (k + 1) % L) lane[k] = Op::step(lane[k], x[j]);
    for (int k = 0; k < L; ++k) Op::fold(wide[k], lane[k]);
  }
  for (int w = L / 2; w >= 1; w /= 2)  // pairwise across lanes
    for (int k = 0; k < w; ++k) Op::join(wide[k], wide[k + w]);
  Op::join(acc, wide[0]);
}

// Rows layout: output o folds its runs; long reductions go segment by segment.
template <class Op, class T>
void reduce_rows(const Plan& p, const T* x, typename Op::Out* out, int32_t threads, bool avx2) {
  using Acc = typename Op::Acc;
  const int64_t r = p.inner;
  // Fold elements [e0, e1) of the output whose first element is x[base].
  auto fold_range = [&](int64_t base, int64_t e0, int64_t e1, Acc& acc) {
    int64_t j = e0 / r;
    walk(p.reduced, j, (e1 + r - 1) / r, [&](int64_t off) {
      const int64_t a = std::max<int64_t>(e0 - j * r, 0), b = std::min(e1 - j * r, r);
      fold_run<Op>(x + base + off + a, b - a, acc, avx2);
      ++j;
    });
  };
  const int64_t segments = (p.count + kSegment - 1) / kSegment;
  if (segments <= 1) {
    const int64_t grain = std::max<int64_t>(1, kGrain / p.count);
    parallel_rows(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
      int64_t o = lo;
      walk(p.kept, lo, hi, [&](int64_t base) {
        Acc acc = Op::acc();
        fold_range(base, 0, p.count, acc);
        out[o++] = Op::finish(acc, p.count);
      });
    });
    return;
  }
  std::vector<Acc> part(p.outputs * segments, Op::acc());
  const int64_t grain = std::max<int64_t>(1, kGrain / kSegment);
  parallel_rows(p.outputs * segments, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t o = t / segments, s = t % segments;
      walk(p.kept, o, o + 1, [&](int64_t base) {
        fold_range(base, s * kSegment, std::min(p.count, (s + 1) * kSegment), part[t]);
      });
    }
  });
  for (int64_t o = 0; o < p.outputs; ++o) {  // join in order: independent of the thread count
    Acc acc = part[o * segments];
    for (int64_t s = 1; s < segments; ++s) Op::join(acc, part[o * segments + s]);
    out[o] = Op::finish(acc, p.count);
  }
}

// Fold rows[0, n) (n <= kRows rows of x, each read at [0, w)) into acc[0, w): one lane per
// column, so each row is read contiguously and the loop vectorises across columns.
template <class Op, class T>
void fold_rows(const T* const* rows, int n, int64_t w, typename Op::Acc* __restrict acc,
               bool avx2) {
  using Lane = typename Op::Lane;
  if constexpr (std::is_base_of_v<Sum<float>, Op>) {  // sum and mean of float32
    if (avx2) return sum_rows_f32_avx2(rows, n, w, acc);
  }
  if (n == kRows) {  // the common case: a constant trip count, unrolled
    for (int64_t c = 0; c < w; ++c) {
      Lane l = Op::lane();
      for (int r = 0; r < kRows; ++r) l = Op::step(l, rows[r][c]);
      Op::fold(acc[c], l);
    }
    return;
  }
  for (int64_t c = 0; c < w; ++c) {
    Lane l = Op::lane();
    for (int r = 0; r < n; ++r) l = Op::step(l, rows[r][c]);
    Op::fold(acc[c], l);
  }
}

// Columns layout: a span of outputs folds rows of x, kRows rows at a time.
template <class Op, class T>
void reduce_columns(const Plan& p, const T* x, typename Op::Out* out, int32_t threads,
                    bool avx2) {
  using Acc = typename Op::Acc;
  constexpr int K = kRows;
  const int64_t grain = std::max<int64_t>(16, kGrain / p.count);
  parallel_for(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
    std::vector<Acc> accs(std::min(kColumns, hi - lo));
    Acc* acc = accs.data();
    for_spans(p, lo, hi, [&](int64_t base, int64_t o, int64_t width) {
      for (int64_t c0 = 0; c0 < width; c0 += kColumns) {
        const int64_t w = std::min(kColumns, width - c0);
        std::fill(acc, acc + w, Op::acc());
        const T* rows[K];
        int n = 0;
        walk(p.reduced, 0, p.count, [&](int64_t off) {
          rows[n++] = x + base + off + c0;
          if (n == K) fold_rows<Op>(rows, n, w, acc, avx2), n = 0;
        });
        if (n > 0) fold_rows<Op>(rows, n, w, acc, avx2);
        for (int64_t c = 0; c < w; ++c) out[o + c0 + c] = Op::finish(acc[c], p.count);
      }
    });
  });
}

// out = x reduced over `axes` (all when empty), keeping size-1 axes with `keepdim`.
template <template <class> class Op, class TypeList> class Reduce {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = TypeList;
  Reduce(const Attrs& attrs, const Slots& in, const Slots& out) {
    plan_ = check_reduce(attrs, in, out);
    avx2_ = use_avx2();
    fn_ = dispatch(in(0).dtype(), TypeList{}, [&](auto t) -> Fn {
      using T = decltype(t);
      out(0).expect_dtype(pc::DType<typename Op<T>::Out>::value, "out");
      return &compute<T>;
    });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(plan_, in(0).data<void>(), out(0).data<void>(), ctx.num_threads(), avx2_);
  }

 private:
  using Fn = void (*)(const Plan&, const void*, void*, int32_t, bool);

  template <class T>
  static void compute(const Plan& p, const void* xv, void* ov, int32_t threads, bool avx2) {
    using O = Op<T>;
    const T* x = static_cast<const T*>(xv);
    auto* out = static_cast<typename O::Out*>(ov);
    if (p.numel == 0) {  // nothing to fold: the identity's result (sum 0, prod 1, mean NaN, max -inf)
      std::fill(out, out + (p.count == 0 ? p.outputs : 0), O::finish(O::acc(), 0));
    } else if (p.rows) {
      reduce_rows<O>(p, x, out, threads, avx2);
    } else {
      reduce_columns<O>(p, x, out, threads, avx2);
    }
  }

  Plan plan_;
  bool avx2_ = false;
  Fn fn_;
};

// -- argmax, argmin --------------------------------------------------------------------------

}  // namespace
}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_REDUCE_HPP_
