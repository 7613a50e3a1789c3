// Checkpoints saved while training goes on (issue 7): the caller's thread copies the
// session's state to host memory between two runs (a short pause), then background
// threads (a streams::IoService of its own, "plx-ckpt<k>", SCHED_IDLE: only on cores the
// devices leave idle) compress and write it. The snapshots held at
// once are bounded by a staging budget: a save that would exceed it waits, on the
// caller's thread, for earlier saves to finish (back-pressure, not memory growth).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/session/session_checkpoint.h"
#include "core/runtime/run_handle.h"
#include "core/streams/io_service.h"

namespace plexus::session {

/// Thread-safety: save() from any thread. The destructor waits for pending saves.
class AsyncSaver {
 public:
  /// `staging_bytes`: snapshot bytes held at once (a single larger snapshot still goes
  /// through, alone).
  AsyncSaver(int io_threads, uint64_t staging_bytes);
  ~AsyncSaver();
  AsyncSaver(const AsyncSaver&) = delete;
  AsyncSaver& operator=(const AsyncSaver&) = delete;

  /// Snapshots `session` now and returns; the write completes the handle (and calls
  /// `on_complete` first, on an io thread, with null or the error). Throws what
  /// snapshot_session throws (nothing is pending then).
  std::shared_ptr<runtime::RunHandle> save(const Session& session, const std::string& path,
                                                    const SaveOptions& options,
                                                    std::function<void(std::exception_ptr)> on_complete);
  /// Snapshot bytes held right now.
  uint64_t staged_bytes() const;

 private:
  uint64_t budget_;
  mutable std::mutex mutex_;
  std::condition_variable released_;
  uint64_t staged_ = 0;
  int pending_ = 0;
  streams::IoService io_;  // last: joined first, while the fields above still exist
};

}  // namespace plexus::session
