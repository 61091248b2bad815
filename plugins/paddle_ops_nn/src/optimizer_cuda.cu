// CUDA kernels of the optimizers: sgd, momentum, adam, adamw. Same checks, update rules
// (optimizer.hpp) and dtypes as optimizer_cpu.cpp.
//
// Memory contract: as the CPU kernels' (outputs may alias their inputs), all on the CUDA device
// of the plan's stream, the learning rate and beta powers too: each thread reads them from
// device memory (no copy to the host, no synchronization). Adam's beta powers are advanced by a
// second launch after the update, which reads them first: they may be updated in place.
#include "cuda.cuh"
#include "optimizer.hpp"

namespace paddle_ops_nn {
namespace {

template <class T>
__global__ void sgd_kernel(const T* p, const T* g, const T* lr, T* po, int64_t n) {
  const T rate = *lr;
  for (int64_t i = first_index(); i < n; i += index_step()) sgd_step(p, g, rate, po, i);
}

template <class T>
__global__ void momentum_kernel(const T* p, const T* g, const T* v, const T* lr, T mu,
                                bool nesterov, T* po, T* vo, int64_t n) {
  const T rate = *lr;
  for (int64_t i = first_index(); i < n; i += index_step())
    momentum_step(p, g, v, rate, mu, nesterov, po, vo, i);
}

template <class T>
__global__ void adam_kernel(AdamAttrs a, const T* p, const T* g, const T* m1, const T* m2,
                            const T* b1_pow, const T* b2_pow, const T* lr, T* po, T* m1o, T* m2o,
                            int64_t n) {
  const AdamFactors<T> f = adam_factors<T>(a, *b1_pow, *b2_pow, *lr);
  for (int64_t i = first_index(); i < n; i += index_step())
    adam_step(f, a.decay, p, g, m1, m2, po, m1o, m2o, i);
}

template <class T>
__global__ void adam_pows_kernel(AdamAttrs a, const T* b1_pow, const T* b2_pow, T* b1_out,
                                 T* b2_out) {
  const double b1 = *b1_pow, b2 = *b2_pow;
  *b1_out = adam_next_pow<T>(b1, a.b1);
  *b2_out = adam_next_pow<T>(b2, a.b2);
}

class SgdCuda {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  SgdCuda(const Attrs&, const Slots& in, const Slots& out) {
    check_sgd(in, out);
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      sgd_kernel<<<g.blocks, g.threads, 0, stream>>>(in(0).data<T>(), in(1).data<T>(),
                                                     in(2).data<T>(), out(0).data<T>(), n);
    });
  }
};

class MomentumCuda {
 public:
  static constexpr pc::Signature signature{"1111", "11"};
  using DTypes = Floats;
  MomentumCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : mu_(attrs.f("mu")), nesterov_(attrs.b("use_nesterov")) {
    check_momentum(in, out);
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      momentum_kernel<<<g.blocks, g.threads, 0, stream>>>(
          in(0).data<T>(), in(1).data<T>(), in(2).data<T>(), in(3).data<T>(),
          static_cast<T>(mu_), nesterov_, out(0).data<T>(), out(1).data<T>(), n);
    });
  }

 private:
  double mu_;
  bool nesterov_;
};

template <bool kDecoupledDecay> class AdamCuda {
 public:
  static constexpr pc::Signature signature{"1111111", "11111"};
  using DTypes = Floats;
  AdamCuda(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs, kDecoupledDecay) {
    check_adam(in, out);
    expect_cuda(in, out);
  }

  // The beta powers advance even when param is empty, as on the CPU.
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      adam_kernel<<<g.blocks, g.threads, 0, stream>>>(
          a_, in(0).data<T>(), in(1).data<T>(), in(2).data<T>(), in(3).data<T>(),
          in(4).data<T>(), in(5).data<T>(), in(6).data<T>(), out(0).data<T>(), out(1).data<T>(),
          out(2).data<T>(), n);
    });
    launch_floats(1, in(0).dtype(), ctx, [&](auto t, Grid, cudaStream_t stream) {
      using T = decltype(t);
      adam_pows_kernel<<<1, 1, 0, stream>>>(a_, in(4).data<T>(), in(5).data<T>(),
                                           out(3).data<T>(), out(4).data<T>());
    });
  }

 private:
  AdamAttrs a_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<SgdCuda>("sgd_cuda"),
    pc::kernel<MomentumCuda>("momentum_cuda"),
    pc::kernel<AdamCuda<false>>("adam_cuda"),
    pc::kernel<AdamCuda<true>>("adamw_cuda"));

}  // namespace paddle_ops_nn
