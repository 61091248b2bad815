// Predicates and logic, all giving bool: isnan, isinf, isfinite (of any number; integers are
// never NaN or infinite; float16 and bfloat16 are tested as their float32 value), logical_not,
// and logical_and / or / xor with NumPy broadcasting; and where(cond, x, y), choosing between
// x and y elementwise.
//
// Memory contract: inputs C-contiguous; out bool (one byte per element, 0 or 1) with x's shape
// (the broadcast shape for the binary ops); where's out has x's dtype and the broadcast shape
// of all three, each of which must broadcast to it. Checked in prepare.
#include <array>
#include <cmath>
#include <vector>

#include "binary.hpp"

namespace paddle_ops_math {
namespace {

// out = F(x) as bool, for the dtypes in TypeList. The formulas (IsNan ... Xor) are
// functors.hpp's, shared with the CUDA kernels.
template <class F, class TypeList> class Predicate {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = TypeList;
  Predicate(const Attrs&, const Slots& in, const Slots& out) {
    check_predicate(in, out);
    fn_ = dispatch(in(0).dtype(), TypeList{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }
  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(in(0).data<void>(), out(0).data<bool>(), out(0).numel(), ctx.num_threads());
  }

 private:
  using Fn = void (*)(const void*, bool*, int64_t, int32_t);
  template <class T> static void compute(const void* xv, bool* out, int64_t n, int32_t threads) {
    const T* x = static_cast<const T*>(xv);
    parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = F{}(static_cast<compute_t<T>>(x[i]));
    });
  }
  Fn fn_;
};

using Bools = Types<bool>;

// out[i] = c[i * sc] ? x[i * sx] : y[i * sy] for i in [0, n), on elements of U's size (their
// bits copied; c holds bytes, any nonzero one true). Strides are 0 (broadcast) or 1 in
// practice: the same-shaped loop vectorises.
template <class U>
void where_row(const uint8_t* c, int64_t sc, const void* xv, int64_t sx, const void* yv,
               int64_t sy, void* ov, int64_t n) {
  const U* x = static_cast<const U*>(xv);
  const U* y = static_cast<const U*>(yv);
  U* o = static_cast<U*>(ov);
  if (sc == 1 && sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
  }
}

// out = cond ? x : y, each input broadcast to out's shape (check_where, elementwise.hpp). Any
// dtype: elements are copied. The odometer steps a row (the last axis) at a time.
class Where {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = AllTypes;
  Where(const Attrs&, const Slots& in, const Slots& out) {
    const Tensor o = out(0);
    strides_ = check_where(in, out);
    shape_.assign(o.shape(), o.shape() + o.ndim());
    size_ = o.element_size();
    switch (size_) {
      case 1: row_ = &where_row<uint8_t>; break;
      case 2: row_ = &where_row<uint16_t>; break;
      case 4: row_ = &where_row<uint32_t>; break;
      case 8: row_ = &where_row<uint64_t>; break;
      default: fail("where: no row loop for %lld-byte elements", static_cast<long long>(size_));
    }
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const auto* c = in(0).data<uint8_t>();
    const auto* x = in(1).data<char>();
    const auto* y = in(2).data<char>();
    char* o = out(0).data<char>();
    const int nd = static_cast<int>(shape_.size());
    const int64_t inner = nd > 0 ? shape_[nd - 1] : 1;
    int64_t step[3] = {0, 0, 0};  // the strides along the last axis
    for (int k = 0; nd > 0 && k < 3; ++k) step[k] = strides_[k][nd - 1];
    parallel_for(out(0).numel(), ctx.num_threads(), kGrain, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> index(nd);  // lo's coordinates, then advanced like an odometer
      int64_t rest = lo, at[3] = {0, 0, 0};
      for (int d = nd - 1; d >= 0; --d) {
        index[d] = rest % shape_[d];
        rest /= shape_[d];
        for (int k = 0; k < 3; ++k) at[k] += index[d] * strides_[k][d];
      }
      for (int64_t i = lo; i < hi;) {
        const int64_t col = nd > 0 ? index[nd - 1] : 0, len = std::min(hi - i, inner - col);
        row_(c + at[0], step[0], x + at[1] * size_, step[1], y + at[2] * size_, step[2],
             o + i * size_, len);
        i += len;
        if (nd == 0 || col + len < inner) break;  // the chunk ends inside this row
        for (int k = 0; k < 3; ++k) at[k] -= step[k] * col;  // to the next row's start
        index[nd - 1] = 0;
        for (int d = nd - 2; d >= 0; --d) {
          for (int k = 0; k < 3; ++k) at[k] += strides_[k][d];
          if (++index[d] < shape_[d]) break;
          for (int k = 0; k < 3; ++k) at[k] -= strides_[k][d] * shape_[d];
          index[d] = 0;
        }
      }
    });
  }

 private:
  using RowFn = void (*)(const uint8_t*, int64_t, const void*, int64_t, const void*, int64_t,
                         void*, int64_t);
  std::vector<int64_t> shape_;
  std::array<std::vector<int64_t>, 3> strides_;
  int64_t size_ = 0;
  RowFn row_ = nullptr;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Predicate<IsNan, AllNumbers>>("isnan"),
    pc::kernel<Predicate<IsInf, AllNumbers>>("isinf"),
    pc::kernel<Predicate<IsFinite, AllNumbers>>("isfinite"),
    pc::kernel<Predicate<Not, Bools>>("logical_not"),
    pc::kernel<Binary<And, Bools, true>>("logical_and"),
    pc::kernel<Binary<Or, Bools, true>>("logical_or"),
    pc::kernel<Binary<Xor, Bools, true>>("logical_xor"),
    pc::kernel<Where>("where"));

}  // namespace paddle_ops_math
