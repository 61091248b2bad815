// Sorting along an axis: sort (the values), argsort (their int64 positions) and topk (the k
// first of both), in sort.hpp's order: NaN last ascending, stable among equal elements.
//
// Memory contract: C-contiguous tensors; out (and indices) have x's shape with the axis cut to
// k (topk) elements, indices int64. Shapes and dtypes are checked in prepare (sort.hpp). Each
// row along the axis is sorted on its own, rows in parallel.
#include <algorithm>
#include <numeric>
#include <vector>

#include "common.hpp"
#include "sort.hpp"

namespace pom {
namespace {

// What a kernel writes per row: the values, the positions, or both.
enum Writes { kValues = 1, kIndices = 2 };

template <int W> class Sort {
 public:
  static constexpr pc::Signature signature{"1", W == (kValues | kIndices) ? "11" : "1"};
  using DTypes = AllTypes;
  Sort(const Attrs& attrs, const Slots& in, const Slots& out) {
    const Tensor x = in(0);
    constexpr bool topk = W == (kValues | kIndices);
    descending_ = topk ? attrs.b("largest") : attrs.b("descending");
    geo_ = check_sort(attrs.i("axis"), x, out(0), topk ? attrs.l("k") : -1, "out");
    if (topk) check_sort(attrs.i("axis"), x, out(1), geo_.keep, "indices");
    if (W & kValues) out(0).expect_dtype(x.dtype(), "out");
    if (W & kIndices) out(topk ? 1 : 0).expect_dtype(PC_INT64, topk ? "indices" : "out");
    fn_ = dispatch(x.dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(geo_, descending_, in(0).data<void>(), out, ctx.num_threads());
  }

 private:
  using Fn = void (*)(const SortGeometry&, bool, const void*, const Slots&, int32_t);

  template <class T>
  static void compute(const SortGeometry& g, bool descending, const void* xv, const Slots& out,
                      int32_t threads) {
    const T* x = static_cast<const T*>(xv);
    T* values = (W & kValues) ? out(0).data<T>() : nullptr;
    int64_t* indices = (W & kIndices) ? out((W & kValues) ? 1 : 0).data<int64_t>() : nullptr;
    const int64_t rows = g.outer * g.inner, n = g.length, keep = g.keep;
    if (rows == 0 || keep == 0) return;
    const int64_t work = std::max<int64_t>(1, n * 8);
    parallel_for(rows, threads, std::max<int64_t>(1, kGrain / work), [&](int64_t lo, int64_t hi) {
      std::vector<T> row(static_cast<size_t>(n));
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t o = r / g.inner, i = r % g.inner;
        const T* src = x + o * n * g.inner + i;
        for (int64_t j = 0; j < n; ++j) row[j] = src[j * g.inner];
        std::iota(order.begin(), order.end(), int64_t{0});
        auto before = [&](int64_t a, int64_t b) {
          return sorts_before(row[a], a, row[b], b, descending);
        };
        if (keep < n) {
          std::partial_sort(order.begin(), order.begin() + keep, order.end(), before);
        } else {
          std::sort(order.begin(), order.end(), before);
        }
        const int64_t base = o * keep * g.inner + i;
        for (int64_t j = 0; j < keep; ++j) {
          if (values != nullptr) values[base + j * g.inner] = row[order[j]];
          if (indices != nullptr) indices[base + j * g.inner] = order[j];
        }
      }
    });
  }

  SortGeometry geo_;
  bool descending_ = false;
  Fn fn_;
};

}  // namespace

const pc::Family& sort_kernels() {
  static const pc::Family family = {
      pc::kernel<Sort<kValues>>("sort"),
      pc::kernel<Sort<kIndices>>("argsort"),
      pc::kernel<Sort<kValues | kIndices>>("topk"),
  };
  return family;
}

}  // namespace pom
