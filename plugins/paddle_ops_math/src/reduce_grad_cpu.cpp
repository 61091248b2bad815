// Gradients of sum, mean, max, min, prod.
//
// Memory contract and layout: see reduce.hpp.
#include "reduce.hpp"

namespace pom {
namespace {

template <class T> struct SumGrad {  // d(sum)/dx = 1; mean: 1 / count
  static constexpr bool kStats = false, kUsesOut = false;
  struct Stat {};
  T scale = 1;
  void see(Stat&, T, T) const {}
  T grad(const Stat&, T, T, T g) const { return g * scale; }
};

// max / min: out_grad is shared evenly among the elements equal to the result (ties split it,
// like PyTorch's amax); NaN results pass no gradient.
template <class T> struct ExtremeGrad {
  static constexpr bool kStats = true, kUsesOut = true;
  using Stat = int64_t;  // how many elements equal the result
  void see(Stat& s, T v, T out) const { s += v == out; }
  T grad(const Stat& s, T v, T out, T g) const { return v == out ? g / static_cast<T>(s) : T(0); }
};

// prod: the product of the other elements. With no zero that is prod / x_i; with exactly one
// zero only that element gets the product of the rest; with more, every gradient is 0.
template <class T> struct ProdGrad {
  static constexpr bool kStats = true, kUsesOut = false;
  struct Stat {
    int64_t zeros = 0;
    double nonzero = 1;  // product of the nonzero elements, in double
  };
  void see(Stat& s, T v, T) const {
    if (v == T(0)) {
      ++s.zeros;
    } else {
      s.nonzero *= v;
    }
  }
  T grad(const Stat& s, T v, T, T g) const {
    if (s.zeros == 0) return static_cast<T>(g * (s.nonzero / v));
    return s.zeros == 1 && v == T(0) ? static_cast<T>(g * s.nonzero) : T(0);
  }
};

// Inputs: x, [out,] out_grad; output: x_grad. Attrs axes and keepdim as in the forward op.
template <template <class> class G, bool Mean = false> class ReduceGrad {
 public:
  ReduceGrad(const Attrs& attrs, const Slots& in, const Slots& out) {
    constexpr bool uses_out = G<float>::kUsesOut;
    Tensor x = in(0), g = in(uses_out ? 2 : 1), dx = out(0);
    const std::vector<bool> flags = reduced_axes(x, attrs.ints("axes"));
    const bool keepdim = attrs.b("keepdim");
    expect_reduced_shape(g, x, flags, keepdim);
    expect_same_dtype(g, x, "out_grad and x");
    if (uses_out) {
      expect_reduced_shape(in(1), x, flags, keepdim);
      expect_same_dtype(in(1), x, "out and x");
    }
    expect_same_shape(dx, x, "x_grad and x");
    expect_same_dtype(dx, x, "x_grad and x");
    plan_ = make_plan(x, flags);
    fn_ = dispatch(x.dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
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
      parallel_for(p.outputs, threads, grain, [&](int64_t lo, int64_t hi) {
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

const pc::Family& reduce_grad_kernels() {
  static const pc::Family family = {
      pc::kernel<ReduceGrad<SumGrad>>("sum_grad"),
      pc::kernel<ReduceGrad<SumGrad, true>>("mean_grad"),
      pc::kernel<ReduceGrad<ExtremeGrad>>("max_grad"),
      pc::kernel<ReduceGrad<ExtremeGrad>>("min_grad"),
      pc::kernel<ReduceGrad<ProdGrad>>("prod_grad"),
  };
  return family;
}

}  // namespace pom
