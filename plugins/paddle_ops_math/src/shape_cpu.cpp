// Shape ops: reshape (also squeeze, unsqueeze and flatten), transpose, concat, split, stack,
// slice, broadcast_to (also expand), tile, tril and triu, shape and size, and the grad kernels
// flatten_grad, stack_grad, slice_grad, broadcast_to_grad and tile_grad.
//
// Memory contract: C-contiguous tensors; outputs have the shapes the shape rules inferred, and
// prepare checks them against the inputs and attrs, so every copy stays in bounds (empty
// tensors copy nothing). Except for broadcast_to_grad and tile_grad, which sum, the kernels move
// elements (tril and triu zero some): raw elements of the dtype's size, with no per-dtype code. Inputs and
// outputs do not overlap; reshape alone may run in place (a no-op).
#include <cstring>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "common.hpp"
#include "shape.hpp"

namespace paddle_ops_math {
namespace {

// -- the strided copy behind every kernel (planned by shape.hpp's plan_copy) --------------------

// Elements [lo, hi) of the index space in order, run by run: f(d, s, len) for each run's
// stretch, d and s its first elements' offsets in dst and src (strides p.dst/p.src.back()).
template <class F> void for_each_run(const Copy& p, int64_t lo, int64_t hi, F&& f) {
  const int32_t nd = static_cast<int32_t>(p.dims.size());
  const int64_t n = p.dims[nd - 1], ds = p.dst[nd - 1], ss = p.src[nd - 1];
  std::vector<int64_t> idx(nd, 0);  // outer index of the current run
  int64_t row = lo / n, col = lo % n, od = 0, os = 0;
  for (int32_t k = nd - 2; k >= 0; --k) {
    idx[k] = row % p.dims[k];
    row /= p.dims[k];
    od += idx[k] * p.dst[k];
    os += idx[k] * p.src[k];
  }
  for (int64_t e = lo; e < hi; col = 0) {
    const int64_t len = std::min(n - col, hi - e);
    f(od + col * ds, os + col * ss, len);
    e += len;
    for (int32_t k = nd - 2; k >= 0; --k) {  // advance to the next run
      od += p.dst[k];
      os += p.src[k];
      if (++idx[k] < p.dims[k]) break;
      od -= p.dst[k] * p.dims[k];
      os -= p.src[k] * p.dims[k];
      idx[k] = 0;
    }
  }
}

template <class U> void copy_runs(const Copy& p, U* dst, const U* src, int64_t lo, int64_t hi) {
  const int64_t ds = p.dst.back(), ss = p.src.back();
  for_each_run(p, lo, hi, [&](int64_t od, int64_t os, int64_t len) {
    U* d = dst + od;
    const U* s = src + os;
    if (ds == 1 && ss == 1) {
      std::memcpy(d, s, len * sizeof(U));
    } else if (ds == 1 && ss == 0) {
      std::fill(d, d + len, *s);
    } else {
      for (int64_t i = 0; i < len; ++i) d[i * ds] = s[i * ss];
    }
  });
}

// dst += src along the copy `p` (elements of type T; 16-bit floats added in float32).
template <class T> void add_along(const Copy& p, void* dst, const void* src, int32_t threads) {
  if (p.numel == 0) return;
  T* d0 = static_cast<T*>(dst) + p.dst0;
  const T* s0 = static_cast<const T*>(src) + p.src0;
  const int64_t ds = p.dst.back(), ss = p.src.back();
  using C = pc::compute_t<T>;
  parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
    for_each_run(p, lo, hi, [&](int64_t od, int64_t os, int64_t len) {
      T* d = d0 + od;
      const T* s = s0 + os;
      for (int64_t i = 0; i < len; ++i) d[i * ds] = T(C(d[i * ds]) + C(s[i * ss]));
    });
  });
}

constexpr int64_t kTile = 32;

#if defined(__SSE2__)
// d[i * ds + j] = s[j * ss + i] for i, j in [0, 4), 4-byte elements (SSE2: every x86-64 CPU).
template <class U> inline void transpose4x4(U* d, int64_t ds, const U* s, int64_t ss) {
  __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(s));
  __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(s + ss));
  __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(s + 2 * ss));
  __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(s + 3 * ss));
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);  // shuffles: bit patterns move unchanged, NaNs included
  _mm_storeu_ps(reinterpret_cast<float*>(d), r0);
  _mm_storeu_ps(reinterpret_cast<float*>(d + ds), r1);
  _mm_storeu_ps(reinterpret_cast<float*>(d + 2 * ds), r2);
  _mm_storeu_ps(reinterpret_cast<float*>(d + 3 * ds), r3);
}
#endif

