// The ops the oneDNN passes insert into CPU plans: reorder_layout, an activation between plain
// NCHW and oneDNN's blocked nChw{b}c (layout.hpp), the conversions the layout pass puts at the
// edges of a chain of blocked ops; and fingerprint, which tells conv2d whether its filter
// changed since it last converted it (paddle_ops_nn/filter_cache.py).
//
// Memory contract: channel_block b > 0: x [N, C, H, W] (C a multiple of b), out
// [N, C / b, H, W, b]; channel_block -1: x [N, C, H, W], out [N, 1, H, W, C]; channel_block 0:
// x [N, C / b, H, W, b] with b = 8 or 16, or [N, 1, H, W, C], out [N, C, H, W]. Same float dtype; checked in prepare. Every element is copied once.
// fingerprint: x of a float dtype, any shape; out int64 [1].
#include <cstring>

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
    to_blocked_ = block != 0;
    if (to_blocked_) {
      if (x.ndim() != 4) fail("x must be 4-D (NCHW) to block its channels, got %s", x.describe().c_str());
      a_ = output_activation(x.dim(0), x.dim(1), x.dim(2), x.dim(3), block, "x");
      expect_shape(o, a_.dims(), "out");
      return;
    }
    const int64_t b = x.ndim() == 5 ? x.dim(4) : 0;
    const int from = b == 8 || b == 16 ? static_cast<int>(b)
                     : x.ndim() == 5 && x.dim(1) == 1 ? kChannelsLast
                                                      : 0;
    if (from == 0)
      fail("x must be blocked, [N, C / b, H, W, b] with b = 8 or 16, or channels last, "
           "[N, 1, H, W, C], to make it NCHW; got %s",
           x.describe().c_str());
    a_ = activation_of(x, from, "x");
    expect_shape(o, {a_.n, a_.c, a_.h, a_.w}, "out");
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

// A 64-bit hash of x's bytes (four lanes of xxHash64's round, then its avalanche): two
// different tensors give the same value with probability 2^-64. Only where a parameter's
// value changes, constant folding runs it again (a pass over the bytes); conv2d compares it
// with the last run's.
class Fingerprint {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  Fingerprint(const Attrs&, const Slots& in, const Slots& out) {
    dispatch(in(0).dtype(), DTypes{}, [](auto) {});
    out(0).expect_dtype(PC_INT64, "out");
    expect_shape(out(0), {1}, "out");
  }

  void run(const Slots& in, const Slots& out, const Context&) const {
    const Tensor x = in(0);
    *out(0).data<int64_t>() = static_cast<int64_t>(hash(x.data<unsigned char>(), x.nbytes()));
  }

 private:
  static uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

  static uint64_t hash(const unsigned char* p, int64_t n) {
    constexpr uint64_t k1 = 0x9E3779B185EBCA87ULL, k2 = 0xC2B2AE3D27D4EB4FULL;
    uint64_t lane[4] = {k1 + k2, k2, 0, 0 - k1};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
      for (int j = 0; j < 4; ++j) {
        uint64_t w;
        std::memcpy(&w, p + i + 8 * j, 8);
        lane[j] = rotl(lane[j] + w * k2, 31) * k1;
      }
    uint64_t h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18);
    h += static_cast<uint64_t>(n);
    for (; i < n; ++i) h = rotl(h ^ (p[i] * 0x27D4EB2F165667C5ULL), 11) * k1;
    h ^= h >> 33, h *= k2, h ^= h >> 29, h *= 0x165667B19E3779F9ULL, h ^= h >> 32;
    return h;
  }
};

PADDLE_CORE_REGISTER_KERNELS(pc::kernel<ReorderLayout>("reorder_layout"),
                             pc::kernel<Fingerprint>("fingerprint"));

}  // namespace paddle_ops_nn
