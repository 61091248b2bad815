// CUDA kernels of the predicates isnan, isinf, isfinite, logical_not, of logical_and, or, xor
// with NumPy broadcasting (out bool), and of where(cond, x, y). Same formulas (functors.hpp),
// checks (elementwise.hpp) and dtypes as logic_cpu.cpp's.
//
// Memory contract: C-contiguous CUDA buffers; out bool (one byte, 0 or 1) with x's shape, or
// the broadcast shape for the binary ops; where's out has x's dtype and the broadcast shape of
// all three (checked in prepare).
#include <array>
#include <vector>

#include "elementwise.cuh"

namespace paddle_ops_math {
namespace {

using Bools = pc::Types<bool>;

// out = F(x) as bool.
template <class F, class TypeList> using PredicateCuda = UnaryCuda<F, TypeList, true>;

// The unsigned integer type of each element size: where copies elements, whatever they are.
template <int Size> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };

template <class E>
__global__ void where_kernel(const bool* c, const E* x, const E* y, E* out, int64_t n,
                             DimWalk<3> w) {
  for (int64_t i = first_index(); i < n; i += index_step()) {
    int64_t at[3] = {0, 0, 0};  // cond, x, y
    w.offsets(i, at);
    out[i] = c[at[0]] ? x[at[1]] : y[at[2]];
  }
}

// out = cond ? x : y, each input broadcast to out's shape.
class WhereCuda {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = AllTypes;
  WhereCuda(const Attrs&, const Slots& in, const Slots& out) : numel_(out(0).numel()) {
    const std::array<std::vector<int64_t>, 3> strides = check_where(in, out);
    expect_cuda(in, out);
    for (int32_t d = out(0).ndim() - 1; d >= 0; --d) {
      if (out(0).dim(d) == 1) continue;
      const int64_t at[3] = {strides[0][d], strides[1][d], strides[2][d]};
      walk_.push(out(0).dim(d), at, "this where");
    }
    switch (out(0).element_size()) {
      case 1: launch_ = &launch<1>; break;
      case 2: launch_ = &launch<2>; break;
      case 4: launch_ = &launch<4>; break;
      case 8: launch_ = &launch<8>; break;
      default: fail("where has no CUDA kernel for %s", pc::dtype_name(out(0).dtype()));
    }
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(0).data<void>(), in(1).data<void>(), in(2).data<void>(), out(0).data<void>(),
            numel_, walk_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, const void*, void*, int64_t,
                          const DimWalk<3>&, cudaStream_t);
  template <int Size>
  static void launch(const void* c, const void* x, const void* y, void* out, int64_t n,
                     const DimWalk<3>& w, cudaStream_t stream) {
    using E = typename Bits<Size>::type;
    const Grid g = grid_for(n);
    where_kernel<<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const bool*>(c), static_cast<const E*>(x), static_cast<const E*>(y),
        static_cast<E*>(out), n, w);
  }

  int64_t numel_;
  DimWalk<3> walk_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<PredicateCuda<IsNan, AllNumbers>>("isnan_cuda"),
    pc::kernel<PredicateCuda<IsInf, AllNumbers>>("isinf_cuda"),
    pc::kernel<PredicateCuda<IsFinite, AllNumbers>>("isfinite_cuda"),
    pc::kernel<PredicateCuda<Not, Bools>>("logical_not_cuda"),
    pc::kernel<BinaryCuda<And, Bools, true>>("logical_and_cuda"),
    pc::kernel<BinaryCuda<Or, Bools, true>>("logical_or_cuda"),
    pc::kernel<BinaryCuda<Xor, Bools, true>>("logical_xor_cuda"),
    pc::kernel<WhereCuda>("where_cuda"));

}  // namespace paddle_ops_math
