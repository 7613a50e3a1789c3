// The io side of one run (docs/design.md "Streaming layer"): io threads fill each
// host-to-device queue ahead of the devices (up to its capacity, the prefetch depth) and
// drain each device-to-host queue as results arrive, so that transfers of micro-batch
// k+1 overlap the compute of micro-batch k. The feeds and drains are split over the io
// threads; a thread with nothing to move sleeps until a device pops or pushes one of its
// queues. Producing and consuming is done by the caller's functions (host array slices
// through the transport, or user callbacks).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "core/streams/bounded_queue.h"
#include "core/streams/io_service.h"

namespace plexus::streams {

/// `items` micro-batches into `queue`; produce(k, slot) writes item k (throws on failure).
/// `claimed` (shared with the consumer) is the next item index nobody produces yet: the
/// pump claims an index before producing it, and a consumer that finds the queue empty may
/// claim the next index itself and produce it straight into its destination, so that the
/// io hand-over never adds latency when the io thread is behind. `in_place`: the consumer
/// reads items in their queue slots, so item k always goes to the slot of index k (one the
/// consumer produced itself included) and is committed in index order.
struct Feed {
  BoundedQueue* queue = nullptr;
  int64_t items = 0;
  std::function<void(int64_t, std::byte*)> produce;
  std::atomic<int64_t>* claimed = nullptr;
  bool in_place = false;
};

/// `items` results out of `queue`; consume(k, slot) takes item k (throws on failure).
struct Drain {
  BoundedQueue* queue = nullptr;
  int64_t items = 0;
  std::function<void(int64_t, const std::byte*)> consume;
};

/// Time spent by the io threads, summed over them, in nanoseconds.
struct PumpTimes {
  int64_t produce_ns = 0;
  int64_t consume_ns = 0;
};

/// One run's pumping. Thread-safety: start(), wait() from the controlling thread;
/// abort() from any thread.
class StreamPump {
 public:
  /// `spin`: io threads spin briefly before sleeping (when cores are free for it).
  StreamPump(IoService& io, bool spin) : io_(io), spin_(spin) {}

  /// Posts one pump task per io thread (round-robin share of feeds and drains). The
  /// first exception a produce or consume throws is passed to `on_error` (once, on that
  /// io thread) and stops the pumping; on_error is expected to abort the queues.
  void start(std::vector<Feed> feeds, std::vector<Drain> drains, std::function<void(std::exception_ptr)> on_error);
  /// Waits until every pump task has finished: all items moved, or stopped by an error
  /// or abort().
  void wait();
  /// Stops the pump tasks (they return at their next check). Safe from any thread, also
  /// while start() sets up a run (a session destroyed as its run begins).
  void abort();
  /// After wait(), once no device touches the queues: unhooks the queues' doorbells.
  void detach();
  PumpTimes times() const { return {produce_ns_.load(), consume_ns_.load()}; }

 private:
  struct Share {
    std::vector<Feed> feeds;
    std::vector<Drain> drains;
    std::atomic<uint32_t> doorbell{0};
  };
  void pump(Share& share);
  void fail(std::exception_ptr error);

  IoService& io_;
  bool spin_;
  /// Guards shares_ between start() (the run's thread) and abort() (any thread: the run
  /// queue aborts a run from the thread destroying or cancelling the session).
  std::mutex shares_mutex_;
  std::vector<std::unique_ptr<Share>> shares_;
  std::function<void(std::exception_ptr)> on_error_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::atomic<uint32_t> finished_{0};
  std::atomic<int64_t> produce_ns_{0}, consume_ns_{0};
};

}  // namespace plexus::streams
