// Indexed reads and writes: gather_nd (with gather_nd_grad, a scatter-add), scatter (ONNX's
// ScatterElements) and scatter_nd (ONNX's ScatterND), each with reductions none, add, mul,
// max and min, and their gradients.
//
// Memory contract: C-contiguous tensors; shapes and dtypes checked in prepare (scatter.hpp),
// every index value in run before the first element is read or written: one out of range is
// a KernelError naming it and its flat position. Writes run column by column (scatter.hpp),
// each column's updates in order, so repeated indices give one result whatever the thread
// count. float16 and bfloat16 updates combine in float32, each result rounded (as NumPy's
// float16 ufuncs give); the gradients compute them in float32 (AsFloat32) and keep per-element
// statistics of out in scratch memory of x's size.
#include <cstring>
#include <vector>

#include "common.hpp"
#include "scatter.hpp"
#include "shape.hpp"  // element_size

namespace paddle_ops_math {
namespace {

// -- where the writes go ----------------------------------------------------------------------

// scatter: column c's k-th update is element element(c, k) of updates, written at x's element
// base(c) + position * axis_stride.
struct ElementsWrites {
  const ElementsGeometry& g;
  const std::vector<int64_t>& positions;  // per element of index, in [0, size)
  int64_t columns() const { return g.columns(); }
  template <class F> void walk(int64_t c, F&& f) const {
    const int64_t base = g.base(c);
    for (int64_t k = 0; k < g.count; ++k) {
      const int64_t e = g.element(c, k);
      f(e, base + positions[e] * g.axis_stride);
    }
  }
};

// scatter_nd, gather_nd_grad: column (n, j) is element j of the slices of batch n; its k-th
// update is element (n * tuples + k) * slice + j of the values.
struct NdWrites {
  const NdGeometry& g;
  const std::vector<int64_t>& offsets;  // per (batch, tuple): the slice's offset in x
  int64_t columns() const { return g.batch * g.slice; }
  template <class F> void walk(int64_t c, F&& f) const {
    const int64_t n = c / g.slice, j = c % g.slice;
    for (int64_t k = 0; k < g.tuples; ++k) {
      const int64_t t = n * g.tuples + k;
      f(t * g.slice + j, offsets[t] + j);
    }
  }
};

// index's values as positions along the scatter axis, checked.
std::vector<int64_t> element_positions(const Tensor& index, int64_t size) {
  std::vector<int64_t> positions(static_cast<size_t>(index.numel()));
  dispatch(index.dtype(), ScatterIndexTypes{}, [&](auto t) {
    using I = decltype(t);
    const I* values = index.data<I>();
    check_elements_index(values, index.numel(), size);
    for (size_t e = 0; e < positions.size(); ++e)
      positions[e] = index_position(static_cast<int64_t>(values[e]), size);
  });
  return positions;
}

// Each index tuple's slice offset in x (its batch's included), checked.
std::vector<int64_t> nd_offsets(const Tensor& index, const NdGeometry& g) {
  std::vector<int64_t> offsets(static_cast<size_t>(g.batch * g.tuples));
  dispatch(index.dtype(), ScatterIndexTypes{}, [&](auto t) {
    using I = decltype(t);
    const I* values = index.data<I>();
    check_nd_index(values, g);
    for (size_t k = 0; k < offsets.size(); ++k)
      offsets[k] = static_cast<int64_t>(k) / g.tuples * g.batch_stride +
                   g.offset(values + k * g.depth);
  });
  return offsets;
}

// Columns in parallel, in chunks big enough for the writes they make; none when no column
// makes any (x may still have many: [0, 2^31 - 1, 4] scattered along its empty axis).
template <class W, class F>
void for_columns(const W& w, int64_t per_column, int32_t threads, F&& f) {
  if (per_column == 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, per_column));
  parallel_for(w.columns(), threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) f(c);
  });
}

// out = x, then each update combined into out at its target, column by column.
template <class T, class W>
void scatter_into(const W& w, int64_t per_column, Reduction r, const T* updates, T* out,
                  int32_t threads) {
  for_columns(w, per_column, threads, [&](int64_t c) {
    w.walk(c, [&](int64_t e, int64_t t) { out[t] = combine(r, out[t], updates[e]); });
  });
}

