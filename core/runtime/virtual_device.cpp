#include "core/runtime/virtual_device.h"

#include <pthread.h>

#include <string>
#include <utility>

namespace plexus::runtime {

VirtualDevice::VirtualDevice(int index, size_t arena_bytes, bool spin)
    : index_(index), arena_(arena_bytes), caller_wait_(spin), device_wait_(spin), thread_([this] { loop(); }) {
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

void VirtualDevice::wait() {
  const uint32_t target = submitted_.load(std::memory_order_relaxed);
  for (uint32_t done = completed_.load(std::memory_order_acquire); done != target;
       done = completed_.load(std::memory_order_acquire)) {
    caller_wait_.wait(completed_, done);
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void VirtualDevice::loop() {
  uint32_t seen = 0;
  for (;;) {
    device_wait_.wait(submitted_, seen);
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
