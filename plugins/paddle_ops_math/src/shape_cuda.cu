// CUDA kernels of the shape ops: reshape (also squeeze, unsqueeze and flatten), transpose,
// concat, split, stack, slice, broadcast_to (also expand), tile, tril, triu, shape, size,
// flatten_grad, stack_grad, slice_grad, broadcast_to_grad and tile_grad. Same checks and copies
// (shape.hpp) and dtypes as shape_cpu.cpp's.
//
// Memory contract: as the CPU kernels' (C-contiguous, outputs of the inferred shapes, inputs
// and outputs do not overlap; reshape alone may run in place), all on the CUDA device of the
// plan's stream. Except for broadcast_to_grad and tile_grad, which sum, the kernels only move
// elements of the dtype's size (tril and triu zero some): a contiguous copy is one
// cudaMemcpyAsync, any other a gather kernel with one thread per element.
#include <vector>

#include "cuda.cuh"
#include "elementwise.hpp"
#include "shape.hpp"

namespace paddle_ops_math {
namespace {

using pc::AllFloats;
using pc::compute_t;
using pc::dispatch;
using pc::Floats;

// A copy as the GPU walks it: shape.hpp's Copy, its dims innermost first with the element
// strides of dst and src, passed to the kernel by value.
struct CudaCopy {
  int64_t numel = 0, esize = 1, dst0 = 0, src0 = 0;
  bool flat = false;  // one contiguous run: a cudaMemcpyAsync
  DimWalk<2> walk;
};

CudaCopy to_cuda(const Copy& p) {
  CudaCopy c;
  c.numel = p.numel;
  c.esize = p.esize;
  c.dst0 = p.dst0;
  c.src0 = p.src0;
  if (p.numel == 0) return c;
  for (size_t k = p.dims.size(); k-- > 0;) {
    const int64_t strides[2] = {p.dst[k], p.src[k]};
    c.walk.push(p.dims[k], strides, "this copy");
  }
  c.flat = c.walk.n == 1 && c.walk.stride[0][0] == 1 && c.walk.stride[0][1] == 1;
  return c;
}

template <class U>
__global__ void gather_kernel(U* dst, const U* src, int64_t n, DimWalk<2> w) {
  for (int64_t i = first_index(); i < n; i += index_step()) {
    int64_t at[2] = {0, 0};  // dst, src
    w.offsets(i, at);
    dst[at[0]] = src[at[1]];
  }
}

template <class U>
void launch_gather(const CudaCopy& c, void* dst, const void* src, cudaStream_t stream) {
  const Grid g = grid_for(c.numel);
  gather_kernel<U><<<g.blocks, g.threads, 0, stream>>>(
      static_cast<U*>(dst) + c.dst0, static_cast<const U*>(src) + c.src0, c.numel, c.walk);
  check_launch();
}

// Enqueue the copy on the context's stream (nothing when empty).
void run_copy(const CudaCopy& c, void* dst, const void* src, const Context& ctx) {
  if (c.numel == 0) return;  // nothing to move (and the data pointers may be anything)
  const cudaStream_t stream = stream_of(ctx);
  if (c.flat) {
    copy_async(static_cast<char*>(dst) + c.dst0 * c.esize,
               static_cast<const char*>(src) + c.src0 * c.esize, c.numel * c.esize, stream);
    return;
  }
  switch (c.esize) {
    case 1:
      return launch_gather<uint8_t>(c, dst, src, stream);
    case 2:
      return launch_gather<uint16_t>(c, dst, src, stream);
    case 4:
      return launch_gather<uint32_t>(c, dst, src, stream);
    default:
      return launch_gather<uint64_t>(c, dst, src, stream);
  }
}

// reshape, transpose, slice, broadcast_to: out = one copy of x, planned by Check.
template <Copy (*Check)(const Attrs&, const Slots&, const Slots&)> class CopyCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  CopyCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : copy_(to_cuda(Check(attrs, in, out))) {
    expect_cuda(in, out);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (in(0).data<void>() == out(0).data<void>()) return;  // a reshape in place: nothing moves
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx);
  }

