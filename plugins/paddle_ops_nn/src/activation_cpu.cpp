// Activations and their gradient kernels: relu, relu6, hardswish, hardsigmoid, leaky_relu, gelu
// (exact and tanh approximation), elu, softplus, silu.
//
// Memory contract: x (the grad ops: out or x, and out_grad) and out are C-contiguous with equal
// shapes and dtypes (checked in prepare); out may alias x (an activation applied in place). The
// loops are elementwise, split across the run's threads. The formulas are activation.hpp's;
// on CPUs with AVX2 and FMA, the float32 loops of silu, gelu, elu and softplus, and the
// gradients of silu, gelu and softplus, are activation_avx2.cpp's (the others' loops are ones
// the compiler vectorises).
#include "activation.hpp"
#include "activation_avx2.hpp"

namespace paddle_ops_nn {
namespace {

// The AVX2 float32 loop of a functor, where activation_avx2.cpp has one (none: loop nullptr).
template <class F> avx2::Map avx2_map(const F&) { return {}; }
avx2::Map avx2_map(const Silu&) { return avx2::silu(); }
avx2::Map avx2_map(const Gelu& f) { return f.approximate ? avx2::gelu_tanh() : avx2::gelu(); }
avx2::Map avx2_map(const Elu& f) { return avx2::elu(static_cast<float>(f.alpha)); }
avx2::Map avx2_map(const Softplus& f) {
  return avx2::softplus(static_cast<float>(f.beta), static_cast<float>(f.threshold));
}
template <class G> avx2::GradMap avx2_grad_map(const G&) { return {}; }
avx2::GradMap avx2_grad_map(const SiluGrad&) { return avx2::silu_grad(); }
avx2::GradMap avx2_grad_map(const GeluGrad& g) {
  return g.approximate ? avx2::gelu_tanh_grad() : avx2::gelu_grad();
}
avx2::GradMap avx2_grad_map(const SoftplusGrad& g) {
  return avx2::softplus_grad(static_cast<float>(g.beta), static_cast<float>(g.threshold));
}

// out = F(x), elementwise, float32 and float64.
template <class F> class Map {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  Map(const Attrs& attrs, const Slots& in, const Slots& out) : f_(attrs) {
    check_map(in, out);
    if (in(0).dtype() == PC_FLOAT32 && use_avx2()) avx2_ = avx2_map(f_);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (avx2_.loop != nullptr) {
      const float* x = in(0).data<float>();
      float* o = out(0).data<float>();
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t lo, int64_t hi) {
        avx2_.loop(avx2_, x + lo, o + lo, hi - lo);
      });
      return;
    }
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
  avx2::Map avx2_;
};

// x_grad = G(v, out_grad), elementwise, where v is the grad op's first input (x or out).
template <class G> class GradMap {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  GradMap(const Attrs& attrs, const Slots& in, const Slots& out) : g_(attrs) {
    check_grad_map(in, out);
    if (in(0).dtype() == PC_FLOAT32 && use_avx2()) avx2_ = avx2_grad_map(g_);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (avx2_.loop != nullptr) {
      const float* v = in(0).data<float>();
      const float* g = in(1).data<float>();
      float* dx = out(0).data<float>();
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t lo, int64_t hi) {
        avx2_.loop(avx2_, v + lo, g + lo, dx + lo, hi - lo);
      });
      return;
    }
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
  avx2::GradMap avx2_;
};

}  // namespace

// The kernels of this file, by the names the manifest uses.
PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Map<Relu>>("relu"),
    pc::kernel<GradMap<ReluGrad>>("relu_grad"),
    pc::kernel<Map<Relu6>>("relu6"),
    pc::kernel<GradMap<Relu6Grad>>("relu6_grad"),
    pc::kernel<Map<Hardswish>>("hardswish"),
    pc::kernel<GradMap<HardswishGrad>>("hardswish_grad"),
    pc::kernel<Map<Hardsigmoid>>("hardsigmoid"),
    pc::kernel<GradMap<HardsigmoidGrad>>("hardsigmoid_grad"),
    pc::kernel<Map<LeakyRelu>>("leaky_relu"),
    pc::kernel<GradMap<LeakyReluGrad>>("leaky_relu_grad"),
    pc::kernel<Map<Gelu>>("gelu"),
    pc::kernel<GradMap<GeluGrad>>("gelu_grad"),
    pc::kernel<Map<Elu>>("elu"),
    pc::kernel<GradMap<EluGrad>>("elu_grad"),
    pc::kernel<Map<Softplus>>("softplus"),
    pc::kernel<GradMap<SoftplusGrad>>("softplus_grad"),
    pc::kernel<Map<Silu>>("silu"),
    pc::kernel<GradMap<SiluGrad>>("silu_grad"));

}  // namespace paddle_ops_nn
