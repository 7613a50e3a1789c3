// A run started with Session::run_async (the C API's plx_run): its completion, waited for
// or polled, and its error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
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

 private:
  void throw_if_failed() const;

  mutable std::mutex mutex_;
  std::condition_variable finished_;
  bool done_ = false;
  bool failed_ = false;
  ir::ErrorCode code_ = ir::ErrorCode::Internal;
  std::string message_;
};

}  // namespace plexus::runtime
