#include "collectives_common/abort_flag.h"

namespace plexus::collectives {

bool AbortFlag::set(const char* reason) {
  std::lock_guard lock(mutex_);
  if (set_.load(std::memory_order_relaxed)) return false;
  try {
    reason_ = (reason != nullptr && reason[0] != '\0') ? reason : "aborted (no reason given)";
  } catch (...) {
    // Out of memory: the flag matters more than the text; reason_ stays empty.
  }
  set_.store(true, std::memory_order_release);
  return true;
}

}  // namespace plexus::collectives
