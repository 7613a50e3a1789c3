#include "core/streams/stream_pump.h"

#include <chrono>

namespace plexus::streams {

namespace {
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void StreamPump::start(std::vector<Feed> feeds, std::vector<Drain> drains,
                       std::function<void(std::exception_ptr)> on_error) {
  on_error_ = std::move(on_error);
  stop_ = false;
  failed_ = false;
  finished_ = 0;
  produce_ns_ = 0;
  consume_ns_ = 0;
  std::lock_guard lock(shares_mutex_);
  shares_.clear();
  const size_t n = static_cast<size_t>(io_.threads());
  for (size_t k = 0; k < n; ++k) shares_.push_back(std::make_unique<Share>());
  for (size_t i = 0; i < feeds.size(); ++i) shares_[i % n]->feeds.push_back(std::move(feeds[i]));
  for (size_t i = 0; i < drains.size(); ++i) shares_[(feeds.size() + i) % n]->drains.push_back(std::move(drains[i]));
  for (auto& share : shares_) {
    for (Feed& f : share->feeds) f.queue->set_doorbell(&share->doorbell);
    for (Drain& d : share->drains) d.queue->set_doorbell(&share->doorbell);
    io_.post([this, s = share.get()] { pump(*s); });
  }
}

void StreamPump::fail(std::exception_ptr error) {
  if (!failed_.exchange(true)) on_error_(error);
  abort();
}

void StreamPump::pump(Share& share) {
  SpinWait waiter(spin_);
  std::vector<int64_t> drained(share.drains.size(), 0);
  try {
    for (;;) {
      const uint32_t seen = share.doorbell.load(std::memory_order_acquire);
      if (stop_.load(std::memory_order_acquire)) break;
      bool pending = false, moved = false;
      for (size_t i = 0; i < share.feeds.size(); ++i) {
        Feed& f = share.feeds[i];
        int64_t k = f.claimed->load(std::memory_order_acquire);
        if (k == f.items) continue;
        pending = true;
        std::byte* slot = f.in_place ? f.queue->try_producer_slot_at(static_cast<uint64_t>(k)) : f.queue->try_producer_slot();
        if (slot != nullptr && f.claimed->compare_exchange_strong(k, k + 1, std::memory_order_acq_rel)) {
          const int64_t t0 = now_ns();
          f.produce(k, slot);
          produce_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
          if (f.in_place) {
            f.queue->commit_at(static_cast<uint64_t>(k));
          } else {
            f.queue->commit();
          }
          moved = true;
        }
      }
      for (size_t i = 0; i < share.drains.size(); ++i) {
        Drain& d = share.drains[i];
        if (drained[i] == d.items) continue;
        pending = true;
        if (const std::byte* slot = d.queue->try_consumer_slot()) {
          const int64_t t0 = now_ns();
          d.consume(drained[i]++, slot);
          consume_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
          d.queue->release();
          moved = true;
        }
      }
      if (!pending) break;
      if (!moved) waiter.wait(share.doorbell, seen);
    }
  } catch (...) {
    fail(std::current_exception());
  }
  finished_.fetch_add(1, std::memory_order_release);
  finished_.notify_all();
}

void StreamPump::wait() {
  for (;;) {
    const uint32_t done = finished_.load(std::memory_order_acquire);
    if (done == shares_.size()) return;
    finished_.wait(done, std::memory_order_acquire);
  }
}

void StreamPump::detach() {
  std::lock_guard lock(shares_mutex_);
  for (auto& share : shares_) {
    for (Feed& f : share->feeds) f.queue->set_doorbell(nullptr);
    for (Drain& d : share->drains) d.queue->set_doorbell(nullptr);
  }
}

void StreamPump::abort() {
  stop_.store(true, std::memory_order_release);
  std::lock_guard lock(shares_mutex_);
  for (auto& share : shares_) {
    share->doorbell.fetch_add(1, std::memory_order_release);
    share->doorbell.notify_all();
  }
}

}  // namespace plexus::streams
