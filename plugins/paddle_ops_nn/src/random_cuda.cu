// CUDA kernels of the random ops: uniform_random, gaussian_random, truncated_gaussian_random,
// dropout and dropout_grad. Same checks, draws (random_ops.hpp) and dtypes as random_cpu.cpp:
// element i gets the same bits from the same generator as on the CPU, so uniform numbers and
// dropout masks are equal on both devices, and normal numbers equal to within the last bits
// (CUDA's log and cos are within 1-2 ulp of the host's).
//
// Memory contract: as the CPU kernels', all on the CUDA device of the plan's stream. The
// generator (key and run counter) is built on the host in run and passed by value.
#include "cuda.cuh"
#include "random_ops.hpp"

namespace paddle_ops_nn {
namespace {

template <class T>
__global__ void uniform_kernel(Random rng, double lo, double hi, T* o, int64_t n) {
  for (int64_t i = first_index(); i < n; i += index_step()) o[i] = uniform_value<T>(rng, i, lo, hi);
}

template <bool kTruncated, class T>
__global__ void gaussian_kernel(Random rng, double mean, double std, T* o, int64_t n) {
  for (int64_t i = first_index(); i < n; i += index_step())
    o[i] = static_cast<T>(mean + std * gaussian_draw<kTruncated>(rng, i, n));
}

template <class T>
__global__ void dropout_kernel(Random rng, bool test, float p, T scale, const T* x, T* o,
                               uint8_t* mask, int64_t n) {
  for (int64_t i = first_index(); i < n; i += index_step())
    dropout_element(rng, test, p, scale, x, o, mask, i);
}

template <class T>
__global__ void dropout_grad_kernel(const uint8_t* mask, const T* g, T scale, T* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += index_step())
    dropout_grad_element(mask, g, scale, dx, i);
}

class UniformRandomCuda {
 public:
  static constexpr pc::Signature signature{"", "1"};
  using DTypes = Floats;
  UniformRandomCuda(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    check_uniform(a_, out);
    expect_cuda(in, out);
  }

  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const int64_t n = out(0).numel();
    const Random rng(ctx, a_.seed);
    launch_floats(n, out(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      uniform_kernel<<<g.blocks, g.threads, 0, stream>>>(rng, a_.lo, a_.hi, out(0).data<T>(), n);
    });
  }

 private:
  UniformAttrs a_;
};

template <bool kTruncated> class GaussianRandomCuda {
 public:
  static constexpr pc::Signature signature{"", "1"};
  using DTypes = Floats;
  GaussianRandomCuda(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    check_gaussian(out);
    expect_cuda(in, out);
  }

  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const int64_t n = out(0).numel();
    const Random rng(ctx, a_.seed);
    launch_floats(n, out(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      gaussian_kernel<kTruncated><<<g.blocks, g.threads, 0, stream>>>(rng, a_.mean, a_.std,
                                                                      out(0).data<T>(), n);
    });
  }

 private:
  GaussianAttrs a_;
};

class DropoutCuda {
 public:
  static constexpr pc::Signature signature{"1", "11"};
  using DTypes = Floats;
  DropoutCuda(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    check_dropout(in, out);
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(0).numel();
    const Random rng(ctx, a_.seed);
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      dropout_kernel<<<g.blocks, g.threads, 0, stream>>>(
          rng, a_.test, static_cast<float>(a_.p), static_cast<T>(a_.scale()), in(0).data<T>(),
          out(0).data<T>(), out(1).data<uint8_t>(), n);
    });
  }

 private:
  DropoutForwardAttrs a_;
};

class DropoutGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  DropoutGradCuda(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    check_dropout_grad(in, out);
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(1).numel();
    launch_floats(n, in(1).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      dropout_grad_kernel<<<g.blocks, g.threads, 0, stream>>>(
          in(0).data<uint8_t>(), in(1).data<T>(), static_cast<T>(a_.scale()), out(0).data<T>(),
          n);
    });
  }

 private:
  DropoutAttrs a_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<UniformRandomCuda>("uniform_random_cuda"),
    pc::kernel<GaussianRandomCuda<false>>("gaussian_random_cuda"),
    pc::kernel<GaussianRandomCuda<true>>("truncated_gaussian_random_cuda"),
    pc::kernel<DropoutCuda>("dropout_cuda"),
    pc::kernel<DropoutGradCuda>("dropout_grad_cuda"));

}  // namespace paddle_ops_nn
