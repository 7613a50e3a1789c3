// The run queue of a session: runs execute one at a time, in the order they were started,
// on the queue's controller thread, or on the caller's thread when run() finds the queue
// idle (sparing two thread hand-overs). cancel() ends the running run and every queued one
// with ir::Error(Cancelled); cancel(handle) ends one run, queued or running, and leaves the
// others (PopXL has no asynchronous runs; this is the C API's plx_run, plx_run_cancel and
// plx_session_cancel, abi/include/plexus/plexus.h).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/runtime/run_handle.h"
#include "core/runtime/stream_binding.h"

namespace plexus::runtime {

/// The error of a cancelled run: ir::Error(Cancelled) saying how runs are cancelled.
std::exception_ptr cancelled_run();

/// Thread-safety: every method from any thread; the two callbacks run on the thread that
/// executes (execute) or on the cancelling thread (abort, under the queue's lock).
class RunQueue {
 public:
  /// Runs one request to its end and returns its error (null: success). `cancelled()`
  /// tells, once the run is over, whether cancel() or the destructor was called since it
  /// was started; the executor then reports cancelled_run(), whatever the devices did.
  using Execute = std::function<std::exception_ptr(const RunRequest& request, const std::function<bool()>& cancelled)>;
  /// Wakes the running run with an error (`reason`): called by cancel() and the destructor
  /// while a run executes.
  using Abort = std::function<void(const std::string& reason)>;

  /// Starts the controller thread.
  RunQueue(Execute execute, Abort abort);
  /// Cancels the running and queued runs, waits for them, and joins the controller.
  ~RunQueue();
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  /// Runs `request` after the queued runs and waits for it; on an idle queue it runs on the
  /// calling thread. Throws the run's error.
  void run(RunRequest request);
  /// Queues `request` and returns at once. request.on_complete is called once when it
  /// ends, on the controller thread, before the handle completes; an exception it throws is
  /// ignored (it cannot change the run's outcome).
  std::shared_ptr<RunHandle> submit(RunRequest request);
  /// Ends the running and queued runs with cancelled_run(); later runs are not affected.
  void cancel();
  /// Ends `handle`'s run with cancelled_run(): a queued one at once, the running one by
  /// waking its devices (abort); a finished one is left as it was. Other runs go on.
  void cancel(const std::shared_ptr<RunHandle>& handle);

 private:
  struct Job {
    RunRequest request;
    std::shared_ptr<RunHandle> handle;
    uint64_t generation = 0;  ///< cancel_generation_ when the job was started
  };
  void controller_loop();
  /// Runs `job` (run_it), or ends it cancelled, then finish().
  void execute(Job& job, bool run_it);
  /// Marks the queue idle and completes `job` with `error` (null: success).
  void finish(Job& job, std::exception_ptr error);
  /// Completes `job` with `error`: its on_complete, then its handle.
  static void complete(Job& job, std::exception_ptr error);
  /// Job for `handle`, its canceller set to cancel(handle).
  Job make_job(RunRequest request, std::shared_ptr<RunHandle> handle);

  Execute execute_;
  Abort abort_;
  mutable std::mutex mutex_;  ///< guards the fields below
  std::condition_variable jobs_changed_;
  std::deque<Job> jobs_;
  uint64_t cancel_generation_ = 0;  ///< runs started before the last cancel() carry a lower one
  bool running_ = false;
  std::shared_ptr<RunHandle> running_handle_;  ///< the running job's, while running_
  bool stopping_ = false;
  std::thread controller_;
};

}  // namespace plexus::runtime
