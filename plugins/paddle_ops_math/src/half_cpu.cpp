// The 16-bit floats on the CPU (half.hpp): batch conversions, dispatched once per process to the
// AVX2/F16C loops of half_avx2.cpp or to the SDK's scalar conversions, and AsFloat32's views.
#include "half.hpp"

#include "common.hpp"  // use_avx2

namespace paddle_ops_math {
namespace {

// Whether the vector loops run: use_avx2(), and the CPU has F16C (read once: these run
// inside kernels' loops).
bool use_f16c() {
  static const bool yes = use_avx2() && __builtin_cpu_supports("f16c");
  return yes;
}

const uint16_t* bits(const void* p) { return static_cast<const uint16_t*>(p); }
uint16_t* bits(void* p) { return static_cast<uint16_t*>(p); }

}  // namespace

void widen(const pc::float16* src, float* dst, int64_t n) {
  if (use_f16c()) return avx2::widen_f16(bits(src), dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
void widen(const pc::bfloat16* src, float* dst, int64_t n) {
  if (use_f16c()) return avx2::widen_bf16(bits(src), dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
void narrow(const float* src, pc::float16* dst, int64_t n) {
  if (use_f16c()) return avx2::narrow_f16(src, bits(dst), n);
  for (int64_t i = 0; i < n; ++i) dst[i] = pc::float16(src[i]);
}
void narrow(const float* src, pc::bfloat16* dst, int64_t n) {
  if (use_f16c()) return avx2::narrow_bf16(src, bits(dst), n);
  for (int64_t i = 0; i < n; ++i) dst[i] = pc::bfloat16(src[i]);
}

// -- AsFloat32's views -------------------------------------------------------------------------

namespace {

bool is_half(const pc_tensor& t) { return t.dtype == PC_FLOAT16 || t.dtype == PC_BFLOAT16; }

int64_t numel(const pc_tensor& t) { return pc::Tensor(t).numel(); }

// Convert n elements in parallel chunks: f(lo, hi).
template <class F> void in_chunks(int64_t n, int32_t threads, F&& f) {
  pc::parallel_for(n, threads, pc::kGrain, [&](int64_t lo, int64_t hi) { f(lo, hi); });
}

}  // namespace

Float32Views::Float32Views(const pc_tensors* t) : items_(t->items, t->items + t->num_items) {
  for (pc_tensor& item : items_) {
    if (is_half(item)) item.dtype = PC_FLOAT32, any_ = true;
  }
  view_ = {items_.data(), t->slot_begin, t->num_slots, t->num_items};
}

Float32Views::Bound::Bound(const Float32Views& self, const pc_tensors* t, bool load,
                           int32_t threads)
    : t_(t), items_(t->items, t->items + t->num_items), scratch_(items_.size()) {
  (void)self;
  for (size_t k = 0; k < items_.size(); ++k) {
    pc_tensor& item = items_[k];
    if (!is_half(item)) continue;
    const int64_t n = numel(item);
    scratch_[k].reset(new float[static_cast<size_t>(n > 0 ? n : 1)]);
    float* dst = scratch_[k].get();
    if (load) {
      const void* src = item.data;
      if (item.dtype == PC_FLOAT16) {
        in_chunks(n, threads, [&](int64_t lo, int64_t hi) {
          widen(static_cast<const pc::float16*>(src) + lo, dst + lo, hi - lo);
        });
      } else {
        in_chunks(n, threads, [&](int64_t lo, int64_t hi) {
          widen(static_cast<const pc::bfloat16*>(src) + lo, dst + lo, hi - lo);
        });
      }
    }
    item.data = dst;
    item.dtype = PC_FLOAT32;
  }
  view_ = {items_.data(), t->slot_begin, t->num_slots, t->num_items};
}

void Float32Views::Bound::narrow_back(int32_t threads) const {
  for (size_t k = 0; k < items_.size(); ++k) {
    if (!scratch_[k]) continue;
    const pc_tensor& item = t_->items[k];
    const float* src = scratch_[k].get();
    void* dst = item.data;
    if (item.dtype == PC_FLOAT16) {
      in_chunks(numel(item), threads, [&](int64_t lo, int64_t hi) {
        narrow(src + lo, static_cast<pc::float16*>(dst) + lo, hi - lo);
      });
    } else {
      in_chunks(numel(item), threads, [&](int64_t lo, int64_t hi) {
        narrow(src + lo, static_cast<pc::bfloat16*>(dst) + lo, hi - lo);
      });
    }
  }
}

}  // namespace paddle_ops_math