// Transposes: work item = kTile rows of dim `tile` (contiguous in src) for one index of the
// other outer dims, copied in kTile x kTile blocks against the innermost dim.
template <class U> void copy_tiles(const Copy& p, U* dst, const U* src, int64_t lo, int64_t hi) {
  const int32_t last = static_cast<int32_t>(p.dims.size()) - 1, q = p.tile;
  const int64_t rows = p.dims[q], cols = p.dims[last], dq = p.dst[q], sc = p.src[last];
  const int64_t blocks = (rows + kTile - 1) / kTile;
  for (int64_t item = lo; item < hi; ++item) {
    int64_t rest = item / blocks, od = 0, os = 0;
    for (int32_t k = last - 1; k >= 0; --k) {
      if (k == q) continue;
      const int64_t i = rest % p.dims[k];
      rest /= p.dims[k];
      od += i * p.dst[k];
      os += i * p.src[k];
    }
    const int64_t r0 = item % blocks * kTile, r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      int64_t r = r0;
#if defined(__SSE2__)
      if constexpr (sizeof(U) == 4) {  // 4 x 4 blocks through registers, 4 elements a move
        for (; r + 4 <= r1; r += 4) {
          int64_t c = c0;
          for (; c + 4 <= c1; c += 4)
            transpose4x4(dst + od + r * dq + c, dq, src + os + r + c * sc, sc);
          for (; c < c1; ++c)
            for (int64_t i = 0; i < 4; ++i) dst[od + (r + i) * dq + c] = src[os + r + i + c * sc];
        }
      }
#endif
      for (; r < r1; ++r) {
        U* d = dst + od + r * dq;
        const U* s = src + os + r;
        for (int64_t c = c0; c < c1; ++c) d[c] = s[c * sc];
      }
    }
  }
}

template <class U> void run_copy_as(const Copy& p, void* dst, const void* src, int32_t threads) {
  U* d = static_cast<U*>(dst) + p.dst0;
  const U* s = static_cast<const U*>(src) + p.src0;
  if (p.tile < 0) {
    parallel_for(p.numel, threads, kGrain,
                 [&](int64_t lo, int64_t hi) { copy_runs(p, d, s, lo, hi); });
    return;
  }
  const int64_t rows = p.dims[p.tile], cols = p.dims.back();
  const int64_t items = p.numel / (rows * cols) * ((rows + kTile - 1) / kTile);
  parallel_for(items, threads, std::max<int64_t>(1, kGrain / (kTile * cols)),
               [&](int64_t lo, int64_t hi) { copy_tiles(p, d, s, lo, hi); });
}

void run_copy(const Copy& p, void* dst, const void* src, int32_t threads) {
  if (p.numel == 0) return;  // nothing to move (and the data pointers may be anything)
  switch (p.esize) {
    case 1:
      return run_copy_as<uint8_t>(p, dst, src, threads);
    case 2:
      return run_copy_as<uint16_t>(p, dst, src, threads);
    case 4:
      return run_copy_as<uint32_t>(p, dst, src, threads);
    default:
      return run_copy_as<uint64_t>(p, dst, src, threads);
  }
}

// -- kernels ------------------------------------------------------------------------------------

