// The "this communicator was aborted" flag and its reason. Set once (the first reason
// wins), read from any thread.
#ifndef PLEXUS_COLLECTIVES_COMMON_ABORT_FLAG_H
#define PLEXUS_COLLECTIVES_COMMON_ABORT_FLAG_H

#include <atomic>
#include <mutex>
#include <string>

namespace plexus::collectives {

class AbortFlag {
 public:
  /** Sets the flag with `reason` (NULL: a default text); false if it was already set. */
  bool set(const char* reason);

  /** True once set(); acquire, so reason() is then safe to read. */
  bool is_set() const { return set_.load(std::memory_order_acquire); }

  /** The reason of the first set(); only valid once is_set() returned true. */
  const std::string& reason() const { return reason_; }

 private:
  std::mutex mutex_;    // serialises set() calls
  std::string reason_;  // written once, before set_ is released
  std::atomic<bool> set_{false};
};

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_ABORT_FLAG_H