// The gradients of out = x with updates combined in (reduction r), from out_grad g; either
// output pointer may be null. Every element of x_grad starts as g (an element no update
// reaches passes its gradient through); the targets then get what r gives them.
template <class T, class W>
void scatter_gradients(const W& w, int64_t per_column, Reduction r, const T* x, const T* u,
                       const T* out, const T* g, T* dx, T* du, int64_t x_size,
                       int32_t threads) {
  if (dx != nullptr) std::copy(g, g + x_size, dx);
  if (r == Reduction::kAdd) {
    if (du != nullptr)
      for_columns(w, per_column, threads,
                  [&](int64_t c) { w.walk(c, [&](int64_t e, int64_t t) { du[e] = g[t]; }); });
    return;
  }
  if (r == Reduction::kNone) {  // the last update of each target gets its gradient, x none
    std::vector<int64_t> last(static_cast<size_t>(x_size));
    for_columns(w, per_column, threads, [&](int64_t c) {
      w.walk(c, [&](int64_t e, int64_t t) { last[t] = e; });
      w.walk(c, [&](int64_t e, int64_t t) {
        if (du != nullptr) du[e] = last[t] == e ? g[t] : T(0);
        if (dx != nullptr) dx[t] = T(0);
      });
    });
    return;
  }
  // mul: each factor's gradient is g times the product of the others (exact with zeros: the
  // nonzero factors' product and the count of zeros, as prod_grad). max, min: g goes to the
  // factors equal to out, split evenly among ties; none where out is NaN (as max_grad).
  std::vector<double> product(static_cast<size_t>(x_size));
  std::vector<int64_t> count(static_cast<size_t>(x_size));
  const bool mul = r == Reduction::kMul;
  auto see = [&](T v, int64_t t) {
    if (mul) {
      if (v == T(0)) ++count[t];
      else product[t] *= static_cast<double>(v);
    } else if (v == out[t]) {
      ++count[t];
    }
  };
  auto grad = [&](T v, int64_t t) -> T {
    if (mul) {
      if (count[t] == 0) return static_cast<T>(g[t] * (product[t] / static_cast<double>(v)));
      return count[t] == 1 && v == T(0) ? static_cast<T>(g[t] * product[t]) : T(0);
    }
    return v == out[t] ? static_cast<T>(g[t] / static_cast<T>(count[t])) : T(0);
  };
  for_columns(w, per_column, threads, [&](int64_t c) {
    w.walk(c, [&](int64_t, int64_t t) { count[t] = -1; });  // not seen yet
    w.walk(c, [&](int64_t e, int64_t t) {
      if (count[t] < 0) product[t] = 1.0, count[t] = 0, see(x[t], t);  // x once per target
      see(u[e], t);
    });
    w.walk(c, [&](int64_t e, int64_t t) {
      if (du != nullptr) du[e] = grad(u[e], t);
    });
    w.walk(c, [&](int64_t, int64_t t) {
      if (dx != nullptr) dx[t] = grad(x[t], t);
    });
  });
}

// -- kernels ----------------------------------------------------------------------------------

// The two write patterns, picked by Nd: scatter_nd's tuples or scatter's elements.
template <bool Nd> using GeometryOf = std::conditional_t<Nd, NdGeometry, ElementsGeometry>;
template <bool Nd> using WritesOf = std::conditional_t<Nd, NdWrites, ElementsWrites>;

template <bool Nd>
GeometryOf<Nd> scatter_geometry(const Attrs& attrs, const Slots& in) {
  if constexpr (Nd) {
    return check_nd(in(0), in(1), in(2), 0, "updates");
  } else {
    return check_elements(attrs.l("axis"), in(0), in(1), in(2));
  }
}
// Where index's values write (checked), and how many updates each column makes.
inline std::vector<int64_t> targets(const NdGeometry& g, const Tensor& index) {
  return nd_offsets(index, g);
}
inline std::vector<int64_t> targets(const ElementsGeometry& g, const Tensor& index) {
  return element_positions(index, g.size);
}
inline int64_t per_column(const NdGeometry& g) { return g.tuples; }
inline int64_t per_column(const ElementsGeometry& g) { return g.count; }

// out[n, t, :] = x[n, index[n, t], :], slices copied as raw bytes of any dtype.
class GatherNd {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllTypes;  // slices copied as raw bytes
  GatherNd(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_nd(in(0), in(1), out(0), attrs.l("batch_dims"), "out")),
        esize_(element_size(in(0))) {
    out(0).expect_dtype(in(0).dtype(), "out");
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> offsets = nd_offsets(in(1), geo_);
    const char* x = in(0).data<char>();
    char* o = out(0).data<char>();
    const int64_t row = geo_.slice * esize_;
    if (row == 0) return;
    parallel_for(static_cast<int64_t>(offsets.size()), ctx.num_threads(),
                 std::max<int64_t>(1, kGrain / row), [&](int64_t lo, int64_t hi) {
                   for (int64_t k = lo; k < hi; ++k)
                     std::memcpy(o + k * row, x + offsets[k] * esize_, static_cast<size_t>(row));
                 });
  }

 private:
  NdGeometry geo_;
  int64_t esize_;
};

