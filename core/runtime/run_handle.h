// A run started with Session::run_async (the C API's plx_run): its completion, waited for
// or polled, and its error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>

namespace plexus::runtime {

/// Thread-safety: every method from any thread.
class RunHandle {
 public:
  /// Marks the run finished (`error` null: success) and wakes the waiters. Once.
  void complete(std::exception_ptr error);
  /// Waits for the end; rethrows the run's error.
  void wait();
  /// Waits at most `timeout`; false when the run is still going. Rethrows its error.
  bool wait_for(std::chrono::milliseconds timeout);
  bool done() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace plexus::runtime
