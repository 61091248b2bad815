// What the oneDNN engines (*_dnnl.cpp) share: the CPU engine, the thread count around
// oneDNN calls, the descriptors of the caller's layouts, and operands converted to the layout a
// primitive chose. Engines keep no buffer of their own: scratchpads and converted operands lie
// in the kernel's workspace, which the core plans with its buffers (so a plan's kernels share
// those bytes; pc::Workspace). Includes oneDNN's large header: only *_dnnl.cpp include this.
#ifndef PADDLE_OPS_NN_DNNL_HPP_
#define PADDLE_OPS_NN_DNNL_HPP_

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstddef>
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

// An activation [N, C, H, W] as the core binds it, given its channel_block (layout.hpp's
// Activation::channel_block): plain NCHW (0), oneDNN's blocked nChw8c / nChw16c, or channels
// last (-1: NHWC).
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

// Where the buffers a primitive's pass uses at once lie in the kernel's workspace
// (pc::Workspace, planned by the core): byte offsets handed out in order, 64-byte aligned. An
// engine lays out each of its passes from 0 (they run one after another) and asks for the
// largest.
class Staging {
 public:
  size_t take(size_t bytes) {
    const size_t at = end_;
    end_ += (bytes + 63) / 64 * 64;
    return at;
  }
  size_t end() const { return end_; }

 private:
  size_t end_ = 0;
};

// A buffer of a pass in the workspace: a oneDNN memory whose data goes at its offset there.
class Staged {
 public:
  Staged() = default;
  Staged(const memory::desc& desc, Staging& staging)
      : memory_(desc, cpu(), DNNL_MEMORY_NONE), offset_(staging.take(desc.get_size())) {}
  memory& at(char* workspace) const {
    memory_.set_data_handle(workspace + offset_);
    return memory_;
  }

 private:
  mutable memory memory_;
  size_t offset_ = 0;
};

// The scratchpad of a primitive created in user scratchpad mode, in the workspace.
template <class PD> Staged scratchpad(const PD& pd, Staging& staging) {
  return Staged(pd.scratchpad_desc(), staging);
}

// One operand of a primitive: a view of the caller's buffer (in the caller's layout) and,
// when the primitive chose another layout, a buffer in that layout with the reorders between
// them: in the workspace, or (constructed without a Staging) kept by the operand, whose
// content then lasts from call to call (`held`).
class Operand {
 public:
  Operand(const memory::desc& caller, const memory::desc& chosen, Staging& staging)
      : plain_(caller, cpu(), DNNL_MEMORY_NONE) {
    if (chosen != caller) {
      staged_ = Staged(chosen, staging);
      reorders(chosen);
    }
  }
  Operand(const memory::desc& caller, const memory::desc& chosen)
      : plain_(caller, cpu(), DNNL_MEMORY_NONE) {
    if (chosen != caller) {
      kept_ = memory(chosen, cpu());
      reorders(chosen);
    }
  }

  // The memory the primitive reads: the caller's data, converted if need be.
  memory& load(dnnl::stream& s, const void* data, char* workspace) {
    plain_.set_data_handle(const_cast<void*>(data));
    if (!to_inner_) return plain_;
    memory& inner = this->inner(workspace);
    to_inner_->execute(s, plain_, inner);
    return inner;
  }
  // The memory the primitive reads when the caller's data has not changed since the last
  // `load`: what that load converted, where the operand keeps it (else it converts again).
  memory& held(dnnl::stream& s, const void* data, char* workspace) {
    if (staged_) return load(s, data, workspace);
    plain_.set_data_handle(const_cast<void*>(data));
    return kept_ ? *kept_ : plain_;
  }
  // The memory the primitive writes; `store` then moves it into the caller's buffer.
  memory& target(void* data, char* workspace) {
    plain_.set_data_handle(data);
    return to_inner_ ? inner(workspace) : plain_;
  }
  void store(dnnl::stream& s, char* workspace) {
    if (to_plain_) to_plain_->execute(s, inner(workspace), plain_);
  }

 private:
  void reorders(const memory::desc& chosen) {
    to_inner_ = dnnl::reorder(plain_, memory(chosen, cpu(), DNNL_MEMORY_NONE));
    to_plain_ = dnnl::reorder(memory(chosen, cpu(), DNNL_MEMORY_NONE), plain_);
  }
  memory& inner(char* workspace) { return kept_ ? *kept_ : staged_->at(workspace); }

  memory plain_;  // the caller's buffer
  std::optional<Staged> staged_;  // the converted buffer in the workspace, or
  std::optional<memory> kept_;    // kept by the operand
  std::optional<dnnl::reorder> to_inner_, to_plain_;
};

}  // namespace onednn
}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_DNNL_HPP_
