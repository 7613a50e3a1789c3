#include "core/runtime/channel.h"

#include <cstring>

#include "core/ir/error.h"

namespace plexus::runtime {

Channel::Channel(std::string name, size_t item_bytes, size_t capacity, bool spin)
    : name_(std::move(name)),
      item_bytes_(item_bytes),
      capacity_(capacity),
      storage_(new std::byte[item_bytes * capacity]),
      producer_wait_(spin),
      consumer_wait_(spin) {}

void Channel::wait_until(bool (Channel::*ready)() const, SpinWait& waiter) {
  for (;;) {
    const uint32_t epoch = epoch_.load(std::memory_order_acquire);
    if (aborted_.load(std::memory_order_acquire)) {
      ir::fail(ir::ErrorCode::Cancelled, "channel " + name_ + " was aborted (another device failed)");
    }
    if ((this->*ready)()) return;
    waiter.wait(epoch_, epoch);
  }
}

void Channel::push(const std::byte* item) {
  wait_until(&Channel::can_push, producer_wait_);
  const uint64_t slot = pushed_.load(std::memory_order_relaxed) % capacity_;
  std::memcpy(storage_.get() + slot * item_bytes_, item, item_bytes_);
  pushed_.fetch_add(1, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
}

void Channel::pop(std::byte* item) {
  wait_until(&Channel::can_pop, consumer_wait_);
  const uint64_t slot = popped_.load(std::memory_order_relaxed) % capacity_;
  std::memcpy(item, storage_.get() + slot * item_bytes_, item_bytes_);
  popped_.fetch_add(1, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
}

void Channel::abort() {
  aborted_.store(true, std::memory_order_release);
  epoch_.fetch_add(1, std::memory_order_release);
  epoch_.notify_all();
}

void Channel::reset() {
  pushed_.store(0);
  popped_.store(0);
  aborted_.store(false);
}

}  // namespace plexus::runtime
