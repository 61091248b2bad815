// CUDA kernels of gather_nd, gather_nd_grad, scatter and scatter_nd. Same checks, index tests
// and write order (scatter.hpp) and dtypes as scatter_cpu.cpp's; scatter_grad and
// scatter_nd_grad have no CUDA kernel (they run on the CPU).
//
// Memory contract: as the CPU kernels' (C-contiguous; shapes and dtypes checked in prepare),
// all on the CUDA device of the plan's stream. Index values are checked on the host before any
// kernel reads or writes at them (host_index.cuh). The writes have one thread per column
// (scatter.hpp), applying its updates in order: repeated indices give the CPU's result,
// without atomics.
#include <vector>

#include "cuda.cuh"
#include "elementwise.hpp"
#include "host_index.cuh"
#include "scatter.hpp"

namespace paddle_ops_math {
namespace {

using pc::Attrs;
using pc::dispatch;
using pc::Floats;

// index's values (device memory) checked on the host.
void check_nd_on_host(const Tensor& index, const NdGeometry& g, cudaStream_t stream) {
  const std::vector<char> host = host_copy(index, stream);
  if (host.empty()) return;
  dispatch(index.dtype(), ScatterIndexTypes{},
           [&](auto t) { check_nd_index(reinterpret_cast<const decltype(t)*>(host.data()), g); });
}

void check_elements_on_host(const Tensor& index, int64_t size, cudaStream_t stream) {
  const std::vector<char> host = host_copy(index, stream);
  if (host.empty()) return;
  dispatch(index.dtype(), ScatterIndexTypes{}, [&](auto t) {
    check_elements_index(reinterpret_cast<const decltype(t)*>(host.data()), index.numel(), size);
  });
}

template <class U, class I>
__global__ void gather_nd_kernel(const U* x, const I* index, U* out, int64_t n, NdGeometry g) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t t = e / g.slice, j = e % g.slice;
    out[e] = x[t / g.tuples * g.batch_stride + g.offset(index + t * g.depth) + j];
  }
}

// out[n, t, :] = x[n, index[n, t], :], one thread per element, raw elements of any dtype.
class GatherNdCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllTypes;  // raw elements (by_element_size)
  GatherNdCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_nd(in(0), in(1), out(0), attrs.l("batch_dims"), "out")) {
    out(0).expect_dtype(in(0).dtype(), "out");
    expect_cuda(in, out);
    launch_ = dispatch(in(1).dtype(), ScatterIndexTypes{}, [&](auto t) -> Launch {
      using I = decltype(t);
      return by_element_size(in(0), "gather_nd",
                             [](auto u) -> Launch { return &launch<decltype(u), I>; });
    });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    check_nd_on_host(in(1), geo_, stream);
    const int64_t n = out(0).numel();
    if (n == 0) return;
    launch_(in(0).data<void>(), in(1).data<void>(), out(0).data<void>(), n, geo_, stream);
    check_launch();
  }

 private:
  using Launch = void (*)(const void*, const void*, void*, int64_t, const NdGeometry&,
                          cudaStream_t);
  template <class U, class I>
  static void launch(const void* x, const void* index, void* out, int64_t n,
                     const NdGeometry& geo, cudaStream_t stream) {
    const Grid g = grid_for(n);
    gather_nd_kernel<U, I><<<g.blocks, g.threads, 0, stream>>>(
        static_cast<const U*>(x), static_cast<const I*>(index), static_cast<U*>(out), n, geo);
  }

  NdGeometry geo_;
  Launch launch_ = nullptr;
};

// Column (batch n, element j of the slices): its updates, in order, combined into out.
template <class T, class I>
__global__ void scatter_nd_kernel(T* out, const I* index, const T* updates, NdGeometry g,
                                  Reduction r) {
  const int64_t columns = g.batch * g.slice;
  for (int64_t c = first_index(); c < columns; c += index_step()) {
    const int64_t n = c / g.slice, j = c % g.slice;
    for (int64_t k = 0; k < g.tuples; ++k) {
      const int64_t t = n * g.tuples + k;
      T& o = out[n * g.batch_stride + g.offset(index + t * g.depth) + j];
      o = combine(r, o, updates[t * g.slice + j]);
    }
  }
}

