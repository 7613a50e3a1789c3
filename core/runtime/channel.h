// A bounded single-producer single-consumer channel carrying one tensor per micro-batch
// between two stages of a replica (seed 003: activations and gradients move between IPUs).
// push() blocks while the channel is full, pop() while it is empty; abort() wakes both with
// ir::Error(Cancelled), so a failing device never leaves its neighbours waiting.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/runtime/spin_wait.h"

namespace plexus::runtime {

/// Thread-safety: one producer thread calls push(), one consumer thread pop(); abort() and
/// reset() may come from any thread (reset() only when neither side is inside a call).
class Channel {
 public:
  /// `name` appears in errors; `spin`: waiters spin before sleeping (see SpinWait).
  Channel(std::string name, size_t item_bytes, size_t capacity, bool spin);

  void push(const std::byte* item);
  void pop(std::byte* item);
  void abort();
  /// Empties the channel and clears an abort (between runs).
  void reset();

  size_t item_bytes() const { return item_bytes_; }
  size_t capacity() const { return capacity_; }

 private:
  void wait_until(bool (Channel::*ready)() const, SpinWait& waiter);
  bool can_push() const { return pushed_.load(std::memory_order_acquire) - popped_.load(std::memory_order_acquire) < capacity_; }
  bool can_pop() const { return pushed_.load(std::memory_order_acquire) != popped_.load(std::memory_order_acquire); }

  std::string name_;
  size_t item_bytes_, capacity_;
  std::unique_ptr<std::byte[]> storage_;
  std::atomic<uint64_t> pushed_{0}, popped_{0};
  std::atomic<uint32_t> epoch_{0};  ///< changes on every push, pop and abort: what waiters wait on
  std::atomic<bool> aborted_{false};
  SpinWait producer_wait_, consumer_wait_;
};

}  // namespace plexus::runtime