 private:
  CudaCopy copy_;
};

// flatten_grad: x_grad = out_grad's elements with x's shape (x's data is unread).
class FlattenGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllTypes;
  FlattenGradCuda(const Attrs&, const Slots& in, const Slots& out)
      : copy_(to_cuda(check_flatten_grad(in, out))) {
    expect_cuda(in, out);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(1).data<void>(), ctx);
  }

 private:
  CudaCopy copy_;
};

Copy reshape_copy(const Attrs&, const Slots& in, const Slots& out) {
  return check_reshape(in, out);
}
Copy broadcast_to_copy(const Attrs&, const Slots& in, const Slots& out) {
  return check_broadcast_to(in, out);
}

template <class U>
__global__ void triangle_kernel(const U* x, U* out, int64_t n, int64_t rows, int64_t cols,
                                int64_t diagonal, bool lower) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t j = e % cols, i = e / cols % rows;
    const bool before = j < triangle_split(lower, i, diagonal, cols);
    out[e] = before == lower ? x[e] : U(0);
  }
}

// tril (Lower) and triu: one thread per element, copied or zeroed (shape.hpp's split).
template <bool Lower> class TriangleCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  TriangleCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : shape_(check_triangle(attrs, in, out)) {
    expect_cuda(in, out);
    switch (in(0).element_size()) {
      case 1: launch_ = &launch<uint8_t>; break;
      case 2: launch_ = &launch<uint16_t>; break;
      case 4: launch_ = &launch<uint32_t>; break;
      default: launch_ = &launch<uint64_t>; break;
    }
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const int64_t n = shape_.batch * shape_.rows * shape_.cols;
    if (n == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), n, shape_, stream_of(ctx));
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, const Triangle&, cudaStream_t);
  template <class U>
  static void launch(const void* x, void* out, int64_t n, const Triangle& t,
                     cudaStream_t stream) {
    const Grid g = grid_for(n);
    triangle_kernel<U><<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const U*>(x), static_cast<U*>(out), n, t.rows, t.cols, t.diagonal, Lower);
  }

  Triangle shape_;
  Launch launch_ = nullptr;
};

std::vector<CudaCopy> to_cuda(const std::vector<Copy>& copies) {
  std::vector<CudaCopy> result;
  for (const Copy& p : copies) result.push_back(to_cuda(p));
  return result;
}

// The parts of a copy split into several tensors (concat, split, stack, stack_grad): Plan
// checks the parts against the whole and gives one copy per part.
using PlanParts = std::vector<Copy> (*)(const Slots&, const Tensor&, int64_t, bool);

// concat, stack: out = xs joined along axis (an existing one, or a new one): one copy per input.
template <PlanParts Plan> class JoinPartsCuda {
 public:
  static constexpr pc::Signature signature{"+", "1"};
  using DTypes = AllTypes;
  JoinPartsCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : copies_(to_cuda(Plan(in, out(0), attrs.i("axis"), true))) {
    expect_cuda(in, out);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      run_copy(copies_[i], out(0).data<void>(), in(0, static_cast<int32_t>(i)).data<void>(),
               ctx);
  }

 private:
  std::vector<CudaCopy> copies_;
};

// split, stack_grad: outs = x cut along axis, one copy per output.
template <PlanParts Plan> class CutPartsCuda {
 public:
  static constexpr pc::Signature signature{"1", "+"};
  using DTypes = AllTypes;
  CutPartsCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : copies_(to_cuda(Plan(out, in(0), attrs.i("axis"), false))) {
    expect_cuda(in, out);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      run_copy(copies_[i], out(0, static_cast<int32_t>(i)).data<void>(), in(0).data<void>(),
               ctx);
  }

 private:
  std::vector<CudaCopy> copies_;
};

// dst[at] += src[at'] along a copy's walk (16-bit floats added in float32).
template <class T>
__global__ void scatter_add_kernel(T* dst, const T* src, int64_t n, DimWalk<2> w) {
  using C = compute_t<T>;
  for (int64_t i = first_index(); i < n; i += index_step()) {
    int64_t at[2] = {0, 0};  // dst, src
    w.offsets(i, at);
    dst[at[0]] = T(C(dst[at[0]]) + C(src[at[1]]));
  }
}

