#include "core/runtime/run_handle.h"

namespace plexus::runtime {

void RunHandle::complete(std::exception_ptr error) {
  ir::ErrorCode code = ir::ErrorCode::Internal;
  std::string message;
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const ir::Error& e) {
      code = e.code();
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("internal error: ") + e.what();
    } catch (...) {
      message = "internal error: unknown exception";
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (done_) return;
    failed_ = error != nullptr;
    code_ = code;
    message_ = std::move(message);
    done_ = true;
    canceller_ = nullptr;
  }
  finished_.notify_all();
}

void RunHandle::throw_if_failed() const {
  if (failed_) throw ir::Error(code_, message_);
}

void RunHandle::wait() {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return done_; });
  throw_if_failed();
}

bool RunHandle::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!finished_.wait_for(lock, timeout, [&] { return done_; })) return false;
  throw_if_failed();
  return true;
}

void RunHandle::cancel() {
  cancel_requested_.store(true, std::memory_order_release);
  std::function<void()> canceller;
  {
    std::lock_guard lock(mutex_);
    canceller = canceller_;  // called unlocked: cancelling a queued run completes this handle
  }
  if (canceller) canceller();
}

void RunHandle::set_canceller(std::function<void()> canceller) {
  std::lock_guard lock(mutex_);
  if (!done_) canceller_ = std::move(canceller);
}

bool RunHandle::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

}  // namespace plexus::runtime
