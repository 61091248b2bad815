// The oneDNN and Winograd switches and the layout oneDNN prefers (engine.hpp).
#include "engine.hpp"

#include <atomic>

namespace paddle_ops_nn {
namespace {
std::atomic<bool> onednn_switch{true};
std::atomic<bool> winograd_switch{true};
std::atomic<int64_t> winograd_made{0};
}  // namespace

bool onednn_enabled() { return kOnednnBuilt && onednn_switch.load(std::memory_order_relaxed); }

void set_onednn_enabled(bool enabled) { onednn_switch.store(enabled, std::memory_order_relaxed); }

bool winograd_enabled() { return winograd_switch.load(std::memory_order_relaxed); }

void set_winograd_enabled(bool enabled) {
  winograd_switch.store(enabled, std::memory_order_relaxed);
}

int64_t winograd_engines_made() { return winograd_made.load(std::memory_order_relaxed); }

void count_winograd_engine() { winograd_made.fetch_add(1, std::memory_order_relaxed); }

int onednn_channel_block() {
  if constexpr (kOnednnBuilt) {
    static const int block = dnnl_channel_block();  // the CPU does not change: ask once
    return block;
  }
  return 0;
}

int onednn_inference_block() {
  if constexpr (kOnednnBuilt) {
    static const int block = dnnl_inference_block();
    return block;
  }
  return 0;
}

}  // namespace paddle_ops_nn
