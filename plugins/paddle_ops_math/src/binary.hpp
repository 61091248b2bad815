// The Binary CPU kernel template shared by the elementwise families (binary_cpu.cpp,
// compare_cpu.cpp): out = F(x, y) with NumPy broadcasting, F from functors.hpp.
#ifndef PADDLE_OPS_MATH_BINARY_HPP_
#define PADDLE_OPS_MATH_BINARY_HPP_

#include "common.hpp"

namespace pom {

// out = F(x, y), broadcasting. R is the output element type: T itself, or uint8_t (bool) for
// comparisons (Bool = true).
template <class F, class TypeList, bool Bool = false> class Binary {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = TypeList;
  Binary(const Attrs&, const Slots& in, const Slots& out) : plan_(check_binary(in, out, Bool)) {
    dispatch(in(0).dtype(), TypeList{}, [&](auto t) {
      using T = decltype(t);
      using R = std::conditional_t<Bool, uint8_t, T>;
      row_ = &binary_row<T, T, R, F>;
      in_size_ = sizeof(T);
      out_size_ = sizeof(R);
    });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    run_broadcast(plan_, in(0).data<void>(), in_size_, in(1).data<void>(), in_size_,
                  out(0).data<void>(), out_size_, row_, ctx.num_threads());
  }

 private:
  Broadcast plan_;
  RowFn row_ = nullptr;
  int in_size_ = 0, out_size_ = 0;
};

}  // namespace pom

#endif  // PADDLE_OPS_MATH_BINARY_HPP_
