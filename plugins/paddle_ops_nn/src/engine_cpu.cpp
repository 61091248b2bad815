// The oneDNN and Winograd switches and the layout oneDNN prefers (engine.hpp).
#include "engine.hpp"

#include <atomic>

namespace paddle_ops_nn {
namespace {
std::atomic<bool> onednn_switch{true};
std::atomic<bool> winograd_switch{true};
std::atomic<int64_t> winograd_made[2] = {0, 0};  // F(2x2, 3x3), F(4x4, 3x3)
}  // namespace

bool onednn_enabled() { return kOnednnBuilt && onednn_switch.load(std::memory_order_relaxed); }

void set_onednn_enabled(bool enabled) { onednn_switch.store(enabled, std::memory_order_relaxed); }

bool winograd_enabled() { return winograd_switch.load(std::memory_order_relaxed); }

void set_winograd_enabled(bool enabled) {
  winograd_switch.store(enabled, std::memory_order_relaxed);
}

int64_t winograd_engines_made(int outputs) {
  const int64_t f2 = winograd_made[0].load(std::memory_order_relaxed);
  const int64_t f4 = winograd_made[1].load(std::memory_order_relaxed);
  return outputs == 2 ? f2 : outputs == 4 ? f4 : f2 + f4;
}

void count_winograd_engine(int outputs) {
  winograd_made[outputs == 4].fetch_add(1, std::memory_order_relaxed);
}

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
