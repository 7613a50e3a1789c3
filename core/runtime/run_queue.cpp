#include "core/runtime/run_queue.h"

#include "core/ir/error.h"

namespace plexus::runtime {

std::exception_ptr cancelled_run() {
  return std::make_exception_ptr(
      ir::Error(ir::ErrorCode::Cancelled, "the run was cancelled (plx_session_cancel or session destroyed)"));
}

RunQueue::RunQueue(Execute execute, Abort abort) : execute_(std::move(execute)), abort_(std::move(abort)) {
  controller_ = std::thread([this] { controller_loop(); });
}

RunQueue::~RunQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    ++cancel_generation_;
    if (running_) abort_("the session is being destroyed");
  }
  jobs_changed_.notify_all();
  controller_.join();
}

void RunQueue::run(RunRequest request) {
  auto handle = std::make_shared<RunHandle>();
  Job job{std::move(request), handle, 0};
  {
    std::lock_guard lock(mutex_);
    job.generation = cancel_generation_;
    if (!jobs_.empty() || running_) {  // behind other runs: queue it, in order
      jobs_.push_back(std::move(job));
      jobs_changed_.notify_all();
      job.handle = nullptr;
    } else {  // idle: run on this thread
      running_ = true;
    }
  }
  if (job.handle) execute(job, true);
  handle->wait();
}

std::shared_ptr<RunHandle> RunQueue::submit(RunRequest request) {
  auto handle = std::make_shared<RunHandle>();
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{std::move(request), handle, cancel_generation_});
  }
  jobs_changed_.notify_all();
  return handle;
}

void RunQueue::cancel() {
  std::lock_guard lock(mutex_);
  ++cancel_generation_;
  if (running_) abort_("the run was cancelled");
}

void RunQueue::controller_loop() {
  for (;;) {
    Job job;
    bool run_it = false;
    {
      std::unique_lock lock(mutex_);
      jobs_changed_.wait(lock, [&] { return stopping_ || (!jobs_.empty() && !running_); });
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
      run_it = job.generation == cancel_generation_;
    }
    execute(job, run_it);
  }
}

void RunQueue::execute(Job& job, bool run_it) {
  if (!run_it) {
    finish(job, cancelled_run());
    return;
  }
  const uint64_t generation = job.generation;
  finish(job, execute_(job.request, [this, generation] {
           std::lock_guard lock(mutex_);
           return generation != cancel_generation_;
         }));
}

void RunQueue::finish(Job& job, std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    running_ = false;
  }
  jobs_changed_.notify_all();
  if (job.request.on_complete) {
    try {
      job.request.on_complete(error);
    } catch (...) {  // a completion callback's failure cannot change the run's outcome
    }
  }
  job.handle->complete(error);
}

}  // namespace plexus::runtime
