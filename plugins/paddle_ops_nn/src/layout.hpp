// Activations in oneDNN's blocked layout nChw{b}c, as the core sees them: a C-contiguous 5-D
// tensor [N, C / b, H, W, b] holding element (n, c, h, w) at [n, c / b, h, w, c % b], so the
// b channels of one position are adjacent (what oneDNN's vectorised primitives read). The
// layout pass (paddle_ops_nn/layout.py) keeps such tensors between conv2d, pool2d and
// batch_norm, which take a `channel_block` attr: b (8 or 16), or 0 for plain NCHW. The buffer
// has the logical tensor's size (C is a multiple of b), so the core plans it like any other.
// Only the CPU kernels take blocked tensors: the CUDA kernels, which share these headers'
// checks, refuse a channel_block other than 0 first (plain_only), and the pass runs for CPU
// plans only.
#ifndef PADDLE_OPS_NN_LAYOUT_HPP_
#define PADDLE_OPS_NN_LAYOUT_HPP_

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "layout_avx2.hpp"

namespace paddle_ops_nn {

// Fail unless t's shape is `want`.
inline void expect_shape(const Tensor& t, std::vector<int64_t> want, const char* what) {
  bool same = t.ndim() == static_cast<int32_t>(want.size());
  for (int32_t k = 0; same && k < t.ndim(); ++k) same = t.dim(k) == want[k];
  if (!same) {
    std::string s = "[";
    for (size_t k = 0; k < want.size(); ++k) s += (k ? ", " : "") + std::to_string(want[k]);
    fail("%s must be %s, got %s", what, (s + "]").c_str(), t.describe().c_str());
  }
}

// channel_block -1: channels last (NHWC), stored [N, 1, H, W, C]: nChw{C}c, one block of all
// the channels, the layout oneDNN's inference convolutions read fastest where they have brgemm
// kernels (AVX2 and later). The layout pass chooses it for plans without gradients.
constexpr int kChannelsLast = -1;

// A 4-D activation's logical NCHW sizes and how it is stored (block 0: plain NCHW; b > 0 its
// channels in blocks of b, channels last being the block of all C).
struct Activation {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int block = 0;
  bool last = false;  // channels last (block: C, or 1 for no channels)

