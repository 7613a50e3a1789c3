#include "collectives_common/group_rendezvous.h"

#include <algorithm>
#include <thread>

#include "collectives_common/agreement.h"
#include "collectives_common/messages.h"

namespace plexus::collectives {
namespace {

// Busy-wait iterations (x86 `pause`) before blocking on the condition variable: about
// 25 us on the development machines, longer than a small message's data phase, far
// shorter than a large one's. Spinning only helps when every member can hold a core; with
// more members than cores it steals their time, so it is then skipped.
constexpr int kSpinIterations = 1000;

int spin_limit_for(size_t members) {
  const unsigned cores = std::thread::hardware_concurrency();
  return (cores != 0 && members <= cores) ? kSpinIterations : 0;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

}  // namespace

GroupRendezvous::GroupRendezvous(std::vector<int64_t> members, const AbortFlag& abort,
                                 std::chrono::milliseconds timeout)
    : members_(std::move(members)),
      abort_(abort),
      timeout_(timeout),
      spin_limit_(spin_limit_for(members_.size())),
      next_call_(members_.size(), 0),
      next_barrier_(members_.size(), 0),
      busy_(std::make_unique<std::atomic<bool>[]>(members_.size())) {
  for (Generation& gen : generations_) {
    gen.calls.resize(members_.size());
    gen.arrived_call.assign(members_.size(), UINT64_MAX);
  }
}

size_t GroupRendezvous::position_of(int64_t replica) const {
  const auto it = std::lower_bound(members_.begin(), members_.end(), replica);
  if (it == members_.end() || *it != replica) return npos;
  return static_cast<size_t>(it - members_.begin());
}

bool GroupRendezvous::begin_call(size_t position) {
  return !busy_[position].exchange(true, std::memory_order_acquire);
}

void GroupRendezvous::end_call(size_t position) {
  busy_[position].store(false, std::memory_order_release);
}

template <typename Done>
bool GroupRendezvous::spin(Done done) const {
  for (int i = 0; i < spin_limit_; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  return done();
}

std::unique_lock<std::mutex> GroupRendezvous::lock_spinning() {
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!spin([&] { return lock.try_lock(); })) lock.lock();
  return lock;
}

Outcome GroupRendezvous::arrive(size_t position, const CallDescriptor& call,
                                std::span<const CallDescriptor>* calls) {
  const uint64_t index = next_call_[position]++;
  Generation& gen = generations_[index & 1];
  std::unique_lock lock = lock_spinning();
  if (Outcome failure = failure_locked(call.kind, index); !failure.is_ok()) return failure;
  publish_locked(gen, position, index, call);
  if (gen.arrived == size()) {
    complete_locked(gen, index);
    lock.unlock();
    cv_.notify_all();
  } else {
    lock.unlock();
    spin_until_settled(index);
    lock.lock();
    if (Outcome waited = wait_locked(lock, gen, index, call.kind); !waited.is_ok()) return waited;
    lock.unlock();
  }
  // The generation is complete; its slot stays untouched until this member arrives again.
  *calls = gen.calls;
  return verdict_of(gen);
}

void GroupRendezvous::publish_locked(Generation& gen, size_t position, uint64_t index,
                                     const CallDescriptor& call) {
  if (gen.index != index) {  // first arrival of this generation: recycle the slot
    gen.index = index;
    gen.arrived = 0;
    gen.first_arrival = Clock::now();
    gen.agree = true;
    gen.verdict.clear();
  }
  gen.calls[position] = call;
  gen.arrived_call[position] = index;
  ++gen.arrived;
}

void GroupRendezvous::complete_locked(Generation& gen, uint64_t index) {
  gen.agree = calls_agree(gen.calls);
  if (!gen.agree) {
    try {
      gen.verdict = describe_disagreement(members_, gen.calls);
    } catch (...) {
      gen.verdict.clear();  // out of memory: verdict_of() falls back to a fixed text
    }
  }
  completed_calls_.store(index + 1, std::memory_order_release);
}

void GroupRendezvous::spin_until_settled(uint64_t index) const {
  spin([&] {
    return completed_calls_.load(std::memory_order_acquire) > index ||
           broken_.load(std::memory_order_relaxed) || abort_.is_set();
  });
}

Outcome GroupRendezvous::wait_locked(std::unique_lock<std::mutex>& lock, Generation& gen,
                                     uint64_t index, Collective kind) {
  const Clock::time_point deadline = gen.first_arrival + timeout_;
  while (true) {
    // A completed generation always wins: the others are about to read our buffers.
    if (completed_calls_.load(std::memory_order_acquire) > index) return Outcome::ok();
    if (Outcome failure = failure_locked(kind, index); !failure.is_ok()) return failure;
    if (Clock::now() >= deadline) {
      Outcome timed_out = time_out_locked(gen, index, kind);
      cv_.notify_all();
      return timed_out;
    }
    cv_.wait_until(lock, deadline);
  }
}

Outcome GroupRendezvous::failure_locked(Collective kind, uint64_t index) const {
  if (abort_.is_set()) {
    return Outcome::error(PLX_ERR_CANCELLED,
                          call_prefix(kind, members_) + ": cancelled: " + abort_.reason());
  }
  if (!broken_.load(std::memory_order_relaxed)) return Outcome::ok();
  if (index == broken_index_) return Outcome::error(PLX_ERR_TIMEOUT, broken_message_);
  return Outcome::error(PLX_ERR_TIMEOUT, call_prefix(kind, members_) +
                                             ": the group is unusable since an earlier call "
                                             "timed out: " +
                                             broken_message_);
}

Outcome GroupRendezvous::time_out_locked(const Generation& gen, uint64_t index, Collective kind) {
  broken_.store(true, std::memory_order_relaxed);
  broken_index_ = index;
  std::vector<int64_t> missing;
  std::vector<int64_t> arrived;
  for (size_t i = 0; i < size(); ++i) {
    (gen.arrived_call[i] == index ? arrived : missing).push_back(members_[i]);
  }
  broken_message_ = call_prefix(kind, members_) + ": timed out after " +
                    std::to_string(timeout_.count()) + " ms waiting for " +
                    format_replicas(missing) + " (call " + std::to_string(index) +
                    " on this group; " + format_replicas(arrived) + " arrived)";
  return Outcome::error(PLX_ERR_TIMEOUT, broken_message_);
}

Outcome GroupRendezvous::verdict_of(const Generation& gen) const {
  if (gen.agree) return Outcome::ok();
  if (gen.verdict.empty()) {
    return Outcome::error(PLX_ERR_INVALID_ARGUMENT,
                          "the members of a group disagree on a call (out of memory while "
                          "describing how)");
  }
  return Outcome::error(PLX_ERR_INVALID_ARGUMENT, gen.verdict);
}

void GroupRendezvous::barrier(size_t position) {
  if (size() == 1) return;
  const uint64_t target = ++next_barrier_[position] * size();
  const uint64_t arrived = barrier_arrivals_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (arrived == target) {
    { std::lock_guard lock(mutex_); }  // a waiter is either before its check or in wait()
    cv_.notify_all();
    return;
  }
  const auto reached = [&] { return barrier_arrivals_.load(std::memory_order_acquire) >= target; };
  if (spin(reached)) return;
  std::unique_lock lock(mutex_);
  cv_.wait(lock, reached);
}

void GroupRendezvous::wake_all() {
  { std::lock_guard lock(mutex_); }
  cv_.notify_all();
}

Outcome overlapping_call(Collective kind, std::span<const int64_t> members, int64_t replica) {
  return Outcome::error(PLX_ERR_INVALID_ARGUMENT,
                        call_prefix(kind, members) + ": replica " + std::to_string(replica) +
                            " already has a call in flight on this group (a replica makes one "
                            "call at a time)");
}

}  // namespace plexus::collectives
