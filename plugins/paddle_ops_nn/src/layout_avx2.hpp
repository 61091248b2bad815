// Declarations shared by layout.hpp and layout_avx2.cpp: the float32 copies between plain
// NCHW and channel-blocked activations, compiled for AVX2. Plain declarations only (as in
// softmax_avx2.hpp).
#ifndef PADDLE_OPS_NN_LAYOUT_AVX2_HPP_
#define PADDLE_OPS_NN_LAYOUT_AVX2_HPP_

#include <cstdint>

namespace paddle_ops_nn::avx2 {

// Tiles [lo, hi) of layout.hpp's to_blocked and to_plain for float32: tile t transposes
// [b, plane] (plain) into [plane, b] (blocked) or back, b a multiple of 8, in 8x8 blocks held
// in registers. Call only on CPUs with AVX2.
void to_blocked_f32(const float* plain, float* blocked, int64_t b, int64_t plane, int64_t lo,
                    int64_t hi);
void to_plain_f32(const float* blocked, float* plain, int64_t b, int64_t plane, int64_t lo,
                  int64_t hi);

}  // namespace paddle_ops_nn::avx2

#endif  // PADDLE_OPS_NN_LAYOUT_AVX2_HPP_
