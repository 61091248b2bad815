// swish and swish_grad on CPU. Memory contract: x, out_grad, out and x_grad are C-contiguous
// and of one shape and dtype (checked once, when the program is prepared).
#include <cmath>

#include <paddle_core/kernel.hpp>

namespace pc = paddle_core;

namespace {

// Decode attrs, check tensors and pick the dtype's instance once (prepare); run() then only
// computes.
class Swish {
 public:
  Swish(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : beta_(attrs.f("beta")) {
    pc::expect_same_dtype(in(0), out(0), "x and out");
    pc::expect_same_shape(in(0), out(0), "x and out");
    // compute<float> or compute<double>; any other dtype fails here, naming it.
    fn_ = pc::dispatch(in(0).dtype(), pc::Floats{},
                       [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context&) const {
    fn_(in(0), out(0), beta_);
  }

 private:
  using Fn = void (*)(const pc::Tensor& x, const pc::Tensor& out, double beta);
  template <class T> static void compute(const pc::Tensor& x, const pc::Tensor& out, double beta) {
    const T* xs = x.data<T>();
    T* ys = out.data<T>();
    const T b = static_cast<T>(beta);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) ys[i] = xs[i] / (T(1) + std::exp(-b * xs[i]));
  }
  double beta_;
  Fn fn_;
};

// x_grad = out_grad * (s + beta x s (1 - s)), s = sigmoid(beta x).
class SwishGrad {
 public:
  SwishGrad(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : beta_(attrs.f("beta")) {
    pc::expect_same_dtype(in(0), in(1), "x and out_grad");
    pc::expect_same_dtype(in(0), out(0), "x and x_grad");
    pc::expect_same_shape(in(0), in(1), "x and out_grad");
    pc::expect_same_shape(in(0), out(0), "x and x_grad");
    fn_ = pc::dispatch(in(0).dtype(), pc::Floats{},
                       [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context&) const {
    fn_(in(0), in(1), out(0), beta_);
  }

 private:
  using Fn = void (*)(const pc::Tensor& x, const pc::Tensor& g, const pc::Tensor& dx,
                      double beta);
  template <class T>
  static void compute(const pc::Tensor& x, const pc::Tensor& g, const pc::Tensor& dx,
                      double beta) {
    const T* xs = x.data<T>();
    const T* gs = g.data<T>();
    T* dxs = dx.data<T>();
    const T b = static_cast<T>(beta);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      const T s = T(1) / (T(1) + std::exp(-b * xs[i]));
      dxs[i] = gs[i] * (s + b * xs[i] * s * (T(1) - s));
    }
  }
  double beta_;
  Fn fn_;
};

}  // namespace

// The kernels of this file, by the names the manifest uses.
const pc::Family& swish_kernels() {
  static const pc::Family family = {
      pc::kernel<Swish>("swish"),
      pc::kernel<SwishGrad>("swish_grad"),
  };
  return family;
}