// x_grad = zeros of x's shape, out_grad's slices added at their tuples (repeated tuples add
// up). Inputs: x (its shape), index, out_grad.
class GatherNdGrad {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  GatherNdGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_nd(in(0), in(1), in(2), attrs.l("batch_dims"), "out_grad")) {
    expect_same_dtype(in(0), in(2), "x and out_grad");
    expect_same_shape(in(0), out(0), "x and x_grad");
    expect_same_dtype(in(0), out(0), "x and x_grad");
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> offsets = nd_offsets(in(1), geo_);
    fn_(NdWrites{geo_, offsets}, in(2), out(0), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const NdWrites&, const Tensor&, const Tensor&, int32_t);
  template <class T>
  static void compute(const NdWrites& w, const Tensor& g, const Tensor& dx, int32_t threads) {
    std::fill(dx.data<T>(), dx.data<T>() + dx.numel(), T(0));
    scatter_into(w, w.g.tuples, Reduction::kAdd, g.data<T>(), dx.data<T>(), threads);
  }

  NdGeometry geo_;
  Fn fn_;
};

// scatter (Nd false) and scatter_nd: out = x, then the updates combined in at index.
// Inputs: x, index, updates.
template <bool Nd> class Scatter {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = AllTypes;
  Scatter(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(scatter_geometry<Nd>(attrs, in)), reduction_(reduction_of(attrs)) {
    expect_same_shape(in(0), out(0), "x and out");
    expect_same_dtype(in(0), out(0), "x and out");
    expect_same_dtype(in(0), in(2), "x and updates");
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> where = targets(geo_, in(1));
    fn_(WritesOf<Nd>{geo_, where}, per_column(geo_), reduction_, in(0), in(2), out(0),
        ctx.num_threads());
  }

 private:
  using Fn = void (*)(const WritesOf<Nd>&, int64_t, Reduction, const Tensor&, const Tensor&,
                      const Tensor&, int32_t);
  template <class T>
  static void compute(const WritesOf<Nd>& w, int64_t per, Reduction r, const Tensor& x,
                      const Tensor& u, const Tensor& out, int32_t threads) {
    std::copy(x.data<T>(), x.data<T>() + x.numel(), out.data<T>());
    scatter_into(w, per, r, u.data<T>(), out.data<T>(), threads);
  }

  GeometryOf<Nd> geo_;
  Reduction reduction_;
  Fn fn_;
};

// scatter_grad and scatter_nd_grad. Inputs: x, index, updates, out, out_grad; outputs x_grad
// and updates_grad, either may be absent.
template <bool Nd> class ScatterGrad {
 public:
  static constexpr pc::Signature signature{"11111", "??"};
  using DTypes = Floats;
  ScatterGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(scatter_geometry<Nd>(attrs, in)), reduction_(reduction_of(attrs)) {
    const Tensor x = in(0);
    expect_same_dtype(x, in(2), "x and updates");
    for (int32_t s : {3, 4}) {
      expect_same_shape(x, in(s), s == 3 ? "x and out" : "x and out_grad");
      expect_same_dtype(x, in(s), s == 3 ? "x and out" : "x and out_grad");
    }
    if (out.has(0)) expect_same_shape(x, out(0), "x and x_grad");
    if (out.has(0)) expect_same_dtype(x, out(0), "x and x_grad");
    if (out.has(1)) expect_same_shape(in(2), out(1), "updates and updates_grad");
    if (out.has(1)) expect_same_dtype(x, out(1), "x and updates_grad");
    fn_ = dispatch(x.dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> where = targets(geo_, in(1));
    void* dx = out.has(0) ? out(0).data<void>() : nullptr;
    void* du = out.has(1) ? out(1).data<void>() : nullptr;
    fn_(WritesOf<Nd>{geo_, where}, per_column(geo_), reduction_, in, dx, du, ctx.num_threads());
  }

 private:
  using Fn = void (*)(const WritesOf<Nd>&, int64_t, Reduction, const Slots&, void*, void*,
                      int32_t);
  template <class T>
  static void compute(const WritesOf<Nd>& w, int64_t per, Reduction r, const Slots& in,
                      void* dx, void* du, int32_t threads) {
    scatter_gradients(w, per, r, in(0).data<T>(), in(2).data<T>(), in(3).data<T>(),
                      in(4).data<T>(), static_cast<T*>(dx), static_cast<T*>(du), in(0).numel(),
                      threads);
  }

  GeometryOf<Nd> geo_;
  Reduction reduction_;
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<GatherNd>("gather_nd"),
    pc::kernel<GatherNdGrad>("gather_nd_grad"),
    pc::kernel<Scatter<false>>("scatter"),
    pc::kernel<AsFloat32<ScatterGrad<false>>>("scatter_grad"),
    pc::kernel<Scatter<true>>("scatter_nd"),
    pc::kernel<AsFloat32<ScatterGrad<true>>>("scatter_nd_grad"));

}  // namespace paddle_ops_math
