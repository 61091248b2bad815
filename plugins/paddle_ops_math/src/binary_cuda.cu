// CUDA kernels of the elementwise binary ops with NumPy broadcasting: add, sub, mul, div, pow,
// mod, maximum, minimum. Same formulas (functors.hpp), checks and dtypes as binary_cpu.cpp. Also
// the core's add_n (paddle_core/builtin/ops.pbtxt), which every backward uses to sum gradients.
//
// Memory contract: inputs x, y and output out are C-contiguous CUDA buffers; out has the
// broadcast shape and x's dtype (checked in prepare). add_n's inputs and out share one shape
// and dtype. Integers wrap around; float16 and bfloat16 compute in float32.
#include "elementwise.cuh"

namespace paddle_ops_math {
namespace {

// add_n's dtypes, as the core's CPU kernel's (paddle_core/builtin/ops.pbtxt).
using AddNTypes = pc::Join<AllFloats, pc::Ints>;

// float16 or bfloat16 add_n over up to kMaxInputs inputs per launch, summed in float32 in
// order: acc_in (the sums of earlier inputs) when given, then xs.p[0], xs.p[1], ...; the sums go
// to acc_out when given (more inputs follow), else rounded once into out.
template <class T> struct HalfInputs {
  static constexpr int kMaxInputs = 64;
  const T* p[kMaxInputs] = {};
  int32_t count = 0;
};
template <class T>
__global__ void add_n_half_kernel(HalfInputs<T> xs, const float* acc_in, float* acc_out, T* out,
                                  int64_t n) {
  for (int64_t i = first_index(); i < n; i += index_step()) {
    float sum = acc_in != nullptr ? acc_in[i] + float(xs.p[0][i]) : float(xs.p[0][i]);
    for (int32_t k = 1; k < xs.count; ++k) sum += float(xs.p[k][i]);
    if (acc_out != nullptr) acc_out[i] = sum;
    else out[i] = T(sum);
  }
}

// out = xs[0] + xs[1] + ..., added in order like the core's CPU kernel: for float32, float64
// and integers, one launch per input after the first two, each adding into out in place; for
// float16 and bfloat16, sums in float32 rounded once (in float32 scratch memory between
// launches when there are more than HalfInputs' kMaxInputs inputs).
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
    launch_(in, out(0).data<void>(), strides_, stream_of(ctx));
  }

 private:
  using Launch = void (*)(const Slots&, void*, const Strides&, cudaStream_t);
  template <class T>
  static void launch(const Slots& in, void* o, const Strides& s, cudaStream_t stream) {
    const int64_t n = s.dims[0];
    const Grid g = grid_for(n);
    const int32_t count = in.size(0);
    T* out = static_cast<T*>(o);
    if constexpr (pc::is_half_float_v<T>) {
      constexpr int32_t kMax = HalfInputs<T>::kMaxInputs;
      const pc::Scratch sums(count > kMax ? static_cast<size_t>(n) * sizeof(float) : 0, stream);
      for (int32_t lo = 0; lo < count; lo += kMax) {
        HalfInputs<T> xs;
        xs.count = std::min(kMax, count - lo);
        for (int32_t k = 0; k < xs.count; ++k) xs.p[k] = in(0, lo + k).data<T>();
        const bool last = lo + xs.count == count;
        add_n_half_kernel<T><<<g.blocks, g.threads, 0, stream>>>(
            xs, lo > 0 ? sums.get<float>() : nullptr, last ? nullptr : sums.get<float>(), out, n);
        check_launch();
      }
    } else {
      const T* first = in(0, 0).data<T>();
      if (count == 1) return copy_async(out, first, n * static_cast<int64_t>(sizeof(T)), stream);
      binary_kernel<Add, T, T><<<g.blocks, g.threads, 0, stream>>>(first, in(0, 1).data<T>(), out,
                                                                    n, s);
      check_launch();
      for (int32_t k = 2; k < count; ++k) {
        binary_kernel<Add, T, T><<<g.blocks, g.threads, 0, stream>>>(out, in(0, k).data<T>(),
                                                                      out, n, s);
        check_launch();
      }
    }
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

}  // namespace paddle_ops_math
