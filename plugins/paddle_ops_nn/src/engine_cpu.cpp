// The oneDNN switch and the layout oneDNN prefers (engine.hpp).
#include "engine.hpp"

#include <atomic>

namespace paddle_ops_nn {
namespace {
std::atomic<bool> onednn_switch{true};
}  // namespace

bool onednn_enabled() { return kOnednnBuilt && onednn_switch.load(std::memory_order_relaxed); }

void set_onednn_enabled(bool enabled) { onednn_switch.store(enabled, std::memory_order_relaxed); }

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
