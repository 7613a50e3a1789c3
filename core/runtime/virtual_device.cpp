#include "core/runtime/virtual_device.h"

#include <pthread.h>

#include <chrono>
#include <string>
#include <utility>

namespace plexus::runtime {

VirtualDevice::VirtualDevice(int index, size_t arena_bytes, bool spin)
    : index_(index), arena_(arena_bytes), spin_(spin), thread_([this] { loop(); }) {
  const std::string name = "plx-dev" + std::to_string(index);
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

VirtualDevice::~VirtualDevice() {
  while (completed_.load() != submitted_.load()) completed_.wait(completed_.load());
  stop_ = true;
  submitted_.fetch_add(1, std::memory_order_release);
  submitted_.notify_one();
  thread_.join();
}

void VirtualDevice::submit(const std::function<void()>& work) {
  job_ = &work;
  error_ = nullptr;
  submitted_.fetch_add(1, std::memory_order_release);
  submitted_.notify_one();
}

void VirtualDevice::wait_change(const std::atomic<uint32_t>& counter, uint32_t old) const {
  if (spin_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (unsigned i = 1; counter.load(std::memory_order_acquire) == old; ++i) {
      __builtin_ia32_pause();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
    }
  }
  while (counter.load(std::memory_order_acquire) == old) counter.wait(old, std::memory_order_acquire);
}

void VirtualDevice::wait() {
  const uint32_t target = submitted_.load(std::memory_order_relaxed);
  for (uint32_t done = completed_.load(std::memory_order_acquire); done != target;
       done = completed_.load(std::memory_order_acquire)) {
    wait_change(completed_, done);
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void VirtualDevice::loop() {
  uint32_t seen = 0;
  for (;;) {
    wait_change(submitted_, seen);
    seen = submitted_.load(std::memory_order_acquire);
    if (stop_) return;
    try {
      (*job_)();
    } catch (...) {
      error_ = std::current_exception();
    }
    completed_.store(seen, std::memory_order_release);
    completed_.notify_all();
  }
}

}  // namespace plexus::runtime
