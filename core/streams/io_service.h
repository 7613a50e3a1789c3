// The streaming layer's threads (docs/design.md "Streaming layer"): a Boost.Asio io_context
// run by its own threads, on which host<->device transfers and stream callbacks execute
// so that they overlap with the devices' compute.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <functional>
#include <thread>
#include <vector>

namespace plexus::streams {

/// Thread-safety: post() from any thread. The destructor stops the io_context after the
/// work already posted has run, and joins the threads.
class IoService {
 public:
  /// kBackground threads run under Linux's SCHED_IDLE: only on a core nothing else
  /// wants, for work that must not slow the devices (asynchronous checkpoint saves).
  enum class Priority { kNormal, kBackground };

  /// Starts `threads` (>= 1) threads named "<name><k>" (at most 15 characters in all).
  explicit IoService(int threads, Priority priority = Priority::kNormal, const char* name = "plx-io");
  ~IoService();
  IoService(const IoService&) = delete;
  IoService& operator=(const IoService&) = delete;

  /// Runs `task` on an io thread.
  void post(std::function<void()> task);
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  boost::asio::io_context context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace plexus::streams
