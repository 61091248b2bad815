// CUDA kernels of scale, cast, fill_constant and full_like (fill), assign, range. Same
// formulas (functors.hpp: ScaleBy, convert_to, RangeAt), checks (elementwise.hpp) and dtypes
// as fill_cpu.cpp.
// Also the core's fill_like (paddle_core/builtin/ops.pbtxt), which seeds every backward.
//
// Memory contract: C-contiguous CUDA buffers; outputs have the shapes the shape rules
// inferred (checked in prepare).
#include "elementwise.cuh"

namespace paddle_ops_math {
namespace {

// out = scale * x + bias, or scale * (x + bias) when bias_after_scale is false.
class ScaleCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllNumbers;
  ScaleCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : scale_(attrs.f("scale")), bias_(attrs.f("bias")), numel_(in(0).numel()) {
    check_unary(in, out);
    expect_cuda(in, out);
    const bool after = attrs.b("bias_after_scale");
    launch_ = dispatch(in(0).dtype(), DTypes{}, [&](auto t) -> Launch {
      using T = decltype(t);
      return after ? &launch<ScaleBy<true>, T> : &launch<ScaleBy<false>, T>;
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(*this, in(0).data<void>(), out(0).data<void>(), stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const ScaleCuda&, const void*, void*, cudaStream_t);
  template <class F, class T>
  static void launch(const ScaleCuda& self, const void* x, void* out, cudaStream_t stream) {
    const Grid g = grid_for(self.numel_);
    map_kernel<<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(out), self.numel_, F{self.scale_, self.bias_});
  }
  double scale_, bias_;
  int64_t numel_;
  Launch launch_;
};

// out = x converted to the out tensor's dtype.
class CastCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  CastCuda(const Attrs&, const Slots& in, const Slots& out) : numel_(in(0).numel()) {
    check_cast(in, out);
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{}, [&](auto s) -> Launch {
      return dispatch(out(0).dtype(), AllTypes{},
                      [](auto d) -> Launch { return &launch<decltype(s), decltype(d)>; });
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), numel_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, cudaStream_t);
  template <class S, class D>
  static void launch(const void* x, void* out, int64_t n, cudaStream_t stream) {
    const Grid g = grid_for(n);
    map_kernel<<<g.blocks, g.threads, 0, stream>>>(static_cast<const S*>(x),
                                                   static_cast<D*>(out), n, ConvertTo<D>{});
  }
  int64_t numel_;
  Launch launch_;
};

template <class T> __global__ void fill_kernel(T* out, int64_t n, T value) {
  for (int64_t i = first_index(); i < n; i += index_step()) out[i] = value;
}

// out = value everywhere (fill_constant has no inputs; full_like takes its shape from x).
class FillCuda {
 public:
  static constexpr pc::Signature signature{"?", "1"};
  using DTypes = AllTypes;
  FillCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : value_(attrs.f("value")), numel_(out(0).numel()) {
    expect_cuda(in, out);
    launch_ = dispatch(out(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }
  void run(const Slots&, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(out(0).data<void>(), numel_, value_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(void*, int64_t, double, cudaStream_t);
  template <class T> static void launch(void* out, int64_t n, double value, cudaStream_t stream) {
    const Grid g = grid_for(n);
    fill_kernel<<<g.blocks, g.threads, 0, stream>>>(static_cast<T*>(out), n,
                                                    convert_to<T>(value));
  }
  double value_;
  int64_t numel_;
  Launch launch_;
};

// fill_like: the fill, with out of x's shape and dtype (checked like the core's CPU kernel).
class FillLikeCuda : public FillCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  FillLikeCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : FillCuda(attrs, in, out) {
    check_unary(in, out);
  }
};

template <class T> __global__ void range_kernel(T* out, int64_t n, RangeAt<T> f) {
  for (int64_t i = first_index(); i < n; i += index_step()) out[i] = f(i);
}

// out[i] = start + i * delta (RangeAt, as on the CPU).
class RangeCuda {
 public:
  static constexpr pc::Signature signature{"", "1"};
  using DTypes = AllNumbers;
  RangeCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : start_(attrs.f("start")), delta_(attrs.f("delta")), numel_(out(0).numel()) {
    expect_cuda(in, out);
    if (out(0).ndim() != 1) fail("out %s must be 1-D", out(0).describe().c_str());
    launch_ = dispatch(out(0).dtype(), DTypes{},
                       [](auto t) -> Launch { return &launch<decltype(t)>; });
  }
  void run(const Slots&, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(out(0).data<void>(), numel_, start_, delta_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(void*, int64_t, double, double, cudaStream_t);
  template <class T>
  static void launch(void* out, int64_t n, double start, double delta, cudaStream_t stream) {
    const Grid g = grid_for(n);
    range_kernel<<<g.blocks, g.threads, 0, stream>>>(static_cast<T*>(out), n,
                                                     RangeAt<T>{start, delta});
  }
  double start_, delta_;
  int64_t numel_;
  Launch launch_;
};

// out = x (a copy on the stream).
class AssignCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  AssignCuda(const Attrs&, const Slots& in, const Slots& out) {
    check_unary(in, out);
    expect_cuda(in, out);
    bytes_ = in(0).numel() *
             dispatch(in(0).dtype(), DTypes{}, [](auto t) { return int64_t(sizeof(t)); });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    copy_async(out(0).data<void>(), in(0).data<void>(), bytes_, stream_of(ctx));
  }

 private:
  int64_t bytes_ = 0;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<ScaleCuda>("scale_cuda"),
    pc::kernel<CastCuda>("cast_cuda"),
    pc::kernel<FillCuda>("fill_cuda"),
    pc::kernel<FillLikeCuda>("fill_like_cuda"),
    pc::kernel<AssignCuda>("assign_cuda"),
    pc::kernel<RangeCuda>("range_cuda"));

}  // namespace paddle_ops_math
