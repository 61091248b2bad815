// CUDA kernels of the predicates isnan, isinf, isfinite, logical_not, and of logical_and, or,
// xor with NumPy broadcasting; out is bool. Same formulas (functors.hpp), checks
// (elementwise.hpp) and dtypes as logic_cpu.cpp's (where is not here yet).
//
// Memory contract: C-contiguous CUDA buffers; out bool (one byte, 0 or 1) with x's shape, or
// the broadcast shape for the binary ops (checked in prepare).
#include "elementwise.cuh"

namespace pom {
namespace {

using Bools = pc::Types<bool>;
using AnyNumber = pc::Types<float, double, int32_t, int64_t>;

// out = F(x) as bool.
template <class F, class TypeList> class PredicateCuda {
 public:
  PredicateCuda(const Attrs&, const Slots& in, const Slots& out) : numel_(in(0).numel()) {
    check_predicate(in, out);
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), TypeList{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), numel_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, cudaStream_t);
  template <class T>
  static void launch(const void* x, void* out, int64_t n, cudaStream_t stream) {
    const Grid g = grid_for(n);
    map_kernel<<<g.blocks, g.threads, 0, stream>>>(static_cast<const T*>(x),
                                                   static_cast<bool*>(out), n, F{});
  }

  int64_t numel_;
  Launch launch_ = nullptr;
};

}  // namespace

const pc::Family& logic_cuda_kernels() {
  static const pc::Family family = {
      pc::kernel<PredicateCuda<IsNan, AnyNumber>>("isnan_cuda"),
      pc::kernel<PredicateCuda<IsInf, AnyNumber>>("isinf_cuda"),
      pc::kernel<PredicateCuda<IsFinite, AnyNumber>>("isfinite_cuda"),
      pc::kernel<PredicateCuda<Not, Bools>>("logical_not_cuda"),
      pc::kernel<BinaryCuda<And, Bools, true>>("logical_and_cuda"),
      pc::kernel<BinaryCuda<Or, Bools, true>>("logical_or_cuda"),
      pc::kernel<BinaryCuda<Xor, Bools, true>>("logical_xor_cuda"),
  };
  return family;
}

}  // namespace pom
