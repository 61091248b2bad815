// Ops that draw random numbers: the initializers uniform_random, gaussian_random and
// truncated_gaussian_random, and dropout (with its gradient).
//
// Element i of a run draws from the SDK's counter-based generator (paddle_core/random.hpp),
// keyed by the op's seed attr (nonzero: the same numbers every run) or by the core's key for
// the op and counter for the run (seed 0), so results do not depend on the thread count.
// Memory contract: C-contiguous tensors; outputs have the shapes the shape rules inferred;
// dropout's out and mask have x's shape (mask uint8), checked in prepare.
#include <cmath>

#include <paddle_core/random.hpp>

#include "common.hpp"

namespace pon {
namespace {

using pc::Random;

// out[i] = U[min, max).
class UniformRandom {
 public:
  UniformRandom(const Attrs& attrs, const Slots&, const Slots& out)
      : lo_(attrs.f("min")), hi_(attrs.f("max")), seed_(attrs.l("seed")) {
    if (!(lo_ < hi_)) fail("min (%g) must be below max (%g)", lo_, hi_);
    dispatch(out(0).dtype(), Floats{}, [](auto) {});
  }

  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, seed_);
    dispatch(out(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      const T lo = static_cast<T>(lo_), width = static_cast<T>(hi_ - lo_);
      parallel_for(out(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) {
          const T v = lo + width * rng.uniform<T>(static_cast<uint64_t>(i));
          o[i] = v < static_cast<T>(hi_) ? v : lo;  // rounding must not reach max
        }
      });
    });
  }

 private:
  double lo_, hi_;
  int64_t seed_;
};

// out[i] = N(mean, std^2); truncated: values beyond 2 std are drawn again (Paddle's).
template <bool kTruncated> class GaussianRandom {
 public:
  GaussianRandom(const Attrs& attrs, const Slots&, const Slots& out)
      : mean_(attrs.f("mean")), std_(attrs.f("std")), seed_(attrs.l("seed")) {
    dispatch(out(0).dtype(), Floats{}, [](auto) {});
  }

  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, seed_);
    dispatch(out(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      const int64_t n = out(0).numel();
      parallel_for(n, ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) o[i] = static_cast<T>(mean_ + std_ * draw(rng, i, n));
      });
    });
  }

 private:
  // A standard normal number for element i; redraws (from the elements' later blocks: index
  // i + k * n) land beyond 2 only with probability 0.0455^k.
  double draw(const Random& rng, int64_t i, int64_t n) const {
    double z = rng.normal<double>(static_cast<uint64_t>(i));
    for (uint64_t k = 1; kTruncated && std::fabs(z) > 2.0; ++k)
      z = rng.normal<double>(static_cast<uint64_t>(i) + k * static_cast<uint64_t>(n));
    return z;
  }
  double mean_, std_;
  int64_t seed_;
};

// Whether dropout scales while training (upscale_in_train) or at inference
// (downgrade_in_infer, Paddle 1.x's default).
bool upscale(const Attrs& attrs) {
  return attrs.s("dropout_implementation") == "upscale_in_train";
}

// Training: mask[i] = U[0,1) >= p, out = x * mask (/ (1 - p) when upscaling).
// Inference (is_test): out = x (upscale) or x * (1 - p), mask = 1.
class Dropout {
 public:
  Dropout(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(attrs.f("dropout_prob")),
        test_(attrs.b("is_test")),
        upscale_(upscale(attrs)),
        seed_(attrs.l("seed")) {
    expect_same_shape(in(0), out(0), "x and out");
    expect_same_dtype(in(0), out(0), "x and out");
    expect_same_shape(in(0), out(1), "x and mask");
    out(1).expect_dtype(PC_UINT8, "mask");
    dispatch(in(0).dtype(), Floats{}, [](auto) {});
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, seed_);
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      T* o = out(0).data<T>();
      uint8_t* mask = out(1).data<uint8_t>();
      const T keep = static_cast<T>(upscale_ ? 1.0 / (1.0 - p_) : 1.0);
      const T infer = static_cast<T>(upscale_ ? 1.0 : 1.0 - p_);
      const float p = static_cast<float>(p_);
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) {
          if (test_) {
            mask[i] = 1;
            o[i] = x[i] * infer;
          } else {
            mask[i] = rng.uniform<float>(static_cast<uint64_t>(i)) >= p;
            o[i] = mask[i] ? x[i] * keep : T(0);
          }
        }
      });
    });
  }

 private:
  double p_;
  bool test_, upscale_;
  int64_t seed_;
};

// x_grad = out_grad * mask, scaled as the forward op scaled x.
class DropoutGrad {
 public:
  DropoutGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : p_(attrs.f("dropout_prob")), test_(attrs.b("is_test")), upscale_(upscale(attrs)) {
    in(0).expect_dtype(PC_UINT8, "mask");
    expect_same_shape(in(0), in(1), "mask and out_grad");
    expect_same_shape(in(1), out(0), "out_grad and x_grad");
    expect_same_dtype(in(1), out(0), "out_grad and x_grad");
    dispatch(in(1).dtype(), Floats{}, [](auto) {});
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(1).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const uint8_t* mask = in(0).data<uint8_t>();
      const T* g = in(1).data<T>();
      T* dx = out(0).data<T>();
      const T scale = static_cast<T>(test_ ? (upscale_ ? 1.0 : 1.0 - p_)
                                           : (upscale_ ? 1.0 / (1.0 - p_) : 1.0));
      parallel_for(in(1).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) dx[i] = mask[i] ? g[i] * scale : T(0);
      });
    });
  }

 private:
  double p_;
  bool test_, upscale_;
};

}  // namespace

// The kernels of this file, by the names the manifest uses.
const pc::Family& random_kernels() {
  static const pc::Family family = {
      pc::kernel<UniformRandom>("uniform_random"),
      pc::kernel<GaussianRandom<false>>("gaussian_random"),
      pc::kernel<GaussianRandom<true>>("truncated_gaussian_random"),
      pc::kernel<Dropout>("dropout"),
      pc::kernel<DropoutGrad>("dropout_grad"),
  };
  return family;
}

}  // namespace pon
