// Sorting along an axis: sort (the values), argsort (their int64 positions) and topk (the k
// first of both), in sort.hpp's order: NaN last ascending, stable among equal elements.
//
// Memory contract: C-contiguous tensors; out (and indices) have x's shape with the axis cut to
// k (topk) elements, indices int64. Shapes and dtypes are checked in prepare (sort.hpp). Each
// row along the axis is sorted on its own, rows in parallel.
//
// Whole rows of kRadixMin elements or more (sort, argsort) are sorted by LSD radix sort on
// keys whose unsigned order is sort.hpp's (radix_key), a byte at a time: stable, so ties keep
// their order in x, and O(n) where std::sort on the positions was O(n log n) with an indirect
// comparison (sort of a [256, 4096] float32 along its rows: 88 -> 16 ms on one thread). topk
// takes its first k by the same keys (select_first); short rows are sorted by comparison.
#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "sort.hpp"

namespace paddle_ops_math {
namespace {

// What a kernel writes per row: the values, the positions, or both.
enum Writes { kValues = 1, kIndices = 2 };

// Rows at least this long are radix sorted (below, std::sort's fewer passes win).
constexpr int64_t kRadixMin = 64;

// The radix sort's key of T: 32 bits wide for types of up to 4 bytes, else 64.
template <class T> using RadixKey = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;

// x's key: its unsigned order is sort.hpp's ascending order, with every NaN equal and last,
// and -0 equal to +0 (both compare equal, so they keep their order in x). Descending flips
// every bit: the order reverses, and ties still keep theirs.
template <class T> RadixKey<T> radix_key(T x, bool descending) {
  using K = RadixKey<T>;
  K key;
  if constexpr (std::is_floating_point_v<T> || is_half_float_v<T>) {
    using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const F v = static_cast<F>(x);  // float16 and bfloat16 widen exactly
    if (v != v) {
      key = ~K(0);
    } else {
      K bits;
      const F canonical = v == F(0) ? F(0) : v;  // -0 -> +0
      std::memcpy(&bits, &canonical, sizeof bits);
      constexpr K sign = K(1) << (8 * sizeof(K) - 1);
      key = (bits & sign) ? ~bits : bits | sign;
    }
  } else if constexpr (std::is_same_v<T, bool>) {
    key = x ? 1 : 0;
  } else if constexpr (std::is_signed_v<T>) {  // two's complement, the sign bit flipped
    using U = std::make_unsigned_t<T>;
    key = static_cast<K>(static_cast<U>(x) ^ (U(1) << (8 * sizeof(T) - 1)));
  } else {
    key = static_cast<K>(x);
  }
  return descending ? static_cast<K>(~key) : key;
}

// order[0, n) = the positions of keys[0, n) in stable ascending order of the keys; keys and
// the two scratch arrays (n each) are overwritten. Bytes on which every key agrees cost no
// pass.
template <class K>
void radix_order(K* keys, int64_t n, int64_t* order, K* key_scratch, int64_t* order_scratch) {
  constexpr int kBytes = sizeof(K);
  std::array<std::array<int64_t, 256>, kBytes> count{};
  for (int64_t j = 0; j < n; ++j)
    for (int b = 0; b < kBytes; ++b) ++count[b][(keys[j] >> (8 * b)) & 0xFF];
  std::iota(order, order + n, int64_t{0});
  K* from_keys = keys;
  int64_t* from = order;
  int64_t* to_order = order_scratch;
  for (int b = 0; b < kBytes; ++b) {
    auto& c = count[b];
    if (c[(keys[0] >> (8 * b)) & 0xFF] == n) continue;  // one digit for all: nothing moves
    int64_t at = 0;
    for (auto& bucket : c) at += std::exchange(bucket, at);  // counts -> first slots
    for (int64_t j = 0; j < n; ++j) {
      const int64_t to = c[(from_keys[j] >> (8 * b)) & 0xFF]++;
      key_scratch[to] = from_keys[j];
      to_order[to] = from[j];
    }
    std::swap(from_keys, key_scratch);  // the next pass reads what this one wrote
    std::swap(from, to_order);
  }
  if (from != order) std::copy(from, from + n, order);
}

// The positions of keys[0, n)'s `keep` first (0 < keep < n) in stable ascending order, to
// order[0, keep): a max-heap of the kept, which every later key is compared with, of
// composites C = key << P | position, whose order is the keys' then the positions' (P bits
// hold any position). One integer compare per element, where std::partial_sort on the
// positions compared the elements through them (topk of 10 in rows of 4096 floats: 3.0 -> 2.0
// ms), and std::partial_sort on the composites took 4x as long as this loop.
template <class C, class K>
void select_first(const K* keys, int64_t n, int64_t keep, int64_t* order, std::vector<C>& heap) {
  constexpr int P = 8 * sizeof(C) - 8 * sizeof(K);
  heap.resize(static_cast<size_t>(keep));
  for (int64_t j = 0; j < keep; ++j) heap[j] = C(keys[j]) << P | C(j);
  std::make_heap(heap.begin(), heap.end());
  for (int64_t j = keep; j < n; ++j) {
    const C c = C(keys[j]) << P | C(j);
    if (c < heap.front()) {
      std::pop_heap(heap.begin(), heap.end());
      heap.back() = c;
      std::push_heap(heap.begin(), heap.end());
    }
  }
  std::sort_heap(heap.begin(), heap.end());
  constexpr C kMask = (C(1) << P) - 1;
  for (int64_t j = 0; j < keep; ++j) order[j] = static_cast<int64_t>(heap[j] & kMask);
}

__extension__ typedef unsigned __int128 Uint128;  // (GCC's and Clang's; not ISO C++)

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
    const bool radix = keep == n && n >= kRadixMin;
    const bool partial = keep < n;
    using K = RadixKey<T>;
    // Composites of a 32-bit key and a position that fits 32 bits are 64-bit; else 128-bit.
    const bool narrow = sizeof(K) == 4 && n <= (int64_t{1} << 32);
    static_assert(sizeof(K) == 4 || sizeof(K) == 8, "radix_key's widths");
    parallel_for(rows, threads, std::max<int64_t>(1, kGrain / work), [&](int64_t lo, int64_t hi) {
      std::vector<T> row(static_cast<size_t>(n));
      std::vector<int64_t> order(static_cast<size_t>(n));
      std::vector<K> keys(radix || partial ? n : 0), key_scratch(radix ? n : 0);
      std::vector<int64_t> order_scratch(radix ? n : 0);
      std::vector<uint64_t> narrow_heap;
      std::vector<Uint128> wide_heap;
      for (int64_t r = lo; r < hi; ++r) {
        const int64_t o = r / g.inner, i = r % g.inner;
        const T* src = x + o * n * g.inner + i;
        for (int64_t j = 0; j < n; ++j) row[j] = src[j * g.inner];
        auto before = [&](int64_t a, int64_t b) {
          return sorts_before(row[a], a, row[b], b, descending);
        };
        if (radix || partial) {
          for (int64_t j = 0; j < n; ++j) keys[j] = radix_key<T>(row[j], descending);
        }
        if (radix) {
          radix_order(keys.data(), n, order.data(), key_scratch.data(), order_scratch.data());
        } else if (partial) {
          if constexpr (sizeof(K) == 4) {
            if (narrow) select_first(keys.data(), n, keep, order.data(), narrow_heap);
          }
          if (!narrow) select_first(keys.data(), n, keep, order.data(), wide_heap);
        } else {
          std::iota(order.begin(), order.end(), int64_t{0});
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

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Sort<kValues>>("sort"),
    pc::kernel<Sort<kIndices>>("argsort"),
    pc::kernel<Sort<kValues | kIndices>>("topk"));

}  // namespace paddle_ops_math
