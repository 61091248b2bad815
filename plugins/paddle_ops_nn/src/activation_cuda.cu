// CUDA kernels of the activations and their gradients: relu, relu6, hardswish, hardsigmoid,
// leaky_relu, gelu, elu, softplus, silu. Same formulas (activation.hpp's functors), checks and dtypes as activation_cpu.cpp.
//
// Memory contract: as the CPU kernels' (C-contiguous, equal shapes and dtypes, out may alias
// x), all on the CUDA device of the plan's stream. The math functions are CUDA's (expf, erfcf:
// within a few ulp), so float results may differ from the CPU's in the last bits.
#include "activation.hpp"
#include "cuda.cuh"

namespace paddle_ops_nn {
namespace {

template <class F, class T> __global__ void map_kernel(const T* x, T* out, int64_t n, F f) {
  for (int64_t i = first_index(); i < n; i += index_step()) out[i] = f(x[i]);
}

template <class G, class T>
__global__ void grad_map_kernel(const T* v, const T* g, T* dx, int64_t n, G grad) {
  for (int64_t i = first_index(); i < n; i += index_step()) dx[i] = grad(v[i], g[i]);
}

// out = F(x), elementwise, float32 and float64.
template <class F> class MapCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  MapCuda(const Attrs& attrs, const Slots& in, const Slots& out) : f_(attrs) {
    check_map(in, out);
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      map_kernel<<<g.blocks, g.threads, 0, stream>>>(in(0).data<T>(), out(0).data<T>(), n, f_);
    });
  }

 private:
  F f_;
};

// x_grad = G(v, out_grad), elementwise, where v is the grad op's first input (x or out).
template <class G> class GradMapCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  GradMapCuda(const Attrs& attrs, const Slots& in, const Slots& out) : g_(attrs) {
    check_grad_map(in, out);
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = in(0).numel();
    launch_floats(n, in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      grad_map_kernel<<<g.blocks, g.threads, 0, stream>>>(in(0).data<T>(), in(1).data<T>(),
                                                          out(0).data<T>(), n, g_);
    });
  }

 private:
  G g_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<MapCuda<Relu>>("relu_cuda"),
    pc::kernel<GradMapCuda<ReluGrad>>("relu_grad_cuda"),
    pc::kernel<MapCuda<Relu6>>("relu6_cuda"),
    pc::kernel<GradMapCuda<Relu6Grad>>("relu6_grad_cuda"),
    pc::kernel<MapCuda<Hardswish>>("hardswish_cuda"),
    pc::kernel<GradMapCuda<HardswishGrad>>("hardswish_grad_cuda"),
    pc::kernel<MapCuda<Hardsigmoid>>("hardsigmoid_cuda"),
    pc::kernel<GradMapCuda<HardsigmoidGrad>>("hardsigmoid_grad_cuda"),
    pc::kernel<MapCuda<LeakyRelu>>("leaky_relu_cuda"),
    pc::kernel<GradMapCuda<LeakyReluGrad>>("leaky_relu_grad_cuda"),
    pc::kernel<MapCuda<Gelu>>("gelu_cuda"),
    pc::kernel<GradMapCuda<GeluGrad>>("gelu_grad_cuda"),
    pc::kernel<MapCuda<Elu>>("elu_cuda"),
    pc::kernel<GradMapCuda<EluGrad>>("elu_grad_cuda"),
    pc::kernel<MapCuda<Softplus>>("softplus_cuda"),
    pc::kernel<GradMapCuda<SoftplusGrad>>("softplus_grad_cuda"),
    pc::kernel<MapCuda<Silu>>("silu_cuda"),
    pc::kernel<GradMapCuda<SiluGrad>>("silu_grad_cuda"));

}  // namespace paddle_ops_nn
