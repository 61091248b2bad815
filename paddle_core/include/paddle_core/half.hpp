// paddle_core/half.hpp: the 16-bit floats as kernels hold them: float16 (IEEE binary16,
// NumPy's float16, CUDA's __half) and bfloat16 (the top half of a float32: ml_dtypes' bfloat16,
// CUDA's __nv_bfloat16). Included by kernel.hpp; standard headers only, and nvcc compiles it.
//
// They are storage types: kernels load them, compute in float32 (`compute_t<T>`), and store
// the result rounded once. Widening (`float(h)`) is implicit and exact; narrowing is explicit
// (`float16(v)` for a float, a double or an integer) and rounds to nearest, ties to even,
// straight from the value given (a double is not rounded to float first), as NumPy's float16
// does. Overflow gives infinity and NaN stays NaN (quieted, its sign and the top of its payload
// kept, both ways, as x86's F16C does). There is no arithmetic on them, so no rounding happens
// unseen.
// Under nvcc, device code converts floats with CUDA's instructions (__float2half_rn,
// __float2bfloat16_rn); the host's conversions are the portable ones below, which a kernel may
// replace by vector instructions where the CPU has them (F16C), bit for bit the same.
#ifndef PADDLE_CORE_HALF_HPP_
#define PADDLE_CORE_HALF_HPP_

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// As kernel.hpp defines it: __host__ __device__ under nvcc, nothing for the host compiler.
#ifndef PADDLE_CORE_HD
#if defined(__CUDACC__)
#define PADDLE_CORE_HD __host__ __device__
#else
#define PADDLE_CORE_HD
#endif
#endif

namespace paddle_core {
namespace half_detail {

PADDLE_CORE_HD inline uint32_t bits_of(float v) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(v);
#else
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}

PADDLE_CORE_HD inline uint64_t bits_of(double v) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
#endif
}

PADDLE_CORE_HD inline float float_of(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
#endif
}

// The 16 bits (sign, Exp exponent bits, Man mantissa bits) of the IEEE value whose bits are
// `bits` (sign, SrcExp, SrcMan), rounded to nearest, ties to even. One routine for every
// source (float, double) and destination (float16: 5 + 10, bfloat16: 8 + 7).
template <int SrcExp, int SrcMan, int Exp, int Man, class U>
PADDLE_CORE_HD inline uint16_t round_bits(U bits) {
  static_assert(1 + Exp + Man == 16 && SrcMan > Man && SrcExp >= Exp, "a narrowing to 16 bits");
  constexpr int kSrcBias = (1 << (SrcExp - 1)) - 1, kBias = (1 << (Exp - 1)) - 1;
  constexpr U kSrcExpMask = (U(1) << SrcExp) - 1;
  constexpr uint32_t kInf = ((1u << Exp) - 1) << Man;
  const uint32_t sign = static_cast<uint32_t>(bits >> (SrcExp + SrcMan)) << 15;
  const U exp = (bits >> SrcMan) & kSrcExpMask, man = bits & ((U(1) << SrcMan) - 1);
  if (exp == kSrcExpMask)  // infinity, or NaN: quiet, with the top of its payload
    return static_cast<uint16_t>(
        sign | kInf |
        (man != 0 ? (1u << (Man - 1)) | static_cast<uint32_t>(man >> (SrcMan - Man)) : 0u));
  // The value is sig * 2^(e - kSrcBias - SrcMan): sig has its implicit bit unless subnormal.
  const U sig = exp != 0 ? man | (U(1) << SrcMan) : man;
  // The result's biased exponent, were it normal.
  const int de = (exp != 0 ? static_cast<int>(exp) : 1) - kSrcBias + kBias;
  if (de >= (1 << Exp) - 1) return static_cast<uint16_t>(sign | kInf);
  // A normal result is ((de - 1) << Man) + (sig >> (SrcMan - Man)): sig's implicit bit lands in
  // the exponent field. A subnormal one (de < 1) is sig shifted further, with exponent 0.
  const int shift = SrcMan - Man + (de < 1 ? 1 - de : 0);
  if (shift > SrcMan + 1) return static_cast<uint16_t>(sign);  // under half the least subnormal
  U q = sig >> shift;
  const U rest = sig & ((U(1) << shift) - 1), half = U(1) << (shift - 1);
  q += (rest > half || (rest == half && (q & 1) != 0)) ? 1 : 0;
  // Rounding up may carry into the exponent: to the next binade, or to infinity.
  const U base = de < 1 ? U(0) : U(de - 1) << Man;
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(base + q));
}

