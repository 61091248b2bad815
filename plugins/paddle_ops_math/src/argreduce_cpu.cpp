// argmax, argmin along one axis: int64 indices, the first on ties and the first NaN (the last
// ones with select_last_index).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace pom {
namespace {

// The index of the first maximum (minimum) along `axis`; the first NaN wins, like NumPy's
// (arg_better, functors.hpp), or the last of each with select_last_index. Checks:
// reduce_plan.hpp's check_arg_reduce.
template <bool Max> class ArgReduce {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Join<Floats, AllInts>;
  ArgReduce(const Attrs& attrs, const Slots& in, const Slots& out)
      : plan_(check_arg_reduce(attrs, in, out)), last_(attrs.b("select_last_index")) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(plan_, last_, in(0).data<void>(), out(0).data<int64_t>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Plan&, bool, const void*, int64_t*, int32_t);

  template <class T>
  static void compute(const Plan& p, bool last, const void* xv, int64_t* out, int32_t threads) {
    const auto better = [last](T v, T best) { return arg_better<Max>(v, best, last); };
    const T* x = static_cast<const T*>(xv);
    if (p.numel == 0) return;
    const int64_t grain = std::max<int64_t>(16, kGrain / p.count);
    if (p.rows) {  // the axis is innermost: scan each run (one run per output)
      parallel_rows(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
        int64_t o = lo;
        walk(p.kept, lo, hi, [&](int64_t base) {
          const T* run = x + base;
          int64_t best = 0;
          for (int64_t j = 1; j < p.inner; ++j)
            if (better(run[j], run[best])) best = j;
          out[o++] = best;
        });
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
  Fn fn_;
};

// -- gradients -------------------------------------------------------------------------------
//
// x_grad has x's shape. A grad G may first gather statistics per output over its elements
// (`see`), then writes every element's gradient (`grad`) from x, out and out_grad.

}  // namespace

const pc::Family& argreduce_kernels() {
  static const pc::Family family = {
      pc::kernel<AsFloat32<ArgReduce<true>>>("argmax"),
      pc::kernel<AsFloat32<ArgReduce<false>>>("argmin"),
  };
  return family;
}

}  // namespace pom
