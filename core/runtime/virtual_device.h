// A virtual device: a worker thread plus the memory arena its kernels run in
// (docs/design.md, Runtime). Work is handed over through two counters with C++20 atomic
// wait/notify, so a hand-over costs no allocation and no lock. When every device can have
// a core, both sides spin briefly before sleeping (SpinWait): a futex wake-up costs tens
// of microseconds here, more than a small model's whole step.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <thread>

#include "core/memory/arena.h"
#include "core/streams/spin_wait.h"

namespace plexus::runtime {

/// Thread-safety: submit()/wait() from one controlling thread at a time.
class VirtualDevice {
 public:
  /// Starts the device thread ("plx-dev<index>") and allocates an arena of `arena_bytes`.
  /// `spin`: let both sides spin before sleeping (see SpinWait); set it when every device
  /// can have a core of its own (SpinWait backs off by itself when cores are contended).
  VirtualDevice(int index, size_t arena_bytes, bool spin);
  /// Stops and joins the thread; waits for submitted work first.
  ~VirtualDevice();
  VirtualDevice(const VirtualDevice&) = delete;
  VirtualDevice& operator=(const VirtualDevice&) = delete;

  int index() const { return index_; }
  memory::Arena& arena() { return arena_; }
  const memory::Arena& arena() const { return arena_; }

  /// Starts `work` on the device thread; `work` must stay alive until wait() returns.
  void submit(const std::function<void()>& work);
  /// Waits for the submitted work and rethrows the exception it threw, if any.
  void wait();
  /// submit() then wait().
  void execute(const std::function<void()>& work) {
    submit(work);
    wait();
  }

 private:
  void loop();

  int index_;
  memory::Arena arena_;
  streams::SpinWait caller_wait_;  ///< used by the controlling thread in wait()
  streams::SpinWait device_wait_;  ///< used by the device thread between jobs
  const std::function<void()>* job_ = nullptr;
  std::exception_ptr error_;
  bool stop_ = false;
  std::atomic<uint32_t> submitted_{0};
  std::atomic<uint32_t> completed_{0};
  std::thread thread_;
};

}  // namespace plexus::runtime
