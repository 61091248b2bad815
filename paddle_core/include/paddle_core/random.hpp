// paddle_core/random.hpp: random numbers for kernels of ops declared `random`, reproducible
// across runs, thread counts and devices.
//
// A counter-based generator (Philox4x32-10, Salmon et al., SC'11) maps (key, counter) to
// random bits with no state: element i of a run gets the numbers of block i / 4, so any thread
// can compute any element, and a chunked loop gives the same result however it is split.
//
//   Random rng(ctx, seed_attr);          // in run(); seed_attr 0: the core's key and run
//   float u = rng.uniform<float>(i);     // in [0, 1)
//   rng.for_uniforms<float>(lo, hi, [&](int64_t i, float u) {...});  // the same, 4x faster
//   double z = rng.normal<double>(i);    // standard normal
//
// With a nonzero seed the numbers are the same on every run (a fixed mask, a fixed
// initialisation); with seed 0 they come from the op's key and the run's counter, which the
// core provides (pc_context), so successive runs differ and a rerun reproduces them.
//
// Under nvcc the generator is __host__ __device__ (PADDLE_CORE_HD): build the Random in run()
// on the host, pass it to a CUDA kernel by value, and element i gets the same bits there as on
// the CPU (uniform numbers are then equal; normal ones may differ in the last bits, device log
// and cos being within 1-2 ulp).
#ifndef PADDLE_CORE_RANDOM_HPP_
#define PADDLE_CORE_RANDOM_HPP_

#include <cmath>
#include <cstdint>

#include "paddle_core/kernel.hpp"

namespace paddle_core {

// Philox4x32 with 10 rounds: four 32-bit random words for a 128-bit counter and a 64-bit key.
struct Philox {
  uint32_t key[2];

  PADDLE_CORE_HD void block(const uint32_t counter[4], uint32_t out[4]) const {
    uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = uint64_t{0xD2511F53u} * c0, p1 = uint64_t{0xCD9E8D57u} * c2;
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(p1);
      c3 = static_cast<uint32_t>(p0);
      c0 = n0;
      c2 = n2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
  }
};

// splitmix64: spreads a seed's bits over the whole key (seeds 1 and 2 give unrelated streams).
PADDLE_CORE_HD inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Random {
 public:
  // seed != 0: the same numbers on every run; 0: the op's key and the run's counter.
  Random(const Context& ctx, int64_t seed)
      : Random(seed != 0 ? mix64(static_cast<uint64_t>(seed)) : ctx.random_key(),
               seed != 0 ? 0 : ctx.random_counter()) {}

  // The generator of a key and a run counter, as key() and run() give them: a gradient kernel
  // handed them by its forward op (in a tensor) draws the forward's numbers again.
  PADDLE_CORE_HD Random(uint64_t key, uint64_t run) : run_(run) {
    philox_.key[0] = static_cast<uint32_t>(key);
    philox_.key[1] = static_cast<uint32_t>(key >> 32);
  }

  // The key and the run counter: what a vectorised Philox takes (paddle_core/avx2.hpp's
  // random_bits8) to give the same blocks as bits().
  PADDLE_CORE_HD const Philox& philox() const { return philox_; }
  PADDLE_CORE_HD uint64_t key() const { return philox_.key[0] | uint64_t{philox_.key[1]} << 32; }
  PADDLE_CORE_HD uint64_t run() const { return run_; }

  // The four words of block `index` (elements 4 * index .. 4 * index + 3).
  PADDLE_CORE_HD void bits(uint64_t index, uint32_t out[4]) const {
    const uint32_t counter[4] = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                                 static_cast<uint32_t>(run_), static_cast<uint32_t>(run_ >> 32)};
    philox_.block(counter, out);
  }

  // How many uniform numbers of type T one block of bits holds: 4 floats or 2 doubles.
  template <class T> static constexpr int kPerBlock = sizeof(T) == 4 ? 4 : 2;

  // A uniform number in [0, 1) for element i: 24 random bits for float, 53 for double.
  template <class T> PADDLE_CORE_HD T uniform(uint64_t i) const {
    T u[kPerBlock<T>];
    uniforms(i / kPerBlock<T>, u);
    return u[i % kPerBlock<T>];
  }

  // The uniform numbers of the kPerBlock<T> elements of block `block` (elements block *
  // kPerBlock<T> on), from one block of bits: a loop over elements that calls uniform<T> for
  // each computes the block kPerBlock<T> times.
  template <class T> PADDLE_CORE_HD void uniforms(uint64_t block, T* u) const {
    uint32_t w[4];
    bits(block, w);
    if constexpr (sizeof(T) == 4) {
      for (int k = 0; k < 4; ++k) u[k] = static_cast<T>(w[k] >> 8) * T(1.0 / 16777216.0);
    } else {
      for (int k = 0; k < 2; ++k) {
        const uint64_t hi = w[2 * k], lo = w[2 * k + 1];
        u[k] = static_cast<T>(((hi << 21) ^ (lo >> 11)) & ((uint64_t{1} << 53) - 1)) *
               T(1.0 / 9007199254740992.0);
      }
    }
  }

  // f(i, uniform<T>(i)) for i in [lo, hi), a block of bits per kPerBlock<T> elements: the CPU
  // loops' way to the same numbers.
  template <class T, class F> void for_uniforms(int64_t lo, int64_t hi, F&& f) const {
    constexpr int64_t k = kPerBlock<T>;
    T u[k];
    for (int64_t i = lo; i < hi;) {
      uniforms(static_cast<uint64_t>(i / k), u);
      for (const int64_t end = hi < (i / k + 1) * k ? hi : (i / k + 1) * k; i < end; ++i)
        f(i, u[i % k]);
    }
  }

  // A standard normal number for element i (Box-Muller on two uniforms of its own block).
  template <class T> PADDLE_CORE_HD T normal(uint64_t i) const {
    double u1, u2;
    normal_uniforms(i, u1, u2);
    return static_cast<T>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

  // The two uniform numbers normal(i) is made of: u1 in (0, 1], u2 in [0, 1), each a multiple
  // of 2^-32 (a vectorised Box-Muller takes them from here).
  PADDLE_CORE_HD void normal_uniforms(uint64_t i, double& u1, double& u2) const {
    uint32_t w[4];
    bits(i, w);
    u1 = (static_cast<double>(w[0]) + 1.0) / 4294967296.0;
    u2 = static_cast<double>(w[1]) / 4294967296.0;
  }

 private:
  Philox philox_{};
  uint64_t run_ = 0;
};

}  // namespace paddle_core

#endif  // PADDLE_CORE_RANDOM_HPP_
