// Gradients of the elementwise binary ops: add_grad ... minimum_grad, mod_grad.
//
// Memory contract: inputs x, y, out_grad and outputs x_grad (shape of x), y_grad (shape of y)
// are C-contiguous floats; out_grad has the broadcast shape. Either output may be absent. Each
// gradient is computed at the broadcast shape, then summed over the dimensions its input was
// broadcast along. add's and sub's x_grad may be out_grad's own memory (declared in place):
// x_grad is computed first, and is out_grad's values, so y_grad reads them unchanged after.
// float16 and bfloat16 run the float32 code on widened copies (AsFloat32).
#include <cmath>
#include <type_traits>

#include "common.hpp"

namespace paddle_ops_math {
namespace {

// x_grad = GX(x, y, out_grad), y_grad = GY(...), summed to the inputs' shapes (functors.hpp).
template <class GX, class GY> class BinaryGrad {
 public:
  static constexpr pc::Signature signature{"111", "??"};
  using DTypes = Floats;
  BinaryGrad(const Attrs&, const Slots& in, const Slots& out) {
    check_binary_grad(in, out);
    Tensor x = in(0), y = in(1), g = in(2);
    ax_ = plan_broadcast(x, g, g);
    ay_ = plan_broadcast(y, g, g);
    fn_ = dispatch(x.dtype(), DTypes{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    fn_(*this, in, out, ctx.num_threads());
  }

 private:
  using Fn = void (*)(const BinaryGrad&, const Slots&, const Slots&, int32_t);
  template <class G>
  static constexpr bool kIgnoresInputs = std::is_same_v<G, GradOne> || std::is_same_v<G, GradNeg>;
  static constexpr bool kReadsInputs = !kIgnoresInputs<GX> || !kIgnoresInputs<GY>;

  template <class T>
  static void compute(const BinaryGrad& self, const Slots& in, const Slots& out, int32_t threads) {
    Tensor g = in(2);
    const int64_t n = g.numel();
    const void* gd = g.data<void>();
    // x and y at the gradient's shape: the inputs themselves, or broadcast copies (none for
    // add and sub, whose gradients do not read them).
    std::vector<T> xs, ys;
    const void* xd = kReadsInputs ? self.spread(self.ax_, in(0), g, xs, threads) : gd;
    const void* yd = kReadsInputs ? self.spread(self.ay_, in(1), g, ys, threads) : gd;
    auto fill = [&](Row3Fn row, bool identity, const Tensor& target) {
      bool direct = target.numel() == n;  // no reduction: write straight into the output
      // add's and sub's x_grad may take over out_grad's memory (the manifest's inplace): it
      // holds the gradient already.
      if (direct && identity && target.data<void>() == gd) return;
      // A gradient that is out_grad itself (add's) is summed from out_grad, with no copy.
      if (!direct && identity)
        return reduce_to(static_cast<const T*>(gd), g, target.data<T>(), target);
      std::vector<T> full(direct ? 0 : n);
      void* dst = direct ? target.data<void>() : full.data();
      run_elementwise3(n, xd, yd, gd, dst, sizeof(T), row, threads);
      if (!direct) reduce_to(full.data(), g, target.data<T>(), target);
    };
    if (out.has(0)) fill(&ternary_row<T, GX>, std::is_same_v<GX, GradOne>, out(0));
    if (out.has(1)) fill(&ternary_row<T, GY>, std::is_same_v<GY, GradOne>, out(1));
  }

  template <class T>
  const void* spread(const Broadcast& plan, const Tensor& v, const Tensor& g, std::vector<T>& buf,
                     int32_t threads) const {
    if (plan.kind == Broadcast::kSame) return v.data<void>();
    buf.resize(g.numel());
    run_broadcast(plan, v.data<void>(), sizeof(T), g.data<void>(), sizeof(T), buf.data(), sizeof(T),
                  &binary_row<T, T, T, First>, threads);
    return buf.data();
  }

  Broadcast ax_, ay_;
  Fn fn_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<AsFloat32<BinaryGrad<GradOne, GradOne>>>("add_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradOne, GradNeg>>>("sub_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradMulX, GradMulY>>>("mul_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradDivX, GradDivY>>>("div_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradPowX, GradPowY>>>("pow_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradOne, GradModY>>>("mod_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradMaxX, GradMaxY>>>("maximum_grad"),
    pc::kernel<AsFloat32<BinaryGrad<GradMinX, GradMinY>>>("minimum_grad"));

}  // namespace paddle_ops_math