// reshape, squeeze, unsqueeze: the same elements in the same order, so one flat copy.
class Reshape {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Reshape(const Attrs&, const Slots& in, const Slots& out) : copy_(check_reshape(in, out)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (in(0).data<void>() == out(0).data<void>()) return;  // in place: nothing moves
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// flatten_grad: x_grad = out_grad's elements with x's shape (x gives the shape, its data is
// unread). Inputs: x, out_grad; output: x_grad.
class FlattenGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllTypes;
  FlattenGrad(const Attrs&, const Slots& in, const Slots& out)
      : copy_(check_flatten_grad(in, out)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(1).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// out = x with its axes permuted: out.dim(k) = x.dim(perm[k]); empty perm reverses them.
class Transpose {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Transpose(const Attrs& attrs, const Slots& in, const Slots& out)
      : copy_(check_transpose(attrs, in, out)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// The parts of a copy split into several tensors (concat, split, stack, stack_grad): Plan
// checks the parts against the whole and gives one copy per part.
using PlanParts = std::vector<Copy> (*)(const Slots&, const Tensor&, int64_t, bool);

// concat, stack: out = xs joined along axis (an existing one, or a new one).
template <PlanParts Plan> class JoinParts {
 public:
  static constexpr pc::Signature signature{"+", "1"};
  using DTypes = AllTypes;
  JoinParts(const Attrs& attrs, const Slots& in, const Slots& out)
      : copies_(Plan(in, out(0), attrs.i("axis"), true)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      run_copy(copies_[i], out(0).data<void>(), in(0, static_cast<int32_t>(i)).data<void>(),
               ctx.num_threads());
  }

 private:
  std::vector<Copy> copies_;
};

// split, stack_grad: outs = x cut along axis into the outputs' sizes (the shape rule turned
// num or sections into those sizes), or into its slices along axis.
template <PlanParts Plan> class CutParts {
 public:
  static constexpr pc::Signature signature{"1", "+"};
  using DTypes = AllTypes;
  CutParts(const Attrs& attrs, const Slots& in, const Slots& out)
      : copies_(Plan(out, in(0), attrs.i("axis"), false)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    for (size_t i = 0; i < copies_.size(); ++i)
      run_copy(copies_[i], out(0, static_cast<int32_t>(i)).data<void>(), in(0).data<void>(),
               ctx.num_threads());
  }

 private:
  std::vector<Copy> copies_;
};

// out = x sliced.
class Slice {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Slice(const Attrs& attrs, const Slots& in, const Slots& out)
      : copy_(check_slice(attrs, in, out)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// x_grad = zeros of x's shape with out_grad written where the slice took its elements; with
// x_grad_acc, x_grad = x_grad_acc with out_grad added there (in place when the planner gave
// them one buffer: then only the slice's elements are touched).
// Inputs: x (for its shape), out_grad, x_grad_acc (optional); output: x_grad.
class SliceGrad {
 public:
  static constexpr pc::Signature signature{"11?", "1"};
  using DTypes = AllFloats;
  SliceGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : bytes_(in(0).nbytes()), copy_(check_slice_grad(attrs, in, out)) {
    add_ = dispatch(in(0).dtype(), DTypes{},
                    [](auto t) -> Add { return &add_along<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    char* dst = out(0).data<char>();
    const int32_t threads = ctx.num_threads();
    if (in.has(2)) {
      const char* acc = in(2).data<char>();
      if (acc != dst)
        parallel_for(bytes_, threads, 4 * kGrain,
                     [&](int64_t lo, int64_t hi) { std::memcpy(dst + lo, acc + lo, hi - lo); });
      add_(copy_, dst, in(1).data<void>(), threads);
      return;
    }
    parallel_for(bytes_, threads, 4 * kGrain,
                 [&](int64_t lo, int64_t hi) { std::memset(dst + lo, 0, hi - lo); });
    run_copy(copy_, dst, in(1).data<void>(), threads);
  }

 private:
  using Add = void (*)(const Copy&, void*, const void*, int32_t);
  int64_t bytes_ = 0;
  Copy copy_;
  Add add_ = nullptr;
};

// broadcast_to, expand: out = x repeated along its size-1 and missing leading dims.
class BroadcastTo {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  BroadcastTo(const Attrs&, const Slots& in, const Slots& out)
      : copy_(check_broadcast_to(in, out)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// x_grad = out_grad summed over the dims x was broadcast along. Inputs: x (for its shape),
// out_grad; output: x_grad.
class BroadcastToGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  BroadcastToGrad(const Attrs&, const Slots& in, const Slots& out) {
    check_broadcast_to_grad(in, out);
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context&) const { fn_(in(1), out(0)); }

 private:
  using Fn = void (*)(const Tensor&, const Tensor&);
  template <class T> static void compute(const Tensor& g, const Tensor& gx) {
    reduce_to(g.data<T>(), g, gx.data<T>(), gx);
  }
  Fn fn_;
};

// tile: out = x repeated along each axis (numpy.tile).
class Tile {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Tile(const Attrs& attrs, const Slots& in, const Slots& out) : copy_(check_tile(attrs, in, out)) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_copy(copy_, out(0).data<void>(), in(0).data<void>(), ctx.num_threads());
  }

 private:
  Copy copy_;
};

// x_grad = out_grad summed over the tiles. Inputs: x (for its shape), out_grad; output: x_grad.
// Walks out_grad in order, adding each element at its place in x (the tile view's strides).
class TileGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  TileGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : view_(check_tile_grad(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context&) const {
    fn_(view_, in(1).data<void>(), in(1).numel(), out(0).data<void>(), out(0).numel());
  }

 private:
  using Fn = void (*)(const TileView&, const void*, int64_t, void*, int64_t);
  template <class T>
  static void compute(const TileView& v, const void* gv, int64_t n, void* dxv, int64_t m) {
    const T* g = static_cast<const T*>(gv);
    T* dx = static_cast<T*>(dxv);
    std::fill(dx, dx + m, T(0));
    if (n == 0) return;
    const int32_t nd = static_cast<int32_t>(v.dims.size());
    std::vector<int64_t> idx(nd, 0);
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
      dx[at] += g[i];
      for (int32_t k = nd - 1; k >= 0; --k) {  // next index of the view, like an odometer
        at += v.src[k];
        if (++idx[k] < v.dims[k]) break;
        at -= v.src[k] * v.dims[k];
        idx[k] = 0;
      }
    }
  }

  TileView view_;
  Fn fn_;
};

// tril (Lower) and triu: each row of each matrix is copied in part and zeroed in part, as raw
// bytes of any dtype (zero bytes are 0, 0.0 and false).
template <bool Lower> class TriangleKernel {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  TriangleKernel(const Attrs& attrs, const Slots& in, const Slots& out)
      : shape_(check_triangle(attrs, in, out)), esize_(in(0).element_size()) {}
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const char* x = in(0).data<char>();
    char* o = out(0).data<char>();
    const int64_t rows = shape_.rows, cols = shape_.cols, width = cols * esize_;
    parallel_rows(shape_.batch * rows, ctx.num_threads(),
                  std::max<int64_t>(1, kGrain / std::max<int64_t>(1, cols)),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t r = lo; r < hi; ++r) {
                      const int64_t split = triangle_split(Lower, r % rows, shape_.diagonal, cols);
                      const int64_t cut = split * esize_;
                      const char* s = x + r * width;
                      char* d = o + r * width;
                      if (Lower) {
                        std::memcpy(d, s, static_cast<size_t>(cut));
                        std::memset(d + cut, 0, static_cast<size_t>(width - cut));
                      } else {
                        std::memset(d, 0, static_cast<size_t>(cut));
                        std::memcpy(d + cut, s + cut, static_cast<size_t>(width - cut));
                      }
                    }
                  });
  }

 private:
  Triangle shape_;
  int64_t esize_;
};

// shape, size: out = x's dims (or element count), worked out in prepare; x's data is unread.
template <bool Size> class ShapeOf {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;  // x's data is unread
  ShapeOf(const Attrs& attrs, const Slots& in, const Slots& out)
      : values_(check_shape_of(attrs, in(0), out(0), Size)) {}
  void run(const Slots&, const Slots& out, const Context&) const {
    std::copy(values_.begin(), values_.end(), out(0).data<int64_t>());
  }

 private:
  std::vector<int64_t> values_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Reshape>("reshape"),
    pc::kernel<FlattenGrad>("flatten_grad"),
    pc::kernel<Transpose>("transpose"),
    pc::kernel<JoinParts<plan_join>>("concat"),
    pc::kernel<CutParts<plan_join>>("split"),
    pc::kernel<JoinParts<plan_stack>>("stack"),
    pc::kernel<CutParts<plan_stack>>("stack_grad"),
    pc::kernel<Slice>("slice"),
    pc::kernel<SliceGrad>("slice_grad"),
    pc::kernel<BroadcastTo>("broadcast_to"),
    pc::kernel<AsFloat32<BroadcastToGrad>>("broadcast_to_grad"),
    pc::kernel<Tile>("tile"),
    pc::kernel<AsFloat32<TileGrad>>("tile_grad"),
    pc::kernel<TriangleKernel<true>>("tril"),
    pc::kernel<TriangleKernel<false>>("triu"),
    pc::kernel<ShapeOf<false>>("shape"),
    pc::kernel<ShapeOf<true>>("size"));

}  // namespace paddle_ops_math
