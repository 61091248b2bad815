// Gradients of sum, mean, max, min, prod (float16 and bfloat16 computed in float32: AsFloat32).
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace paddle_ops_math {
namespace {

// Inputs: x, [out,] out_grad; output: x_grad. Attrs axes and keepdim as in the forward op.
// The formulas (SumGrad, ExtremeGrad, ProdGrad) are functors.hpp's, shared with CUDA.
template <template <class> class G, bool Mean = false> class ReduceGrad {
 public:
  static constexpr pc::Signature signature{G<float>::kUsesOut ? "111" : "11", "1"};
  using DTypes = Floats;
  ReduceGrad(const Attrs& attrs, const Slots& in, const Slots& out) {
    plan_ = check_reduce_grad(attrs, in, out, G<float>::kUsesOut);
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    constexpr bool uses_out = G<float>::kUsesOut;
    fn_(plan_, in(0).data<void>(), uses_out ? in(1).data<void>() : nullptr,
        in(uses_out ? 2 : 1).data<void>(), out(0).data<void>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const Plan&, const void*, const void*, const void*, void*, int32_t);

  template <class T>
  static void compute(const Plan& p, const void* xv, const void* ov, const void* gv, void* dv,
                      int32_t threads) {
    const T* x = static_cast<const T*>(xv);
    const T* outs = static_cast<const T*>(ov);
    const T* g = static_cast<const T*>(gv);
    T* dx = static_cast<T*>(dv);
    G<T> grad;
    if constexpr (Mean) grad.scale = static_cast<T>(1.0 / static_cast<double>(p.count));
    auto out_at = [&](int64_t o) { return outs != nullptr ? outs[o] : T(0); };
    using Stat = typename G<T>::Stat;
    if (p.numel == 0) return;
    const int64_t grain = std::max<int64_t>(p.rows ? 1 : 16, kGrain / p.count);
    if (p.rows) {
      const int64_t r = p.inner, runs = p.reduced.size();
      parallel_rows(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
        int64_t o = lo;
        walk(p.kept, lo, hi, [&](int64_t base) {
          const T ov = out_at(o), gv = g[o];
          Stat s{};
          if constexpr (G<T>::kStats)
            walk(p.reduced, 0, runs, [&](int64_t off) {
              for (int64_t i = base + off; i < base + off + r; ++i) grad.see(s, x[i], ov);
            });
          walk(p.reduced, 0, runs, [&](int64_t off) {
            for (int64_t i = base + off; i < base + off + r; ++i) dx[i] = grad.grad(s, x[i], ov, gv);
          });
          ++o;
        });
      });
      return;
    }
    parallel_for(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
      std::vector<Stat> stat(std::min(kColumns, hi - lo));
      for_spans(p, lo, hi, [&](int64_t base, int64_t o, int64_t width) {
        for (int64_t c0 = 0; c0 < width; c0 += kColumns) {
          const int64_t w = std::min(kColumns, width - c0), first = o + c0;
          std::fill(stat.begin(), stat.begin() + w, Stat{});
          if constexpr (G<T>::kStats)
            walk(p.reduced, 0, p.count, [&](int64_t off) {
              const T* row = x + base + off + c0;
              for (int64_t c = 0; c < w; ++c) grad.see(stat[c], row[c], out_at(first + c));
            });
          walk(p.reduced, 0, p.count, [&](int64_t off) {
            const int64_t at = base + off + c0;
            for (int64_t c = 0; c < w; ++c)
              dx[at + c] = grad.grad(stat[c], x[at + c], out_at(first + c), g[first + c]);
          });
        }
      });
    });
  }

  Plan plan_;
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AsFloat32<ReduceGrad<SumGrad>>>("sum_grad"),
    pc::kernel<AsFloat32<ReduceGrad<SumGrad, true>>>("mean_grad"),
    pc::kernel<AsFloat32<ReduceGrad<ExtremeGrad>>>("max_grad"),
    pc::kernel<AsFloat32<ReduceGrad<ExtremeGrad>>>("min_grad"),
    pc::kernel<AsFloat32<ReduceGrad<ProdGrad>>>("prod_grad"));

}  // namespace paddle_ops_math
