// A bounded single-producer single-consumer queue of fixed-size items, with zero-copy
// access to its slots. It carries activations and gradients between pipeline stages
// (seed 003: tensors move between IPUs) and micro-batches between the host and the
// devices (docs/design.md "Streaming layer": a bounded queue of device buffers per stream,
// filled ahead of compute). A full queue blocks its producer and an empty one its
// consumer: back-pressure, never memory growth. abort() wakes both with
// ir::Error(Cancelled), so a failing party never leaves the other waiting.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/memory/host_block.h"
#include "core/streams/spin_wait.h"

namespace plexus::streams {

/// Thread-safety: one producer thread at a time calls the producer side (push,
/// producer_slot, commit), one consumer thread at a time the consumer side (pop,
/// consumer_slot, release); abort(), size() and the counters from any thread; reset() only
/// when neither side is inside a call.
class BoundedQueue {
 public:
  /// `name` appears in errors; `capacity` >= 1 items of `item_bytes` bytes, 64-byte
  /// aligned; `spin`: waiters spin before sleeping (see SpinWait).
  BoundedQueue(std::string name, size_t item_bytes, size_t capacity, bool spin);

  /// Copies `item` in; waits while the queue is full.
  void push(const std::byte* item);
  /// Copies the oldest item out; waits while the queue is empty.
  void pop(std::byte* item);

  /// The next free slot, once there is one (waits while full). Write it, then commit().
  std::byte* producer_slot();
  /// The next free slot, or null when the queue is full (never waits).
  std::byte* try_producer_slot();
  /// Publishes the slot producer_slot() returned.
  void commit();
  /// Producing by index, for two parties that share the producer side and take turns by
  /// item index (a Feed's `claimed` counter): the slot of item `index`, or null while it
  /// is still held (index >= released count + capacity). Never waits.
  std::byte* try_producer_slot_at(uint64_t index);
  /// Publishes item `index` once every earlier item is published (waits for them; the
  /// party holding the oldest outstanding index never waits).
  void commit_at(uint64_t index);
  /// The oldest item, once there is one (waits while empty). Read it, then release().
  const std::byte* consumer_slot();
  /// The oldest item, or null when the queue is empty (never waits).
  const std::byte* try_consumer_slot();
  /// Frees the slot consumer_slot() returned (the oldest item the consumer holds).
  void release();
  /// Item `index` (counted from the last reset), once it is committed (waits). A consumer
  /// that holds several items at once (reads them in place until it is done) takes them
  /// by index, in order, and releases them oldest first; `index` must be below the
  /// released count + capacity.
  const std::byte* consumer_item(uint64_t index);
  /// The slot item `index` occupies, without waiting or counting: for a party that
  /// produces and consumes an item itself (the queue's counters are then not used).
  std::byte* slot_of(uint64_t index) const { return slot(index); }
  /// Items committed since the last reset.
  uint64_t committed() const { return pushed_.load(std::memory_order_acquire); }

  void abort();
  /// Wakes whoever waits on epoch() or the doorbell without moving an item (a consumer
  /// that produced an item itself tells the producer side that the count moved on).
  void ring() { signal(); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  /// Empties the queue and clears an abort (between runs).
  void reset();

  size_t item_bytes() const { return item_bytes_; }
  size_t capacity() const { return capacity_; }
  /// Items in the queue now.
  size_t size() const { return static_cast<size_t>(pushed_.load(std::memory_order_acquire) - popped_.load(std::memory_order_acquire)); }
  /// Counter that changes on every commit, release and abort: what a thread watching
  /// several queues can wait on (SpinWait::wait).
  const std::atomic<uint32_t>& epoch() const { return epoch_; }
  /// Also bumps and notifies `doorbell` on every commit and release (null: none).
  void set_doorbell(std::atomic<uint32_t>* doorbell) { doorbell_.store(doorbell, std::memory_order_release); }

 private:
  template <class Ready>
  void wait_until(Ready ready, SpinWait& waiter);
  bool can_push() const { return size() < capacity_; }
  bool can_pop() const { return size() > 0; }
  std::byte* slot(uint64_t index) const { return storage_.get() + (index % capacity_) * stride_; }
  void signal();

  std::string name_;
  size_t item_bytes_, capacity_, stride_;
  memory::HostBlock storage_;
  std::atomic<uint64_t> pushed_{0}, popped_{0};
  std::atomic<uint32_t> epoch_{0};
  std::atomic<bool> aborted_{false};
  std::atomic<std::atomic<uint32_t>*> doorbell_{nullptr};  ///< set between runs, read by any thread
  SpinWait producer_wait_, consumer_wait_;
};

}  // namespace plexus::streams
