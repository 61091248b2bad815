// Activations and their gradient kernels: relu, leaky_relu, gelu (exact and tanh
// approximation), elu, softplus, silu.
//
// Memory contract: x (the grad ops: out or x, and out_grad) and out are C-contiguous with equal
// shapes and dtypes (checked in prepare); out may alias x (an activation applied in place). The
// loops are elementwise, split across the run's threads. The formulas are activation.hpp's.
#include "activation.hpp"

namespace pon {
namespace {

// out = F(x), elementwise, float32 and float64.
template <class F> class Map {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  Map(const Attrs& attrs, const Slots& in, const Slots& out) : f_(attrs) {
    check_map(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      T* o = out(0).data<T>();
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) o[i] = f_(x[i]);
      });
    });
  }

 private:
  F f_;
};

// x_grad = G(v, out_grad), elementwise, where v is the grad op's first input (x or out).
template <class G> class GradMap {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  GradMap(const Attrs& attrs, const Slots& in, const Slots& out) : g_(attrs) {
    check_grad_map(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* v = in(0).data<T>();
      const T* g = in(1).data<T>();
      T* dx = out(0).data<T>();
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) dx[i] = g_(v[i], g[i]);
      });
    });
  }

 private:
  G g_;
};

}  // namespace

// The kernels of this file, by the names the manifest uses.
const pc::Family& activation_kernels() {
  static const pc::Family family = {
      pc::kernel<Map<Relu>>("relu"),
      pc::kernel<GradMap<ReluGrad>>("relu_grad"),
      pc::kernel<Map<LeakyRelu>>("leaky_relu"),
      pc::kernel<GradMap<LeakyReluGrad>>("leaky_relu_grad"),
      pc::kernel<Map<Gelu>>("gelu"),
      pc::kernel<GradMap<GeluGrad>>("gelu_grad"),
      pc::kernel<Map<Elu>>("elu"),
      pc::kernel<GradMap<EluGrad>>("elu_grad"),
      pc::kernel<Map<Softplus>>("softplus"),
      pc::kernel<GradMap<SoftplusGrad>>("softplus_grad"),
      pc::kernel<Map<Silu>>("silu"),
      pc::kernel<GradMap<SiluGrad>>("silu_grad"),
  };
  return family;
}

}  // namespace pon
