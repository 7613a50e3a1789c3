#include "core/streams/bounded_queue.h"

#include <cstdint>
#include <cstring>

#include "core/ir/error.h"

namespace plexus::streams {

BoundedQueue::BoundedQueue(std::string name, size_t item_bytes, size_t capacity, bool spin)
    : name_(std::move(name)),
      item_bytes_(item_bytes),
      capacity_(capacity == 0 ? 1 : capacity),
      stride_(memory::aligned_stride(item_bytes)),
      storage_(memory::allocate_block(capacity_, stride_, "the buffers of queue " + name_)),
      producer_wait_(spin),
      consumer_wait_(spin) {
}

template <class Ready>
void BoundedQueue::wait_until(Ready ready, SpinWait& waiter) {
  for (;;) {
    const uint32_t epoch = epoch_.load(std::memory_order_acquire);
    if (aborted_.load(std::memory_order_acquire)) {
      ir::fail(ir::ErrorCode::Cancelled, "queue " + name_ + " was aborted (another party failed or the run was cancelled)");
    }
    if (ready()) return;
    waiter.wait(epoch_, epoch);
  }
}

void BoundedQueue::signal() {
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
  if (std::atomic<uint32_t>* bell = doorbell_.load(std::memory_order_acquire)) {
    bell->fetch_add(1, std::memory_order_release);
    bell->notify_all();
  }
}

std::byte* BoundedQueue::producer_slot() {
  wait_until([this] { return can_push(); }, producer_wait_);
  return slot(pushed_.load(std::memory_order_relaxed));
}

std::byte* BoundedQueue::try_producer_slot() {
  return can_push() ? slot(pushed_.load(std::memory_order_relaxed)) : nullptr;
}

std::byte* BoundedQueue::try_producer_slot_at(uint64_t index) {
  return index < popped_.load(std::memory_order_acquire) + capacity_ ? slot(index) : nullptr;
}

void BoundedQueue::commit_at(uint64_t index) {
  wait_until([this, index] { return pushed_.load(std::memory_order_acquire) == index; }, producer_wait_);
  commit();
}

void BoundedQueue::commit() {
  pushed_.fetch_add(1, std::memory_order_release);
  signal();
}

const std::byte* BoundedQueue::consumer_slot() {
  wait_until([this] { return can_pop(); }, consumer_wait_);
  return slot(popped_.load(std::memory_order_relaxed));
}

const std::byte* BoundedQueue::try_consumer_slot() {
  return can_pop() ? slot(popped_.load(std::memory_order_relaxed)) : nullptr;
}

const std::byte* BoundedQueue::consumer_item(uint64_t index) {
  wait_until([this, index] { return pushed_.load(std::memory_order_acquire) > index; }, consumer_wait_);
  return slot(index);
}

void BoundedQueue::release() {
  popped_.fetch_add(1, std::memory_order_release);
  signal();
}

void BoundedQueue::push(const std::byte* item) {
  std::memcpy(producer_slot(), item, item_bytes_);
  commit();
}

void BoundedQueue::pop(std::byte* item) {
  std::memcpy(item, consumer_slot(), item_bytes_);
  release();
}

void BoundedQueue::abort() {
  aborted_.store(true, std::memory_order_release);
  signal();
}

void BoundedQueue::reset() {
  pushed_.store(0);
  popped_.store(0);
  aborted_.store(false);
}

}  // namespace plexus::streams