// Column c (scatter.hpp's ElementsGeometry): its updates along the axis, in order.
template <class T, class I>
__global__ void scatter_elements_kernel(T* out, const I* index, const T* updates,
                                        ElementsGeometry g, Reduction r) {
  const int64_t columns = g.outer * g.inner;
  for (int64_t c = first_index(); c < columns; c += index_step()) {
    const int64_t base = g.base(c);
    for (int64_t k = 0; k < g.count; ++k) {
      const int64_t e = g.element(c, k);
      T& o = out[base + index_position(static_cast<int64_t>(index[e]), g.size) * g.axis_stride];
      o = combine(r, o, updates[e]);
    }
  }
}

// scatter (Nd false) and scatter_nd: out = x (a copy on the stream), then the columns'
// writes; gather_nd_grad (Grad): zeros, then out_grad's slices added (scatter_nd's add with
// the batch dims). Inputs: x, index, updates (out_grad).
template <bool Nd, bool Grad = false> class ScatterCuda {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = std::conditional_t<Grad, Floats, AllTypes>;
  ScatterCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(geometry(attrs, in)), reduction_(Grad ? Reduction::kAdd : reduction_of(attrs)) {
    paddle_core::expect_same_shape(in(0), out(0), Grad ? "x and x_grad" : "x and out");
    paddle_core::expect_same_dtype(in(0), out(0), Grad ? "x and x_grad" : "x and out");
    paddle_core::expect_same_dtype(in(0), in(2), Grad ? "x and out_grad" : "x and updates");
    expect_cuda(in, out);
    auto pick = [&](auto t) -> Launch {
      using T = decltype(t);
      return dispatch(in(1).dtype(), ScatterIndexTypes{},
                      [](auto i) -> Launch { return &launch<T, decltype(i)>; });
    };
    launch_ = dispatch(in(0).dtype(), DTypes{}, pick);
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    if constexpr (Nd) {
      check_nd_on_host(in(1), geo_, stream);
    } else {
      check_elements_on_host(in(1), geo_.size, stream);
    }
    if (Grad) {
      zero_async(out(0).data<void>(), out(0).nbytes(), stream);
    } else {
      copy_async(out(0).data<void>(), in(0).data<void>(), in(0).nbytes(), stream);
    }
    if (in(2).numel() == 0) return;
    launch_(out(0).data<void>(), in(1).data<void>(), in(2).data<void>(), geo_, reduction_,
            stream);
    check_launch();
  }

 private:
  using Geometry = std::conditional_t<Nd, NdGeometry, ElementsGeometry>;
  using Launch = void (*)(void*, const void*, const void*, const Geometry&, Reduction,
                          cudaStream_t);

  static Geometry geometry(const Attrs& attrs, const Slots& in) {
    if constexpr (Nd) {
      return check_nd(in(0), in(1), in(2), Grad ? attrs.l("batch_dims") : 0,
                      Grad ? "out_grad" : "updates");
    } else {
      return check_elements(attrs.l("axis"), in(0), in(1), in(2));
    }
  }

  template <class T, class I>
  static void launch(void* out, const void* index, const void* updates, const Geometry& geo,
                     Reduction r, cudaStream_t stream) {
    if constexpr (Nd) {
      const Grid g = grid_for(geo.batch * geo.slice);
      scatter_nd_kernel<T, I><<<g.blocks, g.threads, 0, stream>>>(
          static_cast<T*>(out), static_cast<const I*>(index), static_cast<const T*>(updates),
          geo, r);
    } else {
      const Grid g = grid_for(geo.outer * geo.inner);
      scatter_elements_kernel<T, I><<<g.blocks, g.threads, 0, stream>>>(
          static_cast<T*>(out), static_cast<const I*>(index), static_cast<const T*>(updates),
          geo, r);
    }
  }

  Geometry geo_;
  Reduction reduction_;
  Launch launch_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<GatherNdCuda>("gather_nd_cuda"),
    pc::kernel<ScatterCuda<true, true>>("gather_nd_grad_cuda"),
    pc::kernel<ScatterCuda<false>>("scatter_cuda"),
    pc::kernel<ScatterCuda<true>>("scatter_nd_cuda"));

}  // namespace paddle_ops_math
