// Activations and their gradient kernels: relu.
//
// Memory contract: x (the grad ops: out or x, and out_grad) and out are C-contiguous with equal
// shapes and dtypes (checked in prepare); out may alias x (an activation applied in place). The
// loops are elementwise, split across the run's threads.
#include <cmath>

#include "common.hpp"

namespace pon {
namespace {

// -- forward functors: T operator()(T x) -----------------------------------------------------

struct Relu {
  explicit Relu(const Attrs&) {}
  template <class T> T operator()(T x) const { return x > T(0) ? x : T(0); }
};

// -- gradient functors: T operator()(T v, T g), v being what the grad op reads (x or out) -----

struct ReluGrad {  // from out: out > 0 exactly where x > 0
  explicit ReluGrad(const Attrs&) {}
  template <class T> T operator()(T out, T g) const { return out > T(0) ? g : T(0); }
};

// out = F(x), elementwise, float32 and float64.
template <class F> class Map {
 public:
  Map(const Attrs& attrs, const Slots& in, const Slots& out) : f_(attrs) {
    Tensor x = in(0), o = out(0);
    expect_same_shape(x, o, "x and out");
    expect_same_dtype(x, o, "x and out");
    dispatch(x.dtype(), Floats{}, [](auto) {});  // refuse other dtypes here, not in run
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
  GradMap(const Attrs& attrs, const Slots& in, const Slots& out) : g_(attrs) {
    Tensor v = in(0), g = in(1), dx = out(0);
    expect_same_shape(v, g, "the forward value and out_grad");
    expect_same_shape(v, dx, "the forward value and x_grad");
    expect_same_dtype(v, g, "the forward value and out_grad");
    expect_same_dtype(v, dx, "the forward value and x_grad");
    dispatch(v.dtype(), Floats{}, [](auto) {});
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
  };
  return family;
}

}  // namespace pon
