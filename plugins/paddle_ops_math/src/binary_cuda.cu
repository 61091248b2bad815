// CUDA kernels of the elementwise binary ops with NumPy broadcasting: add, sub, mul, div, pow,
// mod, maximum, minimum. Same formulas (functors.hpp), checks and dtypes as binary_cpu.cpp. Also
// the core's add_n (paddle_core/builtin/ops.pbtxt), which every backward uses to sum gradients.
//
// Memory contract: inputs x, y and output out are C-contiguous CUDA buffers; out has the
// broadcast shape and x's dtype (checked in prepare). add_n's inputs and out share one shape
// and dtype. Integers wrap around; float16 and bfloat16 compute in float32.
#include "elementwise.cuh"

namespace pom {
namespace {

// add_n's dtypes, as the core's CPU kernel's (paddle_core/builtin/ops.pbtxt).
using AddNTypes = pc::Join<AllFloats, pc::Ints>;

// out = xs[0] + xs[1] + ..., added in order like the core's CPU kernel: one launch per input
// after the first two, each adding into out in place.
class AddNCuda {
 public:
  static constexpr pc::Signature signature{"+", "1"};
  using DTypes = AddNTypes;
  AddNCuda(const Attrs&, const Slots& in, const Slots& out) : numel_(out(0).numel()) {
    check_add_n(in, out);
    expect_cuda(in, out);
    strides_.ndim = 1;
    strides_.dims[0] = numel_;
    strides_.a[0] = strides_.b[0] = 1;
    launch_ = dispatch(out(0).dtype(), DTypes{}, [](auto t) -> Launch {
      return &launch<decltype(t)>;
    });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    void* o = out(0).data<void>();
    const cudaStream_t stream = stream_of(ctx);
    const Tensor first = in(0, 0);
    if (in.size(0) == 1) return copy_async(o, first.data<void>(), first.nbytes(), stream);
    launch_(first.data<void>(), in(0, 1).data<void>(), o, strides_, stream);
    check_launch();
    for (int32_t k = 2; k < in.size(0); ++k) {
      launch_(o, in(0, k).data<void>(), o, strides_, stream);
      check_launch();
    }
  }

 private:
  using Launch = void (*)(const void*, const void*, void*, const Strides&, cudaStream_t);
  template <class T>
  static void launch(const void* a, const void* b, void* out, const Strides& s,
                     cudaStream_t stream) {
    const Grid g = grid_for(s.dims[0]);
    binary_kernel<Add, T, T><<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), s.dims[0], s);
  }

  int64_t numel_;
  Strides strides_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<BinaryCuda<Add, AllNumbers>>("add_cuda"),
    pc::kernel<BinaryCuda<Sub, AllNumbers>>("sub_cuda"),
    pc::kernel<BinaryCuda<Mul, AllNumbers>>("mul_cuda"),
    pc::kernel<BinaryCuda<Div, AllNumbers>>("div_cuda"),
    pc::kernel<BinaryCuda<Pow, AllNumbers>>("pow_cuda"),
    pc::kernel<BinaryCuda<Mod, AllNumbers>>("mod_cuda"),
    pc::kernel<BinaryCuda<Maximum, AllNumbers>>("maximum_cuda"),
    pc::kernel<BinaryCuda<Minimum, AllNumbers>>("minimum_cuda"),
    pc::kernel<AddNCuda>("add_n_cuda"));

}  // namespace pom
