// The optimizers' update rules, written once for every device: the checks both prepares run,
// and the per-element steps the CPU kernels (optimizer_cpu.cpp) and the CUDA kernels
// (optimizer_cuda.cu) both call. Under nvcc the steps are __host__ __device__.
//
// Memory contract: param, grad and the moments (velocity, moment1, moment2) share one shape
// and dtype; learning_rate and the beta powers hold one element of that dtype. Each *_out is
// declared `inplace` with its input, so they may be one buffer: a step reads every element of
// position i before it writes any.
#ifndef PADDLE_OPS_NN_OPTIMIZER_HPP_
#define PADDLE_OPS_NN_OPTIMIZER_HPP_

#include <cmath>
#include <initializer_list>

#include "common.hpp"

namespace paddle_ops_nn {

// Checks shared by every optimizer: `same` (param first: its gradient, its moments, and the
// outputs updating them) of one shape and dtype; `scalars` (learning rate, beta powers and
// their outputs) of one element of that dtype.
inline void check_tensors(std::initializer_list<Tensor> same,
                          std::initializer_list<Tensor> scalars) {
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

// The tensors of each optimizer, in slot order: in (param, grad, ...), out (param_out, ...).
inline void check_sgd(const Slots& in, const Slots& out) {
  check_tensors({in(0), in(1), out(0)}, {in(2)});
}
inline void check_momentum(const Slots& in, const Slots& out) {
  check_tensors({in(0), in(1), in(2), out(0), out(1)}, {in(3)});
}
inline void check_adam(const Slots& in, const Slots& out) {
  check_tensors({in(0), in(1), in(2), in(3), out(0), out(1), out(2)},
                {in(4), in(5), in(6), out(3), out(4)});
}

// param_out = param - lr * grad.
template <class T> PADDLE_CORE_HD void sgd_step(const T* p, const T* g, T lr, T* po, int64_t i) {
  po[i] = p[i] - lr * g[i];
}

// v = mu * v + grad; param -= lr * v (Nesterov: lr * (grad + mu * v)).
template <class T>
PADDLE_CORE_HD void momentum_step(const T* p, const T* g, const T* v, T lr, T mu, bool nesterov,
                                  T* po, T* vo, int64_t i) {
  const T gi = g[i], vi = mu * v[i] + gi;
  vo[i] = vi;
  po[i] = p[i] - lr * (nesterov ? gi + mu * vi : vi);
}

// Adam (Kingma & Ba), as PyTorch and Paddle compute it:
//   m1 = b1 m1 + (1 - b1) g;  m2 = b2 m2 + (1 - b2) g^2
//   param -= lr / (1 - b1^t) * m1 / (sqrt(m2 / (1 - b2^t)) + epsilon)
// where beta1_pow and beta2_pow hold b1^t and b2^t (pc.optimizer starts them at b1 and b2)
// and are multiplied by b1 and b2 afterwards (adam_next_pow). AdamW first decays param by
// lr * coeff (coeff 0: adam).
struct AdamAttrs {
  AdamAttrs(const Attrs& attrs, bool decoupled_decay)
      : b1(attrs.f("beta1")), b2(attrs.f("beta2")), eps(attrs.f("epsilon")),
        coeff(decoupled_decay ? attrs.f("coeff") : 0.0), decay(decoupled_decay) {}
  double b1, b2, eps, coeff;
  bool decay;
};

// The factors of a step, from this step's lr and beta powers, computed in double.
template <class T> struct AdamFactors {
  T b1, b2, step, unbias2, eps, decay;
};
template <class T>
PADDLE_CORE_HD AdamFactors<T> adam_factors(const AdamAttrs& a, double b1_pow, double b2_pow,
                                           double lr) {
  return {static_cast<T>(a.b1),
          static_cast<T>(a.b2),
          static_cast<T>(lr / (1.0 - b1_pow)),
          static_cast<T>(1.0 / std::sqrt(1.0 - b2_pow)),
          static_cast<T>(a.eps),
          static_cast<T>(1.0 - lr * a.coeff)};
}

template <class T>
PADDLE_CORE_HD void adam_step(const AdamFactors<T>& f, bool decay, const T* p, const T* g,
                              const T* m1, const T* m2, T* po, T* m1o, T* m2o, int64_t i) {
  const T gi = g[i];
  const T m1i = f.b1 * m1[i] + (T(1) - f.b1) * gi;
  const T m2i = f.b2 * m2[i] + (T(1) - f.b2) * gi * gi;
  m1o[i] = m1i;
  m2o[i] = m2i;
  const T pi = decay ? p[i] * f.decay : p[i];
  po[i] = pi - f.step * m1i / (std::sqrt(m2i) * f.unbias2 + f.eps);
}

// beta_pow_out = beta_pow * beta.
template <class T> PADDLE_CORE_HD T adam_next_pow(double pow, double beta) {
  return static_cast<T>(pow * beta);
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_OPTIMIZER_HPP_
