// A run started with Session::run_async (the C API's plx_run): its completion, waited for
// or polled, its error, and the cancellation of this run alone (plx_run_cancel).
#pragma once

#include <chrono>
#include <condition_variable>
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "core/ir/error.h"

namespace plexus::runtime {

/// Thread-safety: every method from any thread. The error is kept as a code and a message
/// and thrown anew in each waiting thread, so no exception object is shared between the
/// thread that ends the run and the threads that wait for it.
class RunHandle {
 public:
  /// Marks the run finished (`error` null: success) and wakes the waiters. Once.
  void complete(std::exception_ptr error);
  /// Waits for the end; throws the run's error (ir::Error with its code and message).
  void wait();
  /// Waits at most `timeout`; false when the run is still going. Throws the run's error.
  bool wait_for(std::chrono::milliseconds timeout);
  bool done() const;
  /// Cancels this run only (RunQueue::cancel(handle)): through the canceller its queue
  /// set; nothing once the run has ended. Must not race with the destruction of the
  /// run's session.
  void cancel();
  /// Whether cancel() was called.
  bool cancel_requested() const { return cancel_requested_.load(std::memory_order_acquire); }
  /// Set by the run's queue while the run has not ended; complete() clears it.
  void set_canceller(std::function<void()> canceller);

 private:
  void throw_if_failed() const;

  mutable std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  bool failed_ = false;
  ir::ErrorCode code_ = ir::ErrorCode::Internal;
  std::string message_;
  std::function<void()> canceller_;  ///< guarded by mutex_
  std::atomic<bool> cancel_requested_{false};
};

}  // namespace plexus::runtime
