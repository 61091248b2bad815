// CUDA kernels of the index ops: gather, gather_grad and one_hot. Same checks (index.hpp) and
// dtypes as index_cpu.cpp's.
//
// Memory contract: as the CPU kernels' (C-contiguous; shapes and dtypes checked in prepare),
// all on the CUDA device of the plan's stream. Index values are checked before any kernel
// reads or writes at them: run copies the index tensor to the host, waits for it, and checks
// every value there (a KernelError naming the first out of range, as on the CPU). gather_grad
// has one thread per column (o, i) of x_grad that adds the rows in index order: repeated
// indices add up in the same order as on the CPU, without atomics.
#include <vector>

#include "cuda.cuh"
#include "elementwise.hpp"
#include "host_index.cuh"
#include "index.hpp"

namespace paddle_ops_math {
namespace {

using pc::Attrs;
using pc::dispatch;
using pc::Floats;

// Check index's values (in device memory) against [-size, size) or [0, size).
void check_device_index(const Tensor& index, int64_t size, bool negative, const char* range,
                        cudaStream_t stream) {
  const int64_t n = index.numel();
  if (n == 0) return;
  const std::vector<char> host = host_copy(index, stream);
  dispatch(index.dtype(), IndexTypes{}, [&](auto t) {
    using I = decltype(t);
    check_positions(reinterpret_cast<const I*>(host.data()), n, size, negative, range, nullptr);
  });
}

template <class U, class I>
__global__ void gather_kernel(const U* x, const I* index, U* out, int64_t n, int64_t count,
                              int64_t size, int64_t inner) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t i = e % inner, k = e / inner % count, o = e / inner / count;
    const int64_t at = gather_position(static_cast<int64_t>(index[k]), size);
    out[e] = x[(o * size + at) * inner + i];
  }
}

// out[o, k, :] = x[o, index[k], :], one thread per element, raw elements of any dtype.
class GatherCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllTypes;
  GatherCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_gather(attrs.i("axis"), in(0), in(1), out(0), "out")) {
    expect_cuda(in, out);
    launch_ = dispatch(in(1).dtype(), IndexTypes{}, [&](auto t) -> Launch {
      using I = decltype(t);
      return by_element_size(in(0), "gather",
                             [](auto u) -> Launch { return &launch<decltype(u), I>; });
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    check_device_index(in(1), geo_.size, true, "the gather axis", stream);
    const int64_t n = out(0).numel();
    if (n == 0) return;
    launch_(in(0).data<void>(), in(1).data<void>(), out(0).data<void>(), n, geo_, stream);
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, void*, int64_t, const GatherGeometry&,
                          cudaStream_t);
  template <class U, class I>
  static void launch(const void* x, const void* index, void* out, int64_t n,
                     const GatherGeometry& geo, cudaStream_t stream) {
    const Grid g = grid_for(n);
    gather_kernel<U, I><<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const U*>(x), static_cast<const I*>(index), static_cast<U*>(out), n,
        geo.count, geo.size, geo.inner);
  }

  GatherGeometry geo_;
  Launch launch_ = nullptr;
};

template <class T, class I>
__global__ void gather_grad_kernel(const T* g, const I* index, T* dx, int64_t columns,
                                   int64_t count, int64_t size, int64_t inner) {
  for (int64_t c = first_index(); c < columns; c += index_step()) {
    const int64_t o = c / inner, i = c % inner;
    for (int64_t k = 0; k < count; ++k) {
      const int64_t at = gather_position(static_cast<int64_t>(index[k]), size);
      dx[(o * size + at) * inner + i] += g[(o * count + k) * inner + i];
    }
  }
}

// x_grad = zeros of x's shape with out_grad's rows added at their indices.
class GatherGradCuda {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  GatherGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_gather(attrs.i("axis"), in(0), in(1), in(2), "out_grad")) {
    paddle_core::expect_same_shape(in(0), out(0), "x and x_grad");
    paddle_core::expect_same_dtype(in(0), out(0), "x and x_grad");
    expect_cuda(in, out);
    launch_ = dispatch(in(0).dtype(), DTypes{}, [&](auto t) -> Launch {
      using T = decltype(t);
      return dispatch(in(1).dtype(), IndexTypes{},
                      [](auto i) -> Launch { return &launch<T, decltype(i)>; });
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    check_device_index(in(1), geo_.size, true, "the gather axis", stream);
    zero_async(out(0).data<void>(), out(0).nbytes(), stream);
    const int64_t columns = geo_.outer * geo_.inner;
    if (columns == 0 || geo_.count == 0 || geo_.size == 0) return;
    launch_(in(2).data<void>(), in(1).data<void>(), out(0).data<void>(), columns, geo_, stream);
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, void*, int64_t, const GatherGeometry&,
                          cudaStream_t);
  template <class T, class I>
  static void launch(const void* g, const void* index, void* dx, int64_t columns,
                     const GatherGeometry& geo, cudaStream_t stream) {
    const Grid grid = grid_for(columns);
    gather_grad_kernel<T, I><<<grid.blocks, grid.threads, 0, stream>>>(
        static_cast<const T*>(g), static_cast<const I*>(index), static_cast<T*>(dx), columns,
        geo.count, geo.size, geo.inner);
  }

  GatherGeometry geo_;
  Launch launch_ = nullptr;
};

template <class T, class I>
__global__ void one_hot_kernel(const I* index, T* out, int64_t n, int64_t depth) {
  for (int64_t e = first_index(); e < n; e += index_step())
    out[e] = static_cast<int64_t>(index[e / depth]) == e % depth ? T(1) : T(0);
}

// out[..., j] = (j == index[...]), one thread per element of out.
class OneHotCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = IndexTypes;
  OneHotCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : depth_(check_one_hot(attrs, in(0), out(0))) {
    expect_cuda(in, out);
    launch_ = dispatch(out(0).dtype(), AllTypes{}, [&](auto t) -> Launch {
      using T = decltype(t);
      return dispatch(in(0).dtype(), DTypes{},
                      [](auto i) -> Launch { return &launch<T, decltype(i)>; });
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    check_device_index(in(0), depth_, false, "depth", stream);
    const int64_t n = out(0).numel();
    if (n == 0) return;
    launch_(in(0).data<void>(), out(0).data<void>(), n, depth_, stream);
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, void*, int64_t, int64_t, cudaStream_t);
  template <class T, class I>
  static void launch(const void* index, void* out, int64_t n, int64_t depth, cudaStream_t stream) {
    const Grid g = grid_for(n);
    one_hot_kernel<T, I><<<g.blocks, g.threads, 0, stream>>>(static_cast<const I*>(index),
                                                             static_cast<T*>(out), n, depth);
  }

  int64_t depth_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<GatherCuda>("gather_cuda"),
    pc::kernel<GatherGradCuda>("gather_grad_cuda"),
    pc::kernel<OneHotCuda>("one_hot_cuda"));

}  // namespace paddle_ops_math
