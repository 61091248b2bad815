// The 16-bit floats (float16, bfloat16; paddle_core/half.hpp) on the CPU: batch conversions to
// and from float32, and AsFloat32, which runs a float32 kernel for them.
//
// The kernels compute these dtypes in float32 and round each result once: elementwise loops
// widen a chunk of elements at a time (common.hpp's row functions), the other kernels run their
// float32 code on widened copies (AsFloat32: a reduction accumulates in float32, a matmul
// calls sgemm). The conversions use F16C (float16) and AVX2 (bfloat16) where the CPU has them,
// chosen once per process (PADDLE_OPS_MATH_DISABLE_AVX2=1 forces the portable loops); both
// give the SDK's scalar conversions bit for bit (round to nearest even, subnormals kept).
#ifndef PADDLE_OPS_MATH_HALF_HPP_
#define PADDLE_OPS_MATH_HALF_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include <paddle_core/kernel.hpp>
#include <paddle_core/parallel.hpp>

namespace paddle_ops_math {

namespace pc = paddle_core;

// dst[i] = float(src[i]) for i in [0, n) (exact).
void widen(const pc::float16* src, float* dst, int64_t n);
void widen(const pc::bfloat16* src, float* dst, int64_t n);
// dst[i] = src[i] rounded to nearest, ties to even.
void narrow(const float* src, pc::float16* dst, int64_t n);
void narrow(const float* src, pc::bfloat16* dst, int64_t n);

// half_avx2.cpp: the loops behind widen and narrow on CPUs with AVX2 and F16C. Each handles
// any n, its tail through the SDK's scalar conversions.
namespace avx2 {
void widen_f16(const uint16_t* src, float* dst, int64_t n);
void narrow_f16(const float* src, uint16_t* dst, int64_t n);
void widen_bf16(const uint16_t* src, float* dst, int64_t n);
void narrow_bf16(const float* src, uint16_t* dst, int64_t n);
}  // namespace avx2

// Elements a row function of 16-bit floats converts at a time (two float buffers of it stay
// on the stack and in L1).
constexpr int64_t kHalfChunk = 256;

// The float32 views of one side (inputs or outputs) of a kernel's tensors: the 16-bit float
// tensors appear as float32, the others as they are.
class Float32Views {
 public:
  explicit Float32Views(const pc_tensors* t);
  // True when some tensor is float16 or bfloat16 (else the views are the tensors themselves).
  bool any() const { return any_; }
  // The views for prepare (shapes and dtypes, no data).
  pc::Slots prepared() const { return pc::Slots(&view_); }

  // One run's views: float32 scratch for each 16-bit float tensor, widened from its data when
  // `load` (inputs); narrow_back() rounds the scratch into the tensors (outputs).
  class Bound {
   public:
    Bound(const Float32Views& self, const pc_tensors* t, bool load, int32_t threads);
    pc::Slots slots() const { return pc::Slots(&view_); }
    void narrow_back(int32_t threads) const;

   private:
    const pc_tensors* t_;
    std::vector<pc_tensor> items_;
    std::vector<std::unique_ptr<float[]>> scratch_;  // per item; null for the others
    pc_tensors view_;
  };

 private:
  std::vector<pc_tensor> items_;
  pc_tensors view_;
  bool any_ = false;
};

// Kernel K run on float32 views of its float16 and bfloat16 tensors (widened before K runs,
// outputs rounded after), tensors of other dtypes passed as they are. K's prepare checks and
// dispatch see float32: a kernel written for float32 serves the 16-bit floats. It fits K's
// slots, and K's dtypes and the 16-bit floats.
template <class K> class AsFloat32 {
 public:
  static constexpr pc::Signature signature = K::signature;
  using DTypes = pc::Join<typename K::DTypes, pc::Floats16>;
  AsFloat32(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out,
            const pc::Context& ctx)
      : in_(in.raw()), out_(out.raw()) {
    if constexpr (std::is_constructible_v<K, pc::Attrs, pc::Slots, pc::Slots, pc::Context>)
      kernel_.emplace(attrs, in_.prepared(), out_.prepared(), ctx);
    else
      kernel_.emplace(attrs, in_.prepared(), out_.prepared());
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context& ctx) const {
    if (!in_.any() && !out_.any()) return kernel_->run(in, out, ctx);
    const int32_t threads = ctx.num_threads();
    const Float32Views::Bound x(in_, in.raw(), true, threads), y(out_, out.raw(), false, threads);
    kernel_->run(x.slots(), y.slots(), ctx);
    y.narrow_back(threads);
  }

 private:
  Float32Views in_, out_;
  std::optional<K> kernel_;
};

}  // namespace paddle_ops_math

#endif  // PADDLE_OPS_MATH_HALF_HPP_
