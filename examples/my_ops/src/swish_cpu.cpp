// swish and swish_grad on CPU. Memory contract: x, out_grad, out and x_grad are C-contiguous
// and of one shape and dtype (checked once, when the program is prepared).
#include <cmath>

#include <paddle_core/kernel.hpp>

namespace pc = paddle_core;

namespace {

// Decode attrs and check tensors once (prepare); run() then only computes.
class Swish {
 public:
  Swish(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : beta_(attrs.f("beta")) {
    if (!in(0).same_shape(out(0))) pc::fail("out must have the shape of x");
    if (in(0).dtype() != out(0).dtype()) pc::fail("out must have the dtype of x");
    if (in(0).dtype() != PC_FLOAT32 && in(0).dtype() != PC_FLOAT64)
      pc::fail("swish takes float32 or float64, got %s", in(0).describe().c_str());
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context&) const {
    if (in(0).dtype() == PC_FLOAT32)
      compute(in(0).data<float>(), out(0).data<float>(), in(0).numel());
    else
      compute(in(0).data<double>(), out(0).data<double>(), in(0).numel());
  }

 private:
  template <class T> void compute(const T* x, T* out, int64_t n) const {
    const T beta = static_cast<T>(beta_);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] / (T(1) + std::exp(-beta * x[i]));
  }
  double beta_;
};

// x_grad = out_grad * (s + beta x s (1 - s)), s = sigmoid(beta x).
class SwishGrad {
 public:
  SwishGrad(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : beta_(attrs.f("beta")) {
    if (!in(0).same_shape(in(1)) || !in(0).same_shape(out(0)))
      pc::fail("x, out_grad and x_grad must share one shape");
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context&) const {
    if (in(0).dtype() == PC_FLOAT32)
      compute(in(0).data<float>(), in(1).data<float>(), out(0).data<float>(), in(0).numel());
    else
      compute(in(0).data<double>(), in(1).data<double>(), out(0).data<double>(), in(0).numel());
  }

 private:
  template <class T> void compute(const T* x, const T* g, T* dx, int64_t n) const {
    const T beta = static_cast<T>(beta_);
    for (int64_t i = 0; i < n; ++i) {
      const T s = T(1) / (T(1) + std::exp(-beta * x[i]));
      dx[i] = g[i] * (s + beta * x[i] * s * (T(1) - s));
    }
  }
  double beta_;
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
