#include "core/session/async_saver.h"

namespace plexus::session {

AsyncSaver::AsyncSaver(int io_threads, uint64_t staging_bytes)
    : budget_(staging_bytes), io_(io_threads, streams::IoService::Priority::kBackground, "plx-ckpt") {}

AsyncSaver::~AsyncSaver() {
  std::unique_lock lock(mutex_);
  released_.wait(lock, [&] { return pending_ == 0; });
}

uint64_t AsyncSaver::staged_bytes() const {
  std::lock_guard lock(mutex_);
  return staged_;
}

std::shared_ptr<runtime::RunHandle> AsyncSaver::save(const Session& session, const std::string& path,
                                                              const SaveOptions& options,
                                                              std::function<void(std::exception_ptr)> on_complete) {
  auto snapshot = std::make_shared<Snapshot>(snapshot_session(session, options));
  const uint64_t bytes = snapshot->bytes();
  {
    std::unique_lock lock(mutex_);
    released_.wait(lock, [&] { return pending_ == 0 || staged_ + bytes <= budget_; });
    staged_ += bytes;
    ++pending_;
  }
  auto handle = std::make_shared<runtime::RunHandle>();
  io_.post([this, snapshot, bytes, path, handle, on_complete = std::move(on_complete)]() mutable {
    std::exception_ptr error;
    try {
      write_snapshot(path, *snapshot);
    } catch (...) {
      error = std::current_exception();
    }
    snapshot.reset();
    {  // released before the save completes: a waiter then sees its staging free
      std::lock_guard lock(mutex_);
      staged_ -= bytes;
      --pending_;
      released_.notify_all();
    }
    if (on_complete) {
      try {
        on_complete(error);
      } catch (...) {  // a completion callback's failure cannot change the save's outcome
      }
    }
    handle->complete(error);  // no member is touched from here on: the destructor may be running
  });
  return handle;
}

}  // namespace plexus::session
