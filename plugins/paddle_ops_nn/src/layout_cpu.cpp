// reorder_layout: an activation between plain NCHW and oneDNN's blocked nChw{b}c (layout.hpp),
// the conversions the layout pass puts at the edges of a chain of blocked ops.
//
// Memory contract: channel_block b > 0: x [N, C, H, W] (C a multiple of b), out
// [N, C / b, H, W, b]; channel_block 0: x [N, C / b, H, W, b] with b = 8 or 16, out
// [N, C, H, W]. Same float dtype; checked in prepare. Every element is copied once.
#include "layout.hpp"

namespace paddle_ops_nn {
namespace {

class ReorderLayout {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  ReorderLayout(const Attrs& attrs, const Slots& in, const Slots& out) {
    const Tensor x = in(0), o = out(0);
    dispatch(x.dtype(), DTypes{}, [](auto) {});
    expect_same_dtype(x, o, "x and out");
    const int block = channel_block_of(attrs);
    if (block != 0) {
      if (x.ndim() != 4) fail("x must be 4-D (NCHW) to block its channels, got %s", x.describe().c_str());
      a_ = output_activation(x.dim(0), x.dim(1), x.dim(2), x.dim(3), block, "x");
    } else {
      const int from = x.ndim() == 5 ? static_cast<int>(x.dim(4)) : 0;
      if (from != 8 && from != 16)
        fail("x must be blocked, [N, C / b, H, W, b] with b = 8 or 16, to make it NCHW; got %s",
             x.describe().c_str());
      a_ = activation_of(x, from, "x");
    }
    Activation result = a_;
    result.block = block;
    expect_shape(o, result.dims(), "out");
    to_blocked_ = block != 0;
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (a_.n * a_.c * a_.plane() == 0) return;
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      if (to_blocked_) to_blocked(a_, in(0).data<T>(), out(0).data<T>(), ctx.num_threads());
      else to_plain(a_, in(0).data<T>(), out(0).data<T>(), ctx.num_threads());
    });
  }

 private:
  Activation a_;  // the tensor's logical sizes and its blocked side's block
  bool to_blocked_ = false;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(pc::kernel<ReorderLayout>("reorder_layout"));

}  // namespace paddle_ops_nn
