// The oneDNN switch (engine.hpp).
#include "engine.hpp"

#include <atomic>

namespace pon {
namespace {
std::atomic<bool> onednn_switch{true};
}  // namespace

bool onednn_enabled() { return kOnednnBuilt && onednn_switch.load(std::memory_order_relaxed); }

void set_onednn_enabled(bool enabled) { onednn_switch.store(enabled, std::memory_order_relaxed); }

}  // namespace pon