// An integer as a double that rounds to a 16-bit float as the integer itself does. Below 2^53
// that is its value. Above, a double cannot hold it, and rounding it to a double first would
// round twice (2^62 + 2^54 + 1 would go to 2^62 + 2^54, a tie, then to 2^62 in bfloat16): its
// top 53 bits are kept instead, with the bits cut off or-ed into the last one (rounding to odd),
// which keeps "below, at or above half way" for every format of up to 51 significant bits.
template <class I> PADDLE_CORE_HD inline double odd_rounded(I v) {
  if constexpr (sizeof(I) < sizeof(int64_t) || std::is_same_v<I, bool>) {
    return static_cast<double>(v);  // exact
  } else {
    using U = std::make_unsigned_t<I>;
    bool negative = false;
    if constexpr (std::is_signed_v<I>) negative = v < 0;
    U m = negative ? U(0) - static_cast<U>(v) : static_cast<U>(v);  // |v|, defined for the least
    U cut = 0;
    int shift = 0;
    for (; m >> 53 != 0; ++shift) {
      cut |= m & 1;
      m >>= 1;
    }
    const double d = static_cast<double>(m | cut) * static_cast<double>(U(1) << shift);  // exact
    return negative ? -d : d;
  }
}

// The float of a float16's bits (exact).
PADDLE_CORE_HD inline float float16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f)  // infinity, or NaN: quiet, as F16C's VCVTPH2PS gives
    return float_of(sign | 0x7f800000u | (man << 13) | (man != 0 ? 0x400000u : 0u));
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign != 0 ? -v : v;
  }
  return float_of(sign | ((exp + 112) << 23) | (man << 13));  // rebias 15 -> 127
}

// A float rounded to the 16-bit format of Exp exponent and Man mantissa bits.
template <int Exp, int Man> PADDLE_CORE_HD inline uint16_t narrow(float v) {
#if defined(__CUDA_ARCH__)
  if constexpr (Exp == 5) {
    return __half_as_ushort(__float2half_rn(v));
  } else {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
#else
  return round_bits<8, 23, Exp, Man>(bits_of(v));
#endif
}

// The float of the 16-bit format's bits (exact).
template <int Exp, int Man> PADDLE_CORE_HD inline float widen(uint16_t h) {
  if constexpr (Exp == 8) {  // bfloat16: the top half of a float
    return float_of(static_cast<uint32_t>(h) << 16);
  } else {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    return float16_bits_to_float(h);
#endif
  }
}

}  // namespace half_detail

// A 16-bit float of Exp exponent and Man mantissa bits (and a sign bit): float16, bfloat16.
template <int Exp, int Man> struct HalfFloat {
  uint16_t bits;

  HalfFloat() = default;
  PADDLE_CORE_HD explicit HalfFloat(float v) : bits(half_detail::narrow<Exp, Man>(v)) {}
  PADDLE_CORE_HD explicit HalfFloat(double v)
      : bits(half_detail::round_bits<11, 52, Exp, Man>(half_detail::bits_of(v))) {}
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  PADDLE_CORE_HD explicit HalfFloat(I v) : HalfFloat(half_detail::odd_rounded(v)) {}

  PADDLE_CORE_HD operator float() const { return half_detail::widen<Exp, Man>(bits); }
  static PADDLE_CORE_HD HalfFloat from_bits(uint16_t b) {
    HalfFloat h;
    h.bits = b;
    return h;
  }
};

// IEEE binary16: 5 exponent, 10 mantissa bits (max 65504, least subnormal 2^-24).
using float16 = HalfFloat<5, 10>;
// bfloat16: 8 exponent, 7 mantissa bits: a float32 with its low 16 bits cut.
using bfloat16 = HalfFloat<8, 7>;

static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "16-bit storage");
static_assert(std::is_trivially_copyable_v<float16> && std::is_trivially_copyable_v<bfloat16>,
              "kernels copy them as bytes");

// float16 or bfloat16: stored in 16 bits, computed in float32.
template <class T>
inline constexpr bool is_half_float_v =
    std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// The type a kernel computes in for elements of type T: float for the 16-bit floats, T itself
// for every other type.
template <class T> using compute_t = std::conditional_t<is_half_float_v<T>, float, T>;

}  // namespace paddle_core

#endif  // PADDLE_CORE_HALF_HPP_