template <class T>
void launch_scatter_add(const CudaCopy& c, void* dst, const void* src, cudaStream_t stream) {
  if (c.numel == 0) return;
  const Grid g = grid_for(c.numel);
  scatter_add_kernel<T><<<g.blocks, g.threads, 0, stream>>>(
      static_cast<T*>(dst) + c.dst0, static_cast<const T*>(src) + c.src0, c.numel, c.walk);
  check_launch();
}

// x_grad = zeros of x's shape with out_grad written where the slice took its elements; with
// x_grad_acc, x_grad_acc (copied unless it shares x_grad's buffer) with out_grad added there.
class SliceGradCuda {
 public:
  static constexpr pc::Signature signature{"11?", "1"};
  using DTypes = AllFloats;
  SliceGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : copy_(to_cuda(check_slice_grad(attrs, in, out))) {
    expect_cuda(in, out);
    bytes_ = in(0).nbytes();
    add_ = dispatch(in(0).dtype(), DTypes{},
                    [](auto t) -> Add { return &launch_scatter_add<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    if (in.has(2)) {
      if (in(2).data<void>() != out(0).data<void>())
        copy_async(out(0).data<void>(), in(2).data<void>(), bytes_, stream);
      add_(copy_, out(0).data<void>(), in(1).data<void>(), stream);
      return;
    }
    zero_async(out(0).data<void>(), bytes_, stream);
    run_copy(copy_, out(0).data<void>(), in(1).data<void>(), ctx);
  }

 private:
  int64_t bytes_ = 0;
  CudaCopy copy_;
  using Add = void (*)(const CudaCopy&, void*, const void*, cudaStream_t);
  Add add_ = nullptr;
};

// How x_grad walks out_grad: its own elements (in order) index the kept dims, the positions
// summed into each the broadcast dims; strides are out_grad's.
struct SumWalk {
  DimWalk<1> kept, summed;
  int64_t count = 1;  // positions summed into each element of x_grad
};

template <class T>
__global__ void sum_back_kernel(const T* g, T* out, int64_t m, SumWalk w) {
  for (int64_t t = first_index(); t < m; t += index_step()) {
    int64_t at[1] = {0};
    w.kept.offsets(t, at);
    compute_t<T> acc = 0;  // float16, bfloat16: summed in float32, as the CPU kernel does
    for (int64_t r = 0; r < w.count; ++r) {
      int64_t j[1] = {at[0]};
      w.summed.offsets(r, j);
      acc += static_cast<compute_t<T>>(g[j[0]]);
    }
    out[t] = static_cast<T>(acc);
  }
}

// A gradient that sums out_grad (input 1) into x_grad (output 0) along a walk: the summed
// dims of each element, one thread per element of x_grad, deterministic, no atomics. The
// subclass's constructor fills walk_ and calls ready().
class SumBackCuda {
 public:
  using DTypes = pc::AllFloats;
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (numel_ == 0) return;
    launch_(in(1).data<void>(), out(0).data<void>(), numel_, walk_, stream_of(ctx));
    check_launch();
  }

 protected:
  void ready(int64_t numel, int32_t dtype) {
    numel_ = numel;
    launch_ = dispatch(dtype, DTypes{}, [](auto t) -> Launch { return &launch<decltype(t)>; });
  }
  SumWalk walk_;

 private:
  using Launch = void (*)(const void*, void*, int64_t, const SumWalk&, cudaStream_t);
  template <class T>
  static void launch(const void* g, void* out, int64_t m, const SumWalk& w, cudaStream_t stream) {
    const Grid grid = grid_for(m);
    sum_back_kernel<T><<<grid.blocks, grid.threads, 0, stream>>>(static_cast<const T*>(g),
                                                                 static_cast<T*>(out), m, w);
  }

  int64_t numel_ = 0;
  Launch launch_ = nullptr;
};

// x_grad = out_grad summed over the dims x was broadcast along.
class BroadcastToGradCuda : public SumBackCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  BroadcastToGradCuda(const Attrs&, const Slots& in, const Slots& out) {
    const std::vector<int64_t> sx = check_broadcast_to_grad(in, out);
    expect_cuda(in, out);
    const Tensor g = in(1);
    int64_t sg = 1;
    for (int32_t k = g.ndim() - 1; k >= 0; --k) {
      const int64_t size = g.dim(k);
      if (size != 1) {
        const int64_t strides[1] = {sg};
        (sx[k] != 0 ? walk_.kept : walk_.summed).push(size, strides, "this gradient");
        if (sx[k] == 0) walk_.count *= size;
      }
      sg *= size;
    }
    ready(in(0).numel(), g.dtype());
  }
};

