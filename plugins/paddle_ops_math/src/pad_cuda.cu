// CUDA kernel of pad. Same checks and sources (pad.hpp) and dtypes as pad_cpu.cpp's; pad_grad
// has no CUDA kernel (it runs on the CPU).
//
// Memory contract: as the CPU kernel's (C-contiguous; out x's dims plus the paddings, checked
// in prepare), on the CUDA device of the plan's stream. One thread per element of out.
#include "cuda.cuh"
#include "elementwise.hpp"
#include "functors.hpp"
#include "pad.hpp"

namespace paddle_ops_math {
namespace {

using pc::Attrs;
using pc::dispatch;

template <class T>
__global__ void pad_kernel(const T* x, T* out, int64_t n, PadGeometry g, T fill) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t src = g.source(e);
    out[e] = src < 0 ? fill : x[src];
  }
}

// out's element e = x at pad.hpp's source(e), or the value.
class PadCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  PadCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_pad(attrs, in(0), out(0), "out")), value_(attrs.f("value")) {
    out(0).expect_dtype(in(0).dtype(), "out");
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = out(0).numel();
    if (n == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), n, geo_, value_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, const PadGeometry&, double, cudaStream_t);
  template <class T>
  static void launch(const void* x, void* out, int64_t n, const PadGeometry& geo, double value,
                     cudaStream_t stream) {
    const Grid g = grid_for(n);
    pad_kernel<T><<<g.blocks, g.threads, 0, stream>>>(static_cast<const T*>(x),
                                                      static_cast<T*>(out), n, geo,
                                                      convert_to<T>(value));
  }

  PadGeometry geo_;
  double value_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(pc::kernel<PadCuda>("pad_cuda"));

}  // namespace paddle_ops_math
