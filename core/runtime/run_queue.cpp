#include "core/runtime/run_queue.h"

#include <algorithm>

#include "core/ir/error.h"

namespace plexus::runtime {

std::exception_ptr cancelled_run() {
  return std::make_exception_ptr(
      ir::Error(ir::ErrorCode::Cancelled, "the run was cancelled (plx_run_cancel, plx_session_cancel or session destroyed)"));
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

RunQueue::Job RunQueue::make_job(RunRequest request, std::shared_ptr<RunHandle> handle) {
  handle->set_canceller([this, weak = std::weak_ptr<RunHandle>(handle)] {
    if (auto h = weak.lock()) cancel(h);
  });
  return Job{std::move(request), std::move(handle), 0};
}

void RunQueue::run(RunRequest request) {
  auto handle = std::make_shared<RunHandle>();
  Job job = make_job(std::move(request), handle);
  {
    std::lock_guard lock(mutex_);
    job.generation = cancel_generation_;
    if (!jobs_.empty() || running_) {  // behind other runs: queue it, in order
      jobs_.push_back(std::move(job));
      jobs_changed_.notify_all();
      job.handle = nullptr;
    } else {  // idle: run on this thread
      running_ = true;
      running_handle_ = handle;
    }
  }
  if (job.handle) execute(job, true);
  handle->wait();
}

std::shared_ptr<RunHandle> RunQueue::submit(RunRequest request) {
  auto handle = std::make_shared<RunHandle>();
  Job job = make_job(std::move(request), handle);
  {
    std::lock_guard lock(mutex_);
    job.generation = cancel_generation_;
    jobs_.push_back(std::move(job));
  }
  jobs_changed_.notify_all();
  return handle;
}

void RunQueue::cancel() {
  std::lock_guard lock(mutex_);
  ++cancel_generation_;
  if (running_) abort_("the run was cancelled");
}

void RunQueue::cancel(const std::shared_ptr<RunHandle>& handle) {
  Job queued;
  {
    std::lock_guard lock(mutex_);
    if (running_ && running_handle_ == handle) {
      abort_("the run was cancelled");
      return;
    }
    const auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const Job& j) { return j.handle == handle; });
    if (it == jobs_.end()) return;  // ended
    queued = std::move(*it);
    jobs_.erase(it);
  }
  complete(queued, cancelled_run());
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
      running_handle_ = job.handle;
      run_it = job.generation == cancel_generation_ && !job.handle->cancel_requested();
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
  const RunHandle* handle = job.handle.get();
  finish(job, execute_(job.request, [this, generation, handle] {
           std::lock_guard lock(mutex_);
           return generation != cancel_generation_ || handle->cancel_requested();
         }));
}

void RunQueue::finish(Job& job, std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    running_ = false;
    running_handle_.reset();
  }
  jobs_changed_.notify_all();
  complete(job, std::move(error));
}

void RunQueue::complete(Job& job, std::exception_ptr error) {
  if (job.request.on_complete) {
    try {
      job.request.on_complete(error);
    } catch (...) {  // a completion callback's failure cannot change the run's outcome
    }
  }
  job.handle->complete(error);
}

}  // namespace plexus::runtime
