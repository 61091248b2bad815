// Index ops: gather (numpy.take along an axis), gather_grad (scatter-add) and one_hot.
//
// Memory contract: C-contiguous tensors. gather: x of any dtype, index int32 or int64 of any
// shape, out x.shape[:axis] + index.shape + x.shape[axis + 1:] of x's dtype; gather_grad: x,
// index, out_grad (gather's out) and x_grad (x's shape), floats; one_hot: index, out
// index.shape + [depth]. Shapes and dtypes are checked in prepare (index.hpp), and every index
// value in run, before the first element is read or written: one out of range is a
// KernelError naming it and its flat position.
#include <cstring>
#include <vector>

#include "common.hpp"
#include "index.hpp"

namespace paddle_ops_math {
namespace {

// index's values as positions in [0, size), checked (index.hpp's check_positions).
std::vector<int64_t> checked_positions(const Tensor& index, int64_t size, bool negative,
                                       const char* range) {
  std::vector<int64_t> positions(static_cast<size_t>(index.numel()));
  dispatch(index.dtype(), IndexTypes{}, [&](auto t) {
    check_positions(index.data<decltype(t)>(), index.numel(), size, negative, range,
                    positions.data());
  });
  return positions;
}

// out[o, k, :] = x[o, index[k], :] around the axis; rows are copied as raw bytes, any dtype.
class Gather {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = AllTypes;
  Gather(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_gather(attrs.i("axis"), in(0), in(1), out(0), "out")),
        row_(geo_.inner * in(0).element_size()) {
    if (in(0).element_size() == 0)
      fail("dtype %s is not supported by this kernel", pc::dtype_name(in(0).dtype()));
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> at = checked_positions(in(1), geo_.size, true, "the gather axis");
    if (out(0).numel() == 0) return;
    const char* x = in(0).data<char>();
    char* o = out(0).data<char>();
    const int64_t rows = geo_.outer * geo_.count, count = geo_.count, size = geo_.size;
    const size_t row = static_cast<size_t>(row_);
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, row_));
    parallel_rows(rows, ctx.num_threads(), grain, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t outer = r / count, k = r % count;
        std::memcpy(o + r * row_, x + (outer * size + at[k]) * row_, row);
      }
    });
  }

 private:
  GatherGeometry geo_;
  int64_t row_;  // bytes of one [inner] row
};

// x_grad = zeros of x's shape; x_grad[o, index[k], :] += out_grad[o, k, :] for every k, in
// order. Each thread owns columns (o, i) of x_grad, so repeated indices add up without races
// and in the same order whatever the thread count. Inputs: x (its shape), index, out_grad.
class GatherGrad {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  GatherGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : geo_(check_gather(attrs.i("axis"), in(0), in(1), in(2), "out_grad")) {
    expect_same_shape(in(0), out(0), "x and x_grad");
    expect_same_dtype(in(0), out(0), "x and x_grad");
    fn_ = dispatch(in(0).dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> at = checked_positions(in(1), geo_.size, true, "the gather axis");
    fn_(geo_, at, in(2).data<void>(), out(0).data<void>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const GatherGeometry&, const std::vector<int64_t>&, const void*, void*,
                      int32_t);
  template <class T>
  static void compute(const GatherGeometry& geo, const std::vector<int64_t>& at, const void* gv,
                      void* dxv, int32_t threads) {
    const T* g = static_cast<const T*>(gv);
    T* dx = static_cast<T*>(dxv);
    const int64_t inner = geo.inner, size = geo.size, count = geo.count;
    const int64_t columns = geo.outer * inner, work = size + count;
    if (columns == 0 || size == 0) return;  // x_grad is empty
    parallel_for(columns, threads, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, work)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t c = lo; c < hi;) {
                     const int64_t o = c / inner, i0 = c % inner;
                     const int64_t i1 = std::min(inner, i0 + (hi - c));
                     T* dst = dx + o * size * inner;
                     const T* src = g + o * count * inner;
                     for (int64_t r = 0; r < size; ++r)
                       std::fill(dst + r * inner + i0, dst + r * inner + i1, T(0));
                     for (int64_t k = 0; k < count; ++k) {
                       T* d = dst + at[k] * inner;
                       const T* s = src + k * inner;
                       for (int64_t i = i0; i < i1; ++i) d[i] += s[i];
                     }
                     c += i1 - i0;
                   }
                 });
  }

  GatherGeometry geo_;
  Fn fn_;
};

// out[..., j] = (j == index[...]) as out's dtype.
class OneHot {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = IndexTypes;
  OneHot(const Attrs& attrs, const Slots& in, const Slots& out)
      : depth_(check_one_hot(attrs, in(0), out(0))) {
    fn_ = dispatch(out(0).dtype(), AllTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const std::vector<int64_t> at = checked_positions(in(0), depth_, false, "depth");
    fn_(at, depth_, out(0).data<void>(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const std::vector<int64_t>&, int64_t, void*, int32_t);
  template <class T>
  static void compute(const std::vector<int64_t>& at, int64_t depth, void* ov, int32_t threads) {
    T* o = static_cast<T*>(ov);
    parallel_rows(static_cast<int64_t>(at.size()), threads,
                  std::max<int64_t>(1, kGrain / depth), [&](int64_t lo, int64_t hi) {
                    std::fill(o + lo * depth, o + hi * depth, T(0));
                    for (int64_t k = lo; k < hi; ++k) o[k * depth + at[k]] = T(1);
                  });
  }

  int64_t depth_;
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Gather>("gather"),
    pc::kernel<GatherGrad>("gather_grad"),
    pc::kernel<OneHot>("one_hot"));

}  // namespace paddle_ops_math
