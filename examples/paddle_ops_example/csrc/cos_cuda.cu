// example_cos and example_cos_grad on CUDA: the formulas of cos.hpp, as the CPU kernels use them,
// in grid-stride loops enqueued on the plan's stream.
#include <paddle_core/cuda.hpp>

#include "cos.hpp"

namespace pc = paddle_core;

namespace {

template <class T> __global__ void cos_kernel(const T* x, T* out, int64_t n, T scale) {
  for (int64_t i = pc::first_index(); i < n; i += pc::index_step())
    out[i] = paddle_ops_example::cos(x[i], scale);
}

template <class T>
__global__ void cos_grad_kernel(const T* x, const T* g, T* dx, int64_t n, T scale) {
  for (int64_t i = pc::first_index(); i < n; i += pc::index_step())
    dx[i] = paddle_ops_example::cos_grad(x[i], g[i], scale);
}

class CosCuda {
 public:
  // The ops this kernel fits, checked against the manifest when the module loads: one
  // input and one output slot of a tensor each ('1'), float32 or float64.
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = pc::Floats;
  CosCuda(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : scale_(attrs.f("scale")) {
    pc::expect_cuda(in, out);
    pc::expect_same_dtype(in(0), out(0), "x and out");
    pc::expect_same_shape(in(0), out(0), "x and out");
    pc::dispatch(in(0).dtype(), DTypes{}, [](auto) {});  // float32 or float64, or fail
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context& ctx) const {
    const int64_t n = in(0).numel();
    if (n == 0) return;
    const pc::Grid grid = pc::grid_for(n);
    pc::dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      cos_kernel<<<grid.blocks, grid.threads, 0, pc::stream_of(ctx)>>>(
          in(0).data<T>(), out(0).data<T>(), n, static_cast<T>(scale_));
    });
    pc::check_launch();
  }

 private:
  double scale_;
};

class CosGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};  // x, out_grad; x_grad
  using DTypes = pc::Floats;
  CosGradCuda(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : scale_(attrs.f("scale")) {
    pc::expect_cuda(in, out);
    pc::expect_same_dtype(in(0), in(1), "x and out_grad");
    pc::expect_same_dtype(in(0), out(0), "x and x_grad");
    pc::expect_same_shape(in(0), in(1), "x and out_grad");
    pc::expect_same_shape(in(0), out(0), "x and x_grad");
    pc::dispatch(in(0).dtype(), DTypes{}, [](auto) {});
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context& ctx) const {
    const int64_t n = in(0).numel();
    if (n == 0) return;
    const pc::Grid grid = pc::grid_for(n);
    pc::dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      cos_grad_kernel<<<grid.blocks, grid.threads, 0, pc::stream_of(ctx)>>>(
          in(0).data<T>(), in(1).data<T>(), out(0).data<T>(), n, static_cast<T>(scale_));
    });
    pc::check_launch();
  }

 private:
  double scale_;
};

}  // namespace

// The kernels of this file, under the names the manifest gives them.
PADDLE_CORE_REGISTER_KERNELS(pc::kernel<CosCuda>("example_cos_cuda"),
                             pc::kernel<CosGradCuda>("example_cos_grad_cuda"));
