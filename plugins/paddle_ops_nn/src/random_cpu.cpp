// Ops that draw random numbers: the initializers uniform_random, gaussian_random and
// truncated_gaussian_random, and dropout (with its gradient).
//
// Element i of a run draws from the SDK's counter-based generator (paddle_core/random.hpp),
// keyed by the op's seed attr (nonzero: the same numbers every run) or by the core's key for
// the op and counter for the run (seed 0), so results do not depend on the thread count. The
// draws and checks are random_ops.hpp's (shared with the CUDA kernels).
// Memory contract: C-contiguous tensors; outputs have the shapes the shape rules inferred;
// dropout's out and mask have x's shape (mask uint8), checked in prepare.
#include <algorithm>

#include "random_avx2.hpp"
#include "random_ops.hpp"

namespace paddle_ops_nn {
namespace {

// Random::for_uniforms<float>(a, b, f) through random_avx2.cpp's Philox, eight blocks at a
// time: f(i, u) gets the same numbers (call only where use_avx2()).
template <class F> void for_float_uniforms(const Random& rng, int64_t a, int64_t b, F&& f) {
  constexpr int64_t kBlocks = 64;  // a multiple of 8
  float u[4 * kBlocks];
  const uint32_t* key = rng.philox().key;
  for (int64_t block = a / 4; 4 * block < b; block += kBlocks) {
    avx2::float_uniforms(key[0], key[1], rng.run(), static_cast<uint64_t>(block), kBlocks, u);
    const int64_t lo = std::max(a, 4 * block), hi = std::min(b, 4 * (block + kBlocks));
    for (int64_t i = lo; i < hi; ++i) f(i, u[i - 4 * block]);
  }
}

class UniformRandom {
 public:
  static constexpr pc::Signature signature{"", "1"};
  using DTypes = Floats;
  UniformRandom(const Attrs& attrs, const Slots&, const Slots& out)
      : a_(attrs), avx2_(use_avx2()) {
    check_uniform(a_, out);
  }

  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, a_.seed);
    dispatch(out(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      parallel_for(out(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        auto put = [&](int64_t i, T u) { o[i] = uniform_in<T>(u, a_.lo, a_.hi); };
        if constexpr (std::is_same_v<T, float>) {
          if (avx2_) return for_float_uniforms(rng, a, b, put);
        }
        rng.for_uniforms<T>(a, b, put);
      });
    });
  }

 private:
  UniformAttrs a_;
  bool avx2_;
};

// With AVX2, the first draws of kBatch elements at a time go through random_avx2.cpp's
// Box-Muller (in double, within 4 ulps; libm's differs by a few ulps, more near 0). Redraws
// of the truncated op are libm's.
template <bool kTruncated> class GaussianRandom {
 public:
  static constexpr pc::Signature signature{"", "1"};
  using DTypes = Floats;
  GaussianRandom(const Attrs& attrs, const Slots&, const Slots& out)
      : a_(attrs), avx2_(use_avx2()) {
    check_gaussian(out);
  }

  void run(const Slots&, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, a_.seed);
    dispatch(out(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      T* o = out(0).data<T>();
      const int64_t n = out(0).numel();
      parallel_for(n, ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        if (avx2_) return draw_batches(rng, o, n, a, b);
        for (int64_t i = a; i < b; ++i)
          o[i] = static_cast<T>(a_.mean + a_.std * gaussian_draw<kTruncated>(rng, i, n));
      });
    });
  }

 private:
  static constexpr int64_t kBatch = 256;

  template <class T>
  void draw_batches(const Random& rng, T* o, int64_t n, int64_t a, int64_t b) const {
    double u1[kBatch], u2[kBatch], z[kBatch];
    const uint32_t* key = rng.philox().key;
    for (int64_t i = a; i < b; i += kBatch) {
      // Lanes past m draw numbers of the next elements, unused.
      const int64_t m = std::min(kBatch, b - i), lanes = (m + 7) / 8 * 8;
      avx2::normal_uniforms(key[0], key[1], rng.run(), static_cast<uint64_t>(i), lanes, u1, u2);
      avx2::box_muller(u1, u2, z, lanes);
      for (int64_t k = 0; k < m; ++k) {
        const double kept = gaussian_kept<kTruncated>(rng, i + k, n, z[k]);
        o[i + k] = static_cast<T>(a_.mean + a_.std * kept);
      }
    }
  }

  GaussianAttrs a_;
  bool avx2_;
};

class Dropout {
 public:
  static constexpr pc::Signature signature{"1", "11"};
  using DTypes = Floats;
  Dropout(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), avx2_(use_avx2()) {
    check_dropout(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Random rng(ctx, a_.seed);
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      T* o = out(0).data<T>();
      uint8_t* mask = out(1).data<uint8_t>();
      const T scale = static_cast<T>(a_.scale());
      const float p = static_cast<float>(a_.p);
      parallel_for(in(0).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        if (a_.test) {
          for (int64_t i = a; i < b; ++i) dropout_element(rng, true, p, scale, x, o, mask, i);
          return;
        }
        auto keep = [&](int64_t i, float u) { dropout_kept(u, p, scale, x, o, mask, i); };
        if (avx2_) return for_float_uniforms(rng, a, b, keep);
        rng.for_uniforms<float>(a, b, keep);
      });
    });
  }

 private:
  DropoutForwardAttrs a_;
  bool avx2_;
};

class DropoutGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  DropoutGrad(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    check_dropout_grad(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(1).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const uint8_t* mask = in(0).data<uint8_t>();
      const T* g = in(1).data<T>();
      T* dx = out(0).data<T>();
      const T scale = static_cast<T>(a_.scale());
      parallel_for(in(1).numel(), ctx.num_threads(), kGrain, [&](int64_t a, int64_t b) {
        for (int64_t i = a; i < b; ++i) dropout_grad_element(mask, g, scale, dx, i);
      });
    });
  }

 private:
  DropoutAttrs a_;
};

}  // namespace

// The kernels of this file, by the names the manifest uses.
PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<UniformRandom>("uniform_random"),
    pc::kernel<GaussianRandom<false>>("gaussian_random"),
    pc::kernel<GaussianRandom<true>>("truncated_gaussian_random"),
    pc::kernel<Dropout>("dropout"),
    pc::kernel<DropoutGrad>("dropout_grad"));

}  // namespace paddle_ops_nn
