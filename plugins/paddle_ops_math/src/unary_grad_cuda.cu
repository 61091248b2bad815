// CUDA kernels of the unary ops' gradients: abs_grad ... erf_grad, neg_grad, clip_grad; and
// clip, whose bounds come from attrs like clip_grad's. Same formulas (functors.hpp), checks
// (elementwise.hpp) and dtypes as unary_cpu.cpp's.
//
// Memory contract: the forward tensor (x or out, as the manifest declares), out_grad and
// x_grad are C-contiguous CUDA buffers of one shape and one float dtype (checked in prepare);
// float16 and bfloat16 compute in float32.
#include "elementwise.cuh"

namespace paddle_ops_math {
namespace {

// The formula of a grad kernel: stateless functors, or clip_grad's bounds from its attrs.
template <class G> G grad_functor(const Attrs&) { return G{}; }
template <> ClipGradBy grad_functor<ClipGradBy>(const Attrs& attrs) {
  return {attrs.f("min"), attrs.f("max")};
}

// x_grad = G(a, out_grad) elementwise.
template <class G> class UnaryGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllFloats;
  UnaryGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : f_(grad_functor<G>(attrs)), numel_(out(0).numel()) {
    if constexpr (std::is_same_v<G, ClipGradBy>) {
      check_clip_grad(attrs, in, out);
    } else {
      check_unary_grad(in, out);
    }
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(0).data<void>(), in(1).data<void>(), out(0).data<void>(), numel_, f_,
            stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, void*, int64_t, const G&, cudaStream_t);
  template <class T>
  static void launch(const void* a, const void* g, void* out, int64_t n, const G& f,
                     cudaStream_t stream) {
    const Grid grid = grid_for(n);
    zip_kernel<<<grid.blocks, grid.threads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(g), static_cast<T*>(out), n, f);
  }

  G f_;
  int64_t numel_;
  Launch launch_ = nullptr;
};

// out = clip(x, min, max) (ClipTo).
class ClipCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllNumbers;
  ClipCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : min_(attrs.f("min")), max_(attrs.f("max")), numel_(in(0).numel()) {
    check_clip(attrs, in, out);
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(*this, in(0).data<void>(), out(0).data<void>(), stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const ClipCuda&, const void*, void*, cudaStream_t);
  template <class T>
  static void launch(const ClipCuda& self, const void* x, void* out, cudaStream_t stream) {
    const Grid g = grid_for(self.numel_);
    map_kernel<<<g.blocks, g.threads, 0, stream>>>(static_cast<const T*>(x),
                                                   static_cast<T*>(out), self.numel_,
                                                   clip_to<compute_t<T>>(self.min_, self.max_));
  }

  double min_, max_;
  int64_t numel_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<UnaryGradCuda<AbsGrad>>("abs_grad_cuda"),
    pc::kernel<UnaryCuda<Neg, AllFloats>>("neg_grad_cuda"),
    pc::kernel<UnaryGradCuda<ExpGrad>>("exp_grad_cuda"),
    pc::kernel<UnaryGradCuda<LogGrad>>("log_grad_cuda"),
    pc::kernel<UnaryGradCuda<SqrtGrad>>("sqrt_grad_cuda"),
    pc::kernel<UnaryGradCuda<RsqrtGrad>>("rsqrt_grad_cuda"),
    pc::kernel<UnaryGradCuda<SquareGrad>>("square_grad_cuda"),
    pc::kernel<UnaryGradCuda<SinGrad>>("sin_grad_cuda"),
    pc::kernel<UnaryGradCuda<CosGrad>>("cos_grad_cuda"),
    pc::kernel<UnaryGradCuda<TanhGrad>>("tanh_grad_cuda"),
    pc::kernel<UnaryGradCuda<SigmoidGrad>>("sigmoid_grad_cuda"),
    pc::kernel<UnaryGradCuda<ErfGrad>>("erf_grad_cuda"),
    pc::kernel<UnaryGradCuda<ClipGradBy>>("clip_grad_cuda"),
    pc::kernel<ClipCuda>("clip_cuda"));

}  // namespace paddle_ops_math
