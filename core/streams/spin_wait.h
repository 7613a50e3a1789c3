// Waiting for an atomic counter to change: spin first (with sched_yield, so a thread
// sharing the core can run), then sleep on the futex (C++20 atomic wait). The spin budget
// adapts: a wait that ends while spinning doubles it (up to kMaxMicros), one that has to
// sleep halves it, so a waiter whose partner is slow, or whose core is taken by another
// process, soon stops burning time; every 64th sleeping wait probes spinning again.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace plexus::streams {

/// One waiter's state. Not thread-safe: one SpinWait per waiting thread.
class SpinWait {
 public:
  static constexpr int kMaxMicros = 200;
  static constexpr int kProbeMicros = 25;

  /// `enabled` false: always sleep at once (no core to spare for spinning).
  explicit SpinWait(bool enabled) : budget_micros_(enabled ? kMaxMicros : 0), enabled_(enabled) {}

  /// Returns once `counter` no longer holds `old`.
  void wait(const std::atomic<uint32_t>& counter, uint32_t old) {
    int budget = budget_micros_;
    if (enabled_ && budget == 0 && ++sleeps_since_probe_ % 64 == 0) budget = kProbeMicros;
    if (budget > 0) {
      if (spin(counter, old, budget)) {
        budget_micros_ = std::min(kMaxMicros, std::max(kProbeMicros, 2 * budget));
        return;
      }
      budget_micros_ = budget / 2 >= kProbeMicros / 2 ? budget / 2 : 0;
    }
    while (counter.load(std::memory_order_acquire) == old) counter.wait(old, std::memory_order_acquire);
  }

  int budget_micros() const { return budget_micros_; }

 private:
  static bool spin(const std::atomic<uint32_t>& counter, uint32_t old, int micros) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
    for (unsigned i = 1;; ++i) {
      if (counter.load(std::memory_order_acquire) != old) return true;
      __builtin_ia32_pause();
      if (i % 64 == 0) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        sched_yield();
      }
    }
  }

  int budget_micros_;
  bool enabled_;
  unsigned sleeps_since_probe_ = 0;
};

}  // namespace plexus::streams
