// CUDA kernels of the binary ops' gradients: add_grad ... minimum_grad. Same formulas
// (functors.hpp), checks (elementwise.hpp) and dtypes as binary_grad_cpu.cpp's.
//
// Memory contract: x, y, out_grad and the outputs x_grad (shape of x), y_grad (shape of y) are
// C-contiguous float CUDA buffers (float16 and bfloat16 computed in float32); out_grad has the
// broadcast shape; either output may be absent. One thread per output element sums its
// gradient over the positions its input was broadcast to, in out_grad's order: deterministic,
// no atomics, no scratch memory. Floats add in double, as the reductions (reduce_cuda.cu): a
// float32 sum over thousands of positions stays within an ulp or so of the exact one.
#include <vector>

#include "elementwise.cuh"

namespace paddle_ops_math {
namespace {

// How one gradient output walks out_grad. Its own elements index the kept dims (in its
// layout); the positions summed into each index the summed dims. Strides: x, y, out_grad.
struct GradWalk {
  DimWalk<3> kept, summed;
  int64_t count = 1;  // positions summed into each output element
};

// The walk of x_grad (of_x) or y_grad over out_grad g.
GradWalk plan_walk(const Tensor& x, const Tensor& y, const Tensor& g, bool of_x) {
  std::vector<int64_t> sx, sy;
  broadcast_strides(x, y, g, sx, sy);
  GradWalk w;
  int64_t sg = 1;
  for (int32_t k = g.ndim() - 1; k >= 0; --k) {
    const int64_t size = g.dim(k);
    if (size != 1) {
      const bool kept = (of_x ? sx[k] : sy[k]) != 0;
      const int64_t strides[3] = {sx[k], sy[k], sg};
      (kept ? w.kept : w.summed).push(size, strides, "this gradient");
      if (!kept) w.count *= size;
    }
    sg *= size;
  }
  return w;
}

template <class G, class T>
__global__ void grad_sum_kernel(const T* x, const T* y, const T* g, T* out, int64_t m,
                                GradWalk w) {
  using C = compute_t<T>;
  const G f{};
  for (int64_t t = first_index(); t < m; t += index_step()) {
    int64_t at[3] = {0, 0, 0};  // x, y, out_grad
    w.kept.offsets(t, at);
    if (w.count == 1) {  // nothing summed: as the CPU, which writes the formula straight out
      out[t] = static_cast<T>(f(C(x[at[0]]), C(y[at[1]]), C(g[at[2]])));
      continue;
    }
    // Each term in C (float16, bfloat16: float32, as the CPU kernel's AsFloat32), added in A.
    using A = std::conditional_t<std::is_floating_point_v<C>, double, C>;
    A acc = A(0);
    for (int64_t r = 0; r < w.count; ++r) {
      int64_t j[3] = {at[0], at[1], at[2]};
      w.summed.offsets(r, j);
      acc += static_cast<A>(f(C(x[j[0]]), C(y[j[1]]), C(g[j[2]])));
    }
    out[t] = static_cast<T>(static_cast<C>(acc));
  }
}

// x_grad = sum GX(x, y, out_grad), y_grad = sum GY(x, y, out_grad).
template <class GX, class GY> class BinaryGradCuda {
 public:
  static constexpr pc::Signature signature{"111", "??"};
  using DTypes = AllFloats;
  BinaryGradCuda(const Attrs&, const Slots& in, const Slots& out) {
    check_binary_grad(in, out);
    expect_cuda(in, out);
    const Tensor x = in(0), y = in(1), g = in(2);
    if (out.has(0)) walk_x_ = plan_walk(x, y, g, true);
    if (out.has(1)) walk_y_ = plan_walk(x, y, g, false);
    dispatch(x.dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      launch_x_ = &launch<GX, T>;
      launch_y_ = &launch<GY, T>;
    });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const void *x = in(0).data<void>(), *y = in(1).data<void>(), *g = in(2).data<void>();
    if (out.has(0)) run_one(launch_x_, x, y, g, out(0), walk_x_, ctx);
    if (out.has(1)) run_one(launch_y_, x, y, g, out(1), walk_y_, ctx);
  }

 private:
  using Launch = void (*)(const void*, const void*, const void*, void*, int64_t,
                          const GradWalk&, cudaStream_t);
  template <class G, class T>
  static void launch(const void* x, const void* y, const void* g, void* out, int64_t m,
                     const GradWalk& w, cudaStream_t stream) {
    const Grid grid = grid_for(m);
    grad_sum_kernel<G, T><<<grid.blocks, grid.threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(y), static_cast<const T*>(g),
        static_cast<T*>(out), m, w);
  }

  static void run_one(Launch launch, const void* x, const void* y, const void* g,
                      const Tensor& target, const GradWalk& w, const Context& ctx) {
    const int64_t m = target.numel();
    if (m == 0) return;
    launch(x, y, g, target.data<void>(), m, w, stream_of(ctx));
    check_launch();
  }

  GradWalk walk_x_, walk_y_;
  Launch launch_x_ = nullptr, launch_y_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<BinaryGradCuda<GradOne, GradOne>>("add_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradOne, GradNeg>>("sub_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradMulX, GradMulY>>("mul_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradDivX, GradDivY>>("div_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradPowX, GradPowY>>("pow_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradOne, GradModY>>("mod_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradMaxX, GradMaxY>>("maximum_grad_cuda"),
    pc::kernel<BinaryGradCuda<GradMinX, GradMinY>>("minimum_grad_cuda"));

}  // namespace paddle_ops_math