// x_grad = out_grad summed over the tiles: the tile view (shape.hpp) of out_grad, its repeat
// dims summed, its x dims kept.
class TileGradCuda : public SumBackCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  TileGradCuda(const Attrs& attrs, const Slots& in, const Slots& out) {
    const TileView v = check_tile_grad(attrs, in, out);
    expect_cuda(in, out);
    const std::vector<int64_t> sg = strides_of(v.dims);
    for (size_t k = v.dims.size(); k-- > 0;) {
      const int64_t size = v.dims[k], strides[1] = {sg[k]};
      if (v.src[k] == 0) walk_.count *= size;  // a repeat dim (0 repeats: nothing to sum)
      if (size <= 1) continue;
      (v.src[k] != 0 ? walk_.kept : walk_.summed).push(size, strides, "this gradient");
    }
    ready(in(0).numel(), in(0).dtype());
  }
};

Copy tile_copy(const Attrs& attrs, const Slots& in, const Slots& out) {
  return check_tile(attrs, in, out);
}

// shape, size: out = x's dims (or element count), worked out in prepare and copied from the
// kernel's own host memory on the stream; x's data is unread.
template <bool Size> class ShapeOfCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;  // x's data is unread
  ShapeOfCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : values_(check_shape_of(attrs, in(0), out(0), Size)) {
    expect_cuda(in, out);
  }
  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const int64_t bytes = static_cast<int64_t>(values_.size() * sizeof(int64_t));
    if (bytes == 0) return;
    const cudaError_t error =
        cudaMemcpyAsync(out(0).data<void>(), values_.data(), static_cast<size_t>(bytes),
                        cudaMemcpyHostToDevice, stream_of(ctx));
    if (error != cudaSuccess)
      fail("CUDA copy failed: %s (%s)", cudaGetErrorString(error), cudaGetErrorName(error));
  }

 private:
  std::vector<int64_t> values_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<CopyCuda<reshape_copy>>("reshape_cuda"),
    pc::kernel<FlattenGradCuda>("flatten_grad_cuda"),
    pc::kernel<CopyCuda<check_transpose>>("transpose_cuda"),
    pc::kernel<JoinPartsCuda<plan_join>>("concat_cuda"),
    pc::kernel<CutPartsCuda<plan_join>>("split_cuda"),
    pc::kernel<JoinPartsCuda<plan_stack>>("stack_cuda"),
    pc::kernel<CutPartsCuda<plan_stack>>("stack_grad_cuda"),
    pc::kernel<CopyCuda<check_slice>>("slice_cuda"),
    pc::kernel<SliceGradCuda>("slice_grad_cuda"),
    pc::kernel<CopyCuda<broadcast_to_copy>>("broadcast_to_cuda"),
    pc::kernel<BroadcastToGradCuda>("broadcast_to_grad_cuda"),
    pc::kernel<CopyCuda<tile_copy>>("tile_cuda"),
    pc::kernel<TileGradCuda>("tile_grad_cuda"),
    pc::kernel<TriangleCuda<true>>("tril_cuda"),
    pc::kernel<TriangleCuda<false>>("triu_cuda"),
    pc::kernel<ShapeOfCuda<false>>("shape_cuda"),
    pc::kernel<ShapeOfCuda<true>>("size_cuda"));

}  // namespace paddle_ops_math
