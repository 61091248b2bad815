// The random ops' draws and checks, written once for every device: the CPU kernels
// (random_cpu.cpp) and the CUDA kernels (random_cuda.cu) run the same prepare checks, and
// element i of a run computes the same value from the SDK's counter-based generator
// (paddle_core/random.hpp, __host__ __device__ under nvcc) on either device.
#ifndef PADDLE_OPS_NN_RANDOM_OPS_HPP_
#define PADDLE_OPS_NN_RANDOM_OPS_HPP_

#include <cmath>

#include <paddle_core/random.hpp>

#include "common.hpp"

namespace paddle_ops_nn {

using pc::Random;

// -- uniform_random: out[i] = U[min, max) --------------------------------------------------

struct UniformAttrs {
  explicit UniformAttrs(const Attrs& attrs)
      : lo(attrs.f("min")), hi(attrs.f("max")), seed(attrs.l("seed")) {}
  double lo, hi;
  int64_t seed;
};

inline void check_uniform(const UniformAttrs& a, const Slots& out) {
  if (!(a.lo < a.hi)) fail("min (%g) must be below max (%g)", a.lo, a.hi);
  dispatch(out(0).dtype(), Floats{}, [](auto) {});
}

// The value of uniform number u in [lo, hi).
template <class T> PADDLE_CORE_HD T uniform_in(T u, double lo, double hi) {
  const T v = static_cast<T>(lo) + mul_rounded(static_cast<T>(hi - lo), u);
  return v < static_cast<T>(hi) ? v : static_cast<T>(lo);  // rounding must not reach max
}

template <class T>
PADDLE_CORE_HD T uniform_value(const Random& rng, int64_t i, double lo, double hi) {
  return uniform_in<T>(rng.uniform<T>(static_cast<uint64_t>(i)), lo, hi);
}

// -- gaussian_random: out[i] = N(mean, std^2); truncated: beyond 2 std drawn again -----------

struct GaussianAttrs {
  explicit GaussianAttrs(const Attrs& attrs)
      : mean(attrs.f("mean")), std(attrs.f("std")), seed(attrs.l("seed")) {}
  double mean, std;
  int64_t seed;
};

inline void check_gaussian(const Slots& out) { dispatch(out(0).dtype(), Floats{}, [](auto) {}); }

// Element i of n's standard normal number, given z, its first draw: truncated, one beyond 2 is
// drawn again (from the elements' later blocks: index i + k * n), which lands beyond 2 only
// with probability 0.0455^k.
template <bool kTruncated>
PADDLE_CORE_HD double gaussian_kept(const Random& rng, int64_t i, int64_t n, double z) {
  for (uint64_t k = 1; kTruncated && std::fabs(z) > 2.0; ++k)
    z = rng.normal<double>(static_cast<uint64_t>(i) + k * static_cast<uint64_t>(n));
  return z;
}

// A standard normal number for element i of n.
template <bool kTruncated>
PADDLE_CORE_HD double gaussian_draw(const Random& rng, int64_t i, int64_t n) {
  return gaussian_kept<kTruncated>(rng, i, n, rng.normal<double>(static_cast<uint64_t>(i)));
}

// -- dropout --------------------------------------------------------------------------------

// Training: mask[i] = U[0,1) >= p, out = x * mask (/ (1 - p) when upscaling).
// Inference (is_test): out = x (upscale) or x * (1 - p), mask = 1. Whether dropout scales
// while training (upscale_in_train) or at inference (downgrade_in_infer, Paddle 1.x's default).
struct DropoutAttrs {
  explicit DropoutAttrs(const Attrs& attrs)
      : p(attrs.f("dropout_prob")),
        test(attrs.b("is_test")),
        upscale(attrs.s("dropout_implementation") == "upscale_in_train") {}
  // What x (forward) or out_grad (backward) is multiplied by where the mask keeps it.
  double scale() const {
    return test ? (upscale ? 1.0 : 1.0 - p) : (upscale ? 1.0 / (1.0 - p) : 1.0);
  }
  double p;
  bool test, upscale;
};

// dropout's attrs (dropout_grad has no seed).
struct DropoutForwardAttrs : DropoutAttrs {
  explicit DropoutForwardAttrs(const Attrs& attrs)
      : DropoutAttrs(attrs), seed(attrs.l("seed")) {}
  int64_t seed;
};

inline void check_dropout(const Slots& in, const Slots& out) {
  expect_same_shape(in(0), out(0), "x and out");
  expect_same_dtype(in(0), out(0), "x and out");
  expect_same_shape(in(0), out(1), "x and mask");
  out(1).expect_dtype(PC_UINT8, "mask");
  dispatch(in(0).dtype(), Floats{}, [](auto) {});
}

inline void check_dropout_grad(const Slots& in, const Slots& out) {
  in(0).expect_dtype(PC_UINT8, "mask");
  expect_same_shape(in(0), in(1), "mask and out_grad");
  expect_same_shape(in(1), out(0), "out_grad and x_grad");
  expect_same_dtype(in(1), out(0), "out_grad and x_grad");
  dispatch(in(1).dtype(), Floats{}, [](auto) {});
}

// Element i of dropout in training, given its uniform number u: its mask and out.
template <class T>
PADDLE_CORE_HD void dropout_kept(float u, float p, T scale, const T* x, T* o, uint8_t* mask,
                                 int64_t i) {
  mask[i] = u >= p;
  o[i] = mask[i] ? x[i] * scale : T(0);
}

// Element i of dropout: its mask and out.
template <class T>
PADDLE_CORE_HD void dropout_element(const Random& rng, bool test, float p, T scale, const T* x,
                                    T* o, uint8_t* mask, int64_t i) {
  if (test) {
    mask[i] = 1;
    o[i] = x[i] * scale;
  } else {
    dropout_kept(rng.uniform<float>(static_cast<uint64_t>(i)), p, scale, x, o, mask, i);
  }
}

// x_grad = out_grad * mask, scaled as the forward op scaled x.
template <class T>
PADDLE_CORE_HD void dropout_grad_element(const uint8_t* mask, const T* g, T scale, T* dx,
                                         int64_t i) {
  dx[i] = mask[i] ? g[i] * scale : T(0);
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_RANDOM_OPS_HPP_
