// argmax, argmin along one axis: int64 indices, the first on ties and the first NaN (the last
// ones with select_last_index).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace paddle_ops_math {
namespace {

// The index arg_better would pick in the contiguous run[0, n), n >= 1, found in two passes:
// the extreme, by the vectorised fold of max and min (NaN if the run holds one), then the first
// (last) element equal to it, or the first (last) NaN. A scan comparing each element with the
// best so far waits on every compare: bench_ops' argmax took 1.9 ms that way, 0.4-0.7 now.
template <bool Max, class T> int64_t arg_of_run(const T* run, int64_t n, bool last, bool avx2) {
  using Op = Extreme<T, Max>;
  typename Op::Acc extreme = Op::acc();
  fold_run<Op>(run, n, extreme, avx2);
  const bool nan = extreme != extreme;
  const auto hit = [extreme, nan](T v) { return nan ? v != v : v == extreme; };
  if (last) {
    for (int64_t j = n - 1; j > 0; --j)
      if (hit(run[j])) return j;
    return 0;
  }
  for (int64_t j = 0; j < n - 1; ++j)
    if (hit(run[j])) return j;
  return n - 1;
}

// The index of the first maximum (minimum) along `axis`; the first NaN wins, like NumPy's
// (arg_better, functors.hpp), or the last of each with select_last_index. Checks:
// reduce_plan.hpp's check_arg_reduce.
template <bool Max> class ArgReduce {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Join<Floats, AllInts>;
  ArgReduce(const Attrs& attrs, const Slots& in, const Slots& out)
      : plan_(check_arg_reduce(attrs, in, out)),
        last_(attrs.b("select_last_index")),
        avx2_(use_avx2()) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(plan_, last_, avx2_, in(0).data<void>(), out(0).data<int64_t>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Plan&, bool, bool, const void*, int64_t*, int32_t);

  template <class T>
  static void compute(const Plan& p, bool last, bool avx2, const void* xv, int64_t* out,
                      int32_t threads) {
    const auto better = [last](T v, T best) { return arg_better<Max>(v, best, last); };
    const T* x = static_cast<const T*>(xv);
    if (p.numel == 0) return;
    const int64_t grain = std::max<int64_t>(16, kGrain / p.count);
    if (p.rows) {  // the axis is innermost: scan each run (one run per output)
      parallel_rows(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
        int64_t o = lo;
        walk(p.kept, lo, hi,
             [&](int64_t base) { out[o++] = arg_of_run<Max>(x + base, p.inner, last, avx2); });
      });
      return;
    }
    parallel_for(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
      std::vector<T> value(std::min(kColumns, hi - lo));
      std::vector<int64_t> index(value.size());
      for_spans(p, lo, hi, [&](int64_t base, int64_t o, int64_t width) {
        for (int64_t c0 = 0; c0 < width; c0 += kColumns) {
          const int64_t w = std::min(kColumns, width - c0);
          int64_t j = 0;
          walk(p.reduced, 0, p.count, [&](int64_t off) {
            const T* row = x + base + off + c0;
            for (int64_t c = 0; c < w; ++c) {
              if (j == 0 || better(row[c], value[c])) value[c] = row[c], index[c] = j;
            }
            ++j;
          });
          std::copy(index.begin(), index.begin() + w, out + o + c0);
        }
      });
    });
  }

  Plan plan_;
  bool last_;
  bool avx2_;  // reduce_avx2.cpp's loops for the extreme (use_avx2(), asked at prepare)
  Fn fn_;
};

// -- gradients -------------------------------------------------------------------------------
//
// x_grad has x's shape. A grad G may first gather statistics per output over its elements
// (`see`), then writes every element's gradient (`grad`) from x, out and out_grad.

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AsFloat32<ArgReduce<true>>>("argmax"),
    pc::kernel<AsFloat32<ArgReduce<false>>>("argmin"));

}  // namespace paddle_ops_math
