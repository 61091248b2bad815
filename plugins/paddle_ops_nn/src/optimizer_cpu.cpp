// Optimizers as ops updating parameters in place: sgd, momentum (Nesterov option), adam,
// adamw (adam with decoupled weight decay). The checks and update rules are optimizer.hpp's
// (shared with the CUDA kernels); the loops are elementwise, split across the run's threads.
#include "optimizer.hpp"

namespace paddle_ops_nn {
namespace {

class Sgd {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  Sgd(const Attrs&, const Slots& in, const Slots& out) { check_sgd(in, out); }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* p = in(0).data<T>();
      const T* g = in(1).data<T>();
      const T lr = *in(2).data<T>();
      T* po = out(0).data<T>();
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) sgd_step(p, g, lr, po, i);
      });
    });
  }
};

class Momentum {
 public:
  static constexpr pc::Signature signature{"1111", "11"};
  using DTypes = Floats;
  Momentum(const Attrs& attrs, const Slots& in, const Slots& out)
      : mu_(attrs.f("mu")), nesterov_(attrs.b("use_nesterov")) {
    check_momentum(in, out);
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
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) momentum_step(p, g, v, lr, mu, nesterov_, po, vo, i);
      });
    });
  }

 private:
  double mu_;
  bool nesterov_;
};

// adam_step over [lo, hi) where the outputs are the inputs (as pc.optimizer appends adam): with
// seven pointers that may overlap, the compiler leaves the loop scalar (a sqrt and a division
// an element, a twentieth of a training step); four distinct arrays it vectorises.
template <class T>
void adam_in_place(const AdamFactors<T>& f, bool decay, T* __restrict p, const T* __restrict g,
                   T* __restrict m1, T* __restrict m2, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; ++i) adam_step(f, decay, p, g, m1, m2, p, m1, m2, i);
}

template <bool kDecoupledDecay> class Adam {
 public:
  static constexpr pc::Signature signature{"1111111", "11111"};
  using DTypes = Floats;
  Adam(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs, kDecoupledDecay) {
    check_adam(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* p = in(0).data<T>();
      const T* g = in(1).data<T>();
      const T* m1 = in(2).data<T>();
      const T* m2 = in(3).data<T>();
      const double b1_pow = *in(4).data<T>(), b2_pow = *in(5).data<T>();
      const AdamFactors<T> f = adam_factors<T>(a_, b1_pow, b2_pow, *in(6).data<T>());
      T* po = out(0).data<T>();
      T* m1o = out(1).data<T>();
      T* m2o = out(2).data<T>();
      const bool in_place = po == p && m1o == m1 && m2o == m2;
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        if (in_place)
          adam_in_place(f, kDecoupledDecay, po, g, m1o, m2o, a, b);
        else
          for (int64_t i = a; i < b; ++i)
            adam_step(f, kDecoupledDecay, p, g, m1, m2, po, m1o, m2o, i);
      });
      *out(3).data<T>() = adam_next_pow<T>(b1_pow, a_.b1);
      *out(4).data<T>() = adam_next_pow<T>(b2_pow, a_.b2);
    });
  }

 private:
  AdamAttrs a_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Sgd>("sgd"),
    pc::kernel<Momentum>("momentum"),
    pc::kernel<Adam<false>>("adam"),
    pc::kernel<Adam<true>>("adamw"));

}  // namespace paddle_ops_nn
