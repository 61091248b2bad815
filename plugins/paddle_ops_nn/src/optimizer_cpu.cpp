// Optimizers as ops updating parameters in place: sgd, momentum (Nesterov option), adam,
// adamw (adam with decoupled weight decay).
//
// Memory contract: param, grad and the moments (velocity, moment1, moment2) share one shape
// and dtype; learning_rate and the beta powers hold one element of that dtype (checked in
// prepare). Each *_out is declared `inplace` with its input, so when a program binds them to
// one variable (as pc.optimizer does) they are one buffer: every element is read before it is
// written. The loops are elementwise, split across the run's threads.
#include <cmath>

#include "common.hpp"

namespace pon {
namespace {

// Checks shared by every optimizer: `same` (param first: its gradient, its moments, and the
// outputs updating them) of one shape and dtype; `scalars` (learning rate, beta powers and
// their outputs) of one element of that dtype.
void check_tensors(std::initializer_list<Tensor> same, std::initializer_list<Tensor> scalars) {
  const Tensor& param = *same.begin();
  dispatch(param.dtype(), Floats{}, [](auto) {});
  for (const Tensor& t : same) {
    expect_same_shape(param, t, "param, its gradient and moments");
    expect_same_dtype(param, t, "param, its gradient and moments");
  }
  for (const Tensor& t : scalars) {
    expect_same_dtype(param, t, "param and its learning rate or beta powers");
    if (t.numel() != 1)
      fail("learning rates and beta powers hold one element, got %s", t.describe().c_str());
  }
}

// param_out = param - lr * grad.
class Sgd {
 public:
  Sgd(const Attrs&, const Slots& in, const Slots& out) {
    check_tensors({in(0), in(1), out(0)}, {in(2)});
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* p = in(0).data<T>();
      const T* g = in(1).data<T>();
      const T lr = *in(2).data<T>();
      T* po = out(0).data<T>();
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) po[i] = p[i] - lr * g[i];
      });
    });
  }
};

// v = mu * v + grad; param -= lr * v (Nesterov: lr * (grad + mu * v)).
class Momentum {
 public:
  Momentum(const Attrs& attrs, const Slots& in, const Slots& out)
      : mu_(attrs.f("mu")), nesterov_(attrs.b("use_nesterov")) {
    check_tensors({in(0), in(1), in(2), out(0), out(1)}, {in(3)});
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* p = in(0).data<T>();
      const T* g = in(1).data<T>();
      const T* v = in(2).data<T>();
      const T lr = *in(3).data<T>(), mu = static_cast<T>(mu_);
      T* po = out(0).data<T>();
      T* vo = out(1).data<T>();
      const bool nesterov = nesterov_;
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) {
          const T gi = g[i], vi = mu * v[i] + gi;
          vo[i] = vi;
          po[i] = p[i] - lr * (nesterov ? gi + mu * vi : vi);
        }
      });
    });
  }

 private:
  double mu_;
  bool nesterov_;
};

// Adam (Kingma & Ba), as PyTorch and Paddle compute it:
//   m1 = b1 m1 + (1 - b1) g;  m2 = b2 m2 + (1 - b2) g^2
//   param -= lr / (1 - b1^t) * m1 / (sqrt(m2 / (1 - b2^t)) + epsilon)
// where beta1_pow and beta2_pow hold b1^t and b2^t (pc.optimizer starts them at b1 and b2)
// and are multiplied by b1 and b2 afterwards. AdamW first decays param by lr * coeff.
template <bool kDecoupledDecay> class Adam {
 public:
  Adam(const Attrs& attrs, const Slots& in, const Slots& out)
      : b1_(attrs.f("beta1")), b2_(attrs.f("beta2")), eps_(attrs.f("epsilon")),
        coeff_(kDecoupledDecay ? attrs.f("coeff") : 0.0) {
    check_tensors({in(0), in(1), in(2), in(3), out(0), out(1), out(2)},
                  {in(4), in(5), in(6), out(3), out(4)});
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* p = in(0).data<T>();
      const T* g = in(1).data<T>();
      const T* m1 = in(2).data<T>();
      const T* m2 = in(3).data<T>();
      const double b1_pow = *in(4).data<T>(), b2_pow = *in(5).data<T>();
      const double lr = *in(6).data<T>();
      T* po = out(0).data<T>();
      T* m1o = out(1).data<T>();
      T* m2o = out(2).data<T>();
      const T b1 = static_cast<T>(b1_), b2 = static_cast<T>(b2_);
      const T step = static_cast<T>(lr / (1.0 - b1_pow));
      const T unbias2 = static_cast<T>(1.0 / std::sqrt(1.0 - b2_pow));
      const T eps = static_cast<T>(eps_), decay = static_cast<T>(1.0 - lr * coeff_);
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) {
          const T gi = g[i];
          const T m1i = b1 * m1[i] + (T(1) - b1) * gi;
          const T m2i = b2 * m2[i] + (T(1) - b2) * gi * gi;
          m1o[i] = m1i;
          m2o[i] = m2i;
          const T pi = kDecoupledDecay ? p[i] * decay : p[i];
          po[i] = pi - step * m1i / (std::sqrt(m2i) * unbias2 + eps);
        }
      });
      *out(3).data<T>() = static_cast<T>(b1_pow * b1_);
      *out(4).data<T>() = static_cast<T>(b2_pow * b2_);
    });
  }

 private:
  double b1_, b2_, eps_, coeff_;
};

}  // namespace

const pc::Family& optimizer_kernels() {
  static const pc::Family family = {
      pc::kernel<Sgd>("sgd"),
      pc::kernel<Momentum>("momentum"),
      pc::kernel<Adam<false>>("adam"),
      pc::kernel<Adam<true>>("adamw"),
  };
  return family;
}

}  // namespace pon
