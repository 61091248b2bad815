// pad (numpy.pad's constant, edge, reflect and wrap modes; negative paddings crop, as ONNX's
// Pad allows) and pad_grad.
//
// Memory contract: C-contiguous tensors; pad: x of any dtype, out x's dims plus the paddings,
// x's dtype; pad_grad: x (its shape), out_grad (pad's out), x_grad (x's shape), floats (float16
// and bfloat16 summed in float32 and rounded once, AsFloat32). Shapes and paddings are checked
// in prepare (pad.hpp), which also gives each output element's source.
#include <utility>
#include <vector>

#include "common.hpp"
#include "pad.hpp"

namespace paddle_ops_math {
namespace {

// Where each position of a row of out (along the last axis) comes from in x's row, -1 for the
// value: the same for every row. x is at least 1-D.
std::vector<int64_t> last_axis_sources(const PadGeometry& g) {
  const int32_t last = g.ndim - 1;
  std::vector<int64_t> column(static_cast<size_t>(g.out_dims[last]));
  for (size_t o = 0; o < column.size(); ++o)
    column[o] = pad_source(static_cast<int64_t>(o), g.before[last], g.x_dims[last], g.mode);
  return column;
}

// The longest run [a, b) of out's columns whose sources are consecutive columns of x (the
// unpadded middle, in every mode): a row copies it as one block. Empty (a = b) if no column
// comes from x.
std::pair<int64_t, int64_t> longest_copy(const std::vector<int64_t>& column) {
  const int64_t width = static_cast<int64_t>(column.size());
  int64_t best_a = 0, best_b = 0;
  for (int64_t o = 0; o < width;) {
    if (column[o] < 0) {
      ++o;
      continue;
    }
    int64_t end = o + 1;
    while (end < width && column[end] == column[end - 1] + 1) ++end;
    if (end - o > best_b - best_a) best_a = o, best_b = end;
    o = end;
  }
  return {best_a, best_b};
}

// out's element e = x at pad.hpp's source(e), or the value. Rows of out's last axis in
// parallel; a row's source along the other axes is found once.
class Pad {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = AllTypes;
  Pad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_pad(attrs, in(0), out(0), "out")), value_(attrs.f("value")) {
    out(0).expect_dtype(in(0).dtype(), "out");
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(geo_, value_, in(0).data<void>(), out(0).data<void>(), out(0).numel(),
        ctx.num_threads());
  }

 private:
  using Fn = void (*)(const PadGeometry&, double, const void*, void*, int64_t, int32_t);
  template <class T>
  static void compute(const PadGeometry& g, double value, const void* xv, void* ov, int64_t n,
                      int32_t threads) {
    const T* x = static_cast<const T*>(xv);
    T* out = static_cast<T*>(ov);
    const T fill = convert_to<T>(value);
    if (n == 0) return;
    if (g.ndim == 0) {
      out[0] = x[0];
      return;
    }
    const int64_t width = g.out_dims[g.ndim - 1];
    const std::vector<int64_t> column = last_axis_sources(g);
    const auto [a, b] = longest_copy(column);  // copied as a block; the rest element by element
    parallel_rows(n / width, threads, std::max<int64_t>(1, kGrain / width),
                  [&](int64_t lo, int64_t hi) {
                    for (int64_t r = lo; r < hi; ++r) {
                      T* dst = out + r * width;
                      const int64_t src = g.row_source(r);
                      if (src < 0) {
                        std::fill(dst, dst + width, fill);
                        continue;
                      }
                      for (int64_t o = 0; o < a; ++o)
                        dst[o] = column[o] < 0 ? fill : x[src + column[o]];
                      const T* from = x + src + (b > a ? column[a] : 0);
                      std::copy(from, from + (b - a), dst + a);
                      for (int64_t o = b; o < width; ++o)
                        dst[o] = column[o] < 0 ? fill : x[src + column[o]];
                    }
                  });
  }

  PadGeometry geo_;
  double value_;
  Fn fn_;
};

// x_grad = the sum of out_grad over the output elements each element of x went to (its own
// place, and its copies in the padding of the edge, reflect and wrap modes). Added in out's
// order, one thread: the same sums on every run. Inputs: x (its shape), out_grad.
class PadGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  PadGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_pad(attrs, in(0), in(1), "out_grad")) {
    expect_same_dtype(in(0), in(1), "x and out_grad");
    expect_same_shape(in(0), out(0), "x and x_grad");
    expect_same_dtype(in(0), out(0), "x and x_grad");
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context&) const {
    fn_(geo_, in(1).data<void>(), in(1).numel(), out(0).data<void>(), out(0).numel());
  }

 private:
  using Fn = void (*)(const PadGeometry&, const void*, int64_t, void*, int64_t);
  template <class T>
  static void compute(const PadGeometry& g, const void* gv, int64_t n, void* dxv, int64_t m) {
    const T* grad = static_cast<const T*>(gv);
    T* dx = static_cast<T*>(dxv);
    std::fill(dx, dx + m, T(0));
    if (n == 0) return;
    if (g.ndim == 0) {
      dx[0] = grad[0];
      return;
    }
    const int64_t width = g.out_dims[g.ndim - 1];
    const std::vector<int64_t> column = last_axis_sources(g);
    for (int64_t r = 0; r < n / width; ++r) {
      const int64_t src = g.row_source(r);
      if (src < 0) continue;
      const T* row = grad + r * width;
      for (int64_t o = 0; o < width; ++o)
        if (column[o] >= 0) dx[src + column[o]] += row[o];
    }
  }

  PadGeometry geo_;
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Pad>("pad"),
    pc::kernel<AsFloat32<PadGrad>>("pad_grad"));

}  // namespace paddle_ops_math
