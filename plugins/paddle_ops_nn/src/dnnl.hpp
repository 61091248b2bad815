// What the oneDNN engines (*_dnnl.cpp) share: the CPU engine, the thread count around
// oneDNN calls, the descriptors of the caller's layouts, and operands kept in the layout a
// primitive chose. Includes oneDNN's large header: only *_dnnl.cpp include this.
#ifndef PADDLE_OPS_NN_DNNL_HPP_
#define PADDLE_OPS_NN_DNNL_HPP_

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>

namespace paddle_ops_nn {
namespace onednn {

using dnnl::memory;
using dims = memory::dims;
using tag = memory::format_tag;

inline const dnnl::engine& cpu() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline memory::desc f32(const dims& d, tag t) { return memory::desc(d, memory::data_type::f32, t); }

// An activation [N, C, H, W] as the core binds it, given its stored block (layout.hpp's
// Activation::block): plain NCHW (0), oneDNN's blocked nChw8c / nChw16c, or channels last (a
// block of all C channels, NHWC).
inline memory::desc activation(const dims& d, int block) {
  if (block == 8 || block == 16) return f32(d, block == 16 ? tag::nChw16c : tag::nChw8c);
  return f32(d, block == 0 ? tag::nchw : tag::nhwc);
}

// oneDNN threads with OpenMP's setting of the calling thread, which it also reads when a
// primitive is created (to size its scratchpad): set it to the run's count around both.
class ThreadCount {
 public:
  explicit ThreadCount(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ThreadCount() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

// One operand of a primitive: a view of the caller's buffer (in the caller's layout) and,
// when the primitive chose another layout, a buffer in that layout with the reorders between
// them.
class Operand {
 public:
  Operand(const memory::desc& caller, const memory::desc& chosen)
      : plain_(caller, cpu(), DNNL_MEMORY_NONE) {
    if (chosen != caller) {
      inner_ = memory(chosen, cpu());
      to_inner_ = dnnl::reorder(plain_, *inner_);
      to_plain_ = dnnl::reorder(*inner_, plain_);
    }
  }

  // The memory the primitive reads: the caller's data, converted if need be.
  memory& load(dnnl::stream& s, const void* data) {
    plain_.set_data_handle(const_cast<void*>(data));
    if (!inner_) return plain_;
    to_inner_->execute(s, plain_, *inner_);
    return *inner_;
  }
  // The memory the primitive reads when the caller's data has not changed since the last
  // `load`: what that load converted.
  memory& held(const void* data) {
    plain_.set_data_handle(const_cast<void*>(data));
    return inner_ ? *inner_ : plain_;
  }
  // The memory the primitive writes; `store` then moves it into the caller's buffer.
  memory& target(void* data) {
    plain_.set_data_handle(data);
    return inner_ ? *inner_ : plain_;
  }
  void store(dnnl::stream& s) {
    if (inner_) to_plain_->execute(s, *inner_, plain_);
  }

 private:
  memory plain_;  // the caller's buffer
  std::optional<memory> inner_;
  std::optional<dnnl::reorder> to_inner_, to_plain_;
};

}  // namespace onednn
}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_DNNL_HPP_
