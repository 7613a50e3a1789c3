#include "core/runtime/run_handle.h"

namespace plexus::runtime {

void RunHandle::complete(std::exception_ptr error) {
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    error_ = std::move(error);
    done_ = true;
  }
  finished_.notify_all();
}

void RunHandle::wait() {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool RunHandle::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!finished_.wait_for(lock, timeout, [&] { return done_; })) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

bool RunHandle::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

}  // namespace plexus::runtime
