#include "core/ops/matmul/gemm_parts.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace plexus::ops {

namespace {

// The caller's wait for the parts it handed to helpers. A helper touches it only while
// holding `mutex_`, and the caller takes `mutex_` before returning, so it outlives every
// helper's last touch.
class Join {
 public:
  void expect() { left_.fetch_add(1, std::memory_order_relaxed); }
  void arrive() {
    std::lock_guard lock(mutex_);
    if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
  }
  // A short spin (sched_yield, so that a helper waiting for this core can run), then sleep.
  void wait() {
    for (int i = 0; i < 64 && left_.load(std::memory_order_acquire) != 0; ++i) sched_yield();
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return left_.load(std::memory_order_acquire) == 0; });
  }

 private:
  std::atomic<int> left_{0};
  std::mutex mutex_;
  std::condition_variable done_;
};

// One helper thread and its one-task mailbox. Sleeps between tasks.
class Helper {
 public:
  explicit Helper(int index) : thread_([this, index] { loop(index); }) {}

  // Hands fn(part) to this helper if it is idle (then join.arrive() follows it).
  bool try_give(PartFn fn, void* context, int part, Join& join) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    join.expect();
    {
      std::lock_guard lock(mutex_);
      fn_ = fn;
      context_ = context;
      part_ = part;
      join_ = &join;
    }
    wake_.notify_one();
    return true;
  }

 private:
  [[noreturn]] void loop(int index) {
    const std::string name = "plx-gemm" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return join_ != nullptr; });
      const PartFn fn = fn_;
      void* context = context_;
      const int part = part_;
      Join* join = join_;
      join_ = nullptr;
      lock.unlock();
      fn(context, part);
      busy_.store(false, std::memory_order_release);
      join->arrive();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  PartFn fn_ = nullptr;
  void* context_ = nullptr;
  int part_ = 0;
  Join* join_ = nullptr;
  std::atomic<bool> busy_{false};
  std::thread thread_;
};

// Set in a child made by fork(): the helpers' threads did not come along.
std::atomic<bool> forked{false};

// The process's helpers: started on first use, never stopped (they sleep when idle, and
// a static destructor joining them could run while a device thread still uses them).
std::vector<std::unique_ptr<Helper>>& helpers() {
  static auto* all = [] {
    auto* v = new std::vector<std::unique_ptr<Helper>>;
    const unsigned n = std::max(2u, std::thread::hardware_concurrency()) - 1;
    for (unsigned i = 0; i < n; ++i) v->push_back(std::make_unique<Helper>(static_cast<int>(i)));
    pthread_atfork(nullptr, nullptr, [] { forked.store(true, std::memory_order_relaxed); });
    return v;
  }();
  return *all;
}

}  // namespace

void run_parts(int parts, PartFn part, void* context) {
  if (parts <= 1 || forked.load(std::memory_order_relaxed)) {
    for (int p = 0; p < std::max(parts, 1); ++p) part(context, p);
    return;
  }
  Join join;
  int next = 1;  // parts [next, parts) found no idle helper: this thread runs them too
  for (const std::unique_ptr<Helper>& helper : helpers()) {
    if (next == parts) break;
    if (helper->try_give(part, context, next, join)) ++next;
  }
  part(context, 0);
  for (; next < parts; ++next) part(context, next);
  join.wait();
}

}  // namespace plexus::ops
