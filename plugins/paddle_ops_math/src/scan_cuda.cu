// CUDA kernels of the scans: cumsum. Same checks, types (scan.hpp) and dtypes as scan_cpu.cpp.
//
// Memory contract: as the CPU kernel's (x and out C-contiguous with one shape; out x's dtype,
// int64 for int32), on the CUDA device of the plan's stream. One thread per column (o, i) of
// the [outer, length, inner] view walks the axis in order, accumulating as the CPU does
// (double for floats, wrapping integers), so both devices give the same sums.
#include "cuda.cuh"
#include "scan.hpp"

namespace paddle_ops_math {
namespace {

using pc::Attrs;
using pc::dispatch;

template <class T>
__global__ void cumsum_kernel(const T* x, CumsumOut<T>* out, int64_t columns, int64_t length,
                              int64_t inner, bool exclusive, bool reverse) {
  using R = CumsumOut<T>;
  using A = CumsumAcc<T>;
  for (int64_t c = first_index(); c < columns; c += index_step()) {
    const int64_t base = c / inner * length * inner + c % inner;
    A acc = A(0);
    for (int64_t s = 0; s < length; ++s) {
      const int64_t at = base + (reverse ? length - 1 - s : s) * inner;
      const A v = static_cast<A>(static_cast<R>(x[at]));
      if (exclusive) {
        out[at] = static_cast<R>(acc);
        acc += v;
      } else {
        acc += v;
        out[at] = static_cast<R>(acc);
      }
    }
  }
}

class CumsumCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = CumsumTypes;
  CumsumCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_cumsum(attrs, in(0), out(0))),
        exclusive_(attrs.b("exclusive")),
        reverse_(attrs.b("reverse")) {
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t columns = geo_.outer * geo_.inner;
    if (columns == 0 || geo_.length == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), columns, geo_, exclusive_, reverse_,
            stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, const ScanGeometry&, bool, bool,
                          cudaStream_t);
  template <class T>
  static void launch(const void* x, void* out, int64_t columns, const ScanGeometry& geo,
                     bool exclusive, bool reverse, cudaStream_t stream) {
    const Grid g = grid_for(columns);
    cumsum_kernel<T><<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<CumsumOut<T>*>(out), columns, geo.length,
        geo.inner, exclusive, reverse);
  }

  ScanGeometry geo_;
  bool exclusive_, reverse_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(pc::kernel<CumsumCuda>("cumsum_cuda"));

}  // namespace paddle_ops_math
