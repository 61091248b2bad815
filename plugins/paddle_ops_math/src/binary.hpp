// The Binary CPU kernel template shared by the elementwise families (binary_cpu.cpp,
// compare_cpu.cpp): out = F(x, y) with NumPy broadcasting, F from functors.hpp.
#ifndef PADDLE_OPS_MATH_BINARY_HPP_
#define PADDLE_OPS_MATH_BINARY_HPP_

#include "common.hpp"

namespace paddle_ops_math {

namespace avx2 {
// binary_avx2.cpp: float32 mod, lanes it declines through `scalar`.
void mod_f32(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n,
             float (*scalar)(float, float));
}  // namespace avx2

// The row function of float32 mod with AVX2 (binary_avx2.cpp), which gives Mod's results.
inline float mod_f32_scalar(float a, float b) { return Mod{}(a, b); }
inline void mod_row_f32_avx2(const void* a, int64_t sa, const void* b, int64_t sb, void* out,
                             int64_t n) {
  avx2::mod_f32(static_cast<const float*>(a), sa, static_cast<const float*>(b), sb,
                static_cast<float*>(out), n, &mod_f32_scalar);
}

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
    if constexpr (std::is_same_v<F, Mod>) {
      if (in(0).dtype() == PC_FLOAT32 && use_avx2()) row_ = &mod_row_f32_avx2;
    }
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

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_BINARY_HPP_