  int64_t plane() const { return h * w; }
  // The shape the core binds: [N, C, H, W], or [N, C / b, H, W, b] when blocked.
  std::vector<int64_t> dims() const {
    if (last) return {n, 1, h, w, c};
    if (block == 0) return {n, c, h, w};
    return {n, c / block, h, w, block};
  }
  // Its channel_block (the attr's values): kChannelsLast, 0 or b. Not `block`: channels last
  // with 8 or 16 channels stores the bytes of nChw8c or nChw16c, but oneDNN is told NHWC.
  int channel_block() const { return last ? kChannelsLast : block; }
};

// The channel_blocks (Activation::channel_block: -1 channels last, 0 plain NCHW, 8 or 16) of
// an op's x (and x_grad) and of its out (and out_grad).
struct Layouts {
  int x = 0, out = 0;
};

// The `channel_block` attr: -1 (channels last), 0, 8 or 16 (the manifest's choices; checked
// again here, since a kernel divides by it).
inline int channel_block_of(const Attrs& attrs) {
  const int64_t b = attrs.i("channel_block");
  if (b != kChannelsLast && b != 0 && b != 8 && b != 16)
    fail("attr 'channel_block' must be -1, 0, 8 or 16, got %lld", (long long)b);
  return static_cast<int>(b);
}

// The stored block of `c` channels in the channel_block `block` layout.
inline int stored_block(int block, int64_t c) {
  return block == kChannelsLast ? static_cast<int>(std::max<int64_t>(c, 1)) : block;
}

// `attrs`, for a kernel that takes plain NCHW tensors only (the CUDA kernels): fails unless
// channel_block is 0. The blocked layout is oneDNN's, and the layout pass sets it for CPU plans
// only.
inline const Attrs& plain_only(const Attrs& attrs) {
  const int b = channel_block_of(attrs);
  if (b != 0)
    fail("channel_block %d is oneDNN's %s layout, which only the CPU kernels take; the CUDA "
         "kernels take NCHW tensors (channel_block 0, as the layout pass leaves it for a CUDA "
         "plan)",
         b, b == kChannelsLast ? "channels-last" : "blocked");
  return attrs;
}

// t as an activation: 4-D is plain NCHW; 5-D is blocked, allowed only when the op's
// channel_block `block` is set and t's last axis is that block.
inline Activation activation_of(const Tensor& t, int block, const char* what) {
  Activation a;
  if (t.ndim() == 4) {
    a.n = t.dim(0), a.c = t.dim(1), a.h = t.dim(2), a.w = t.dim(3);
    return a;
  }
  if (block == 0) fail("%s must be 4-D (NCHW), got %s", what, t.describe().c_str());
  if (block == kChannelsLast) {
    if (t.ndim() != 5 || t.dim(1) != 1)
      fail("%s must be 4-D (NCHW) or, with channel_block -1, channels last [N, 1, H, W, C], "
           "got %s", what, t.describe().c_str());
    a.n = t.dim(0), a.c = t.dim(4), a.h = t.dim(2), a.w = t.dim(3);
    a.block = stored_block(block, a.c), a.last = true;
    return a;
  }
  if (t.ndim() != 5 || t.dim(4) != block)
    fail("%s must be 4-D (NCHW) or, with channel_block %d, 5-D [N, C / %d, H, W, %d], got %s",
         what, block, block, block, t.describe().c_str());
  a.n = t.dim(0), a.c = t.dim(1) * block, a.h = t.dim(2), a.w = t.dim(3), a.block = block;
  return a;
}

// The activation an op writes: [n, c, h, w] in the op's channel_block layout, whose block must
// divide c (a blocked buffer this ABI binds has no padding).
inline Activation output_activation(int64_t n, int64_t c, int64_t h, int64_t w, int block,
                                    const char* what) {
  if (block > 0 && c % block != 0)
    fail("%s has %lld channels, which channel_block %d does not divide", what, (long long)c, block);
  Activation a;
  a.n = n, a.c = c, a.h = h, a.w = w;
  a.block = stored_block(block, c), a.last = block == kChannelsLast;
  return a;
}

#if !defined(__CUDACC__)  // (parallel loops: CPU files only, as in common.hpp)
// Copies between plain NCHW and nChw{b}c (a.block), for T of any size; parallel over the
// (image, channel block) tiles, each a transpose of [b, H * W] into [H * W, b] (float32 where
// b is a multiple of 8: layout_avx2.cpp's, on CPUs with AVX2).
template <class T> void to_blocked(const Activation& a, const T* plain, T* blocked, int threads) {
  const int64_t b = a.block, plane = a.plane(), tiles = a.n * (a.c / b);
  const bool vector = std::is_same_v<T, float> && b % 8 == 0 && use_avx2();
  parallel_rows(tiles, threads, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane * b, 1)),
                [&](int64_t lo, int64_t hi) {
                  if constexpr (std::is_same_v<T, float>)
                    if (vector) return avx2::to_blocked_f32(plain, blocked, b, plane, lo, hi);
                  for (int64_t t = lo; t < hi; ++t) {
                    const T* src = plain + t * b * plane;  // channels t * b .. of image t / (C / b)
                    T* dst = blocked + t * b * plane;
                    for (int64_t s = 0; s < plane; ++s)
                      for (int64_t j = 0; j < b; ++j) dst[s * b + j] = src[j * plane + s];
                  }
                });
}

template <class T> void to_plain(const Activation& a, const T* blocked, T* plain, int threads) {
  const int64_t b = a.block, plane = a.plane(), tiles = a.n * (a.c / b);
  const bool vector = std::is_same_v<T, float> && b % 8 == 0 && use_avx2();
  parallel_rows(tiles, threads, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane * b, 1)),
                [&](int64_t lo, int64_t hi) {
                  if constexpr (std::is_same_v<T, float>)
                    if (vector) return avx2::to_plain_f32(blocked, plain, b, plane, lo, hi);
                  for (int64_t t = lo; t < hi; ++t) {
                    const T* src = blocked + t * b * plane;
                    T* dst = plain + t * b * plane;
                    for (int64_t j = 0; j < b; ++j)
                      for (int64_t s = 0; s < plane; ++s) dst[j * plane + s] = src[s * b + j];
                  }
                });
}

#endif  // !defined(__CUDACC__)

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_LAYOUT_HPP_
