// The meeting point of one group (one sorted member list) of a communicator.
//
// Calls are matched by position in each member's sequence: the k-th call of every member
// on this group forms "generation" k. A generation completes when all members have
// published their call; then every member sees every other member's descriptor (buffers
// included), the agreement verdict, and runs the collective's data phase, whose steps are
// separated by barrier(). Generations alternate between two slots: a member can be at
// most one generation ahead of another (it needs everyone's arrival to leave a
// generation), so slot k % 2 is never overwritten while someone still reads it.
//
// Failures are decided at arrival only: a member that has not arrived within the timeout
// of the generation's first arrival breaks the group (this and every later call on it fail
// with PLX_ERR_TIMEOUT); an abort fails waiting and later arrivals with PLX_ERR_CANCELLED.
// Once a generation has completed, every member runs its data phase to the end (others
// read its buffers), so barrier() is neither cancellable nor timed: it only waits for
// members that are inside the plugin's own copy loops.
#ifndef PLEXUS_COLLECTIVES_COMMON_GROUP_RENDEZVOUS_H
#define PLEXUS_COLLECTIVES_COMMON_GROUP_RENDEZVOUS_H

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "collectives_common/abort_flag.h"
#include "collectives_common/call.h"
#include "collectives_common/outcome.h"

namespace plexus::collectives {

class GroupRendezvous {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);

  /** `members` strictly increasing; `abort` outlives this object. */
  GroupRendezvous(std::vector<int64_t> members, const AbortFlag& abort,
                  std::chrono::milliseconds timeout);
  GroupRendezvous(const GroupRendezvous&) = delete;
  GroupRendezvous& operator=(const GroupRendezvous&) = delete;

  std::span<const int64_t> members() const { return members_; }
  size_t size() const { return members_.size(); }

  /** Position of `replica` in members(), or npos. */
  size_t position_of(int64_t replica) const;

  /** Marks member `position` as inside a call; false if it already was (overlapping calls). */
  bool begin_call(size_t position);
  /** Ends what begin_call() started. */
  void end_call(size_t position);

  /**
   * Publishes `call` as member `position`'s next call and waits for the other members.
   * On PLX_OK, *calls holds every member's descriptor in member order, valid until this
   * member's next arrive(). Errors: PLX_ERR_INVALID_ARGUMENT (the members disagree; every
   * member gets it, and *calls is set as on success), PLX_ERR_TIMEOUT, PLX_ERR_CANCELLED.
   */
  Outcome arrive(size_t position, const CallDescriptor& call,
                 std::span<const CallDescriptor>* calls);

  /** Waits until every member reached its matching barrier() (data phase only). */
  void barrier(size_t position);

  /** Wakes every waiter so that it sees the abort flag. */
  void wake_all();

 private:
  using Clock = std::chrono::steady_clock;

  struct Generation {
    uint64_t index = UINT64_MAX;  // which call of the sequence this slot holds
    size_t arrived = 0;
    Clock::time_point first_arrival{};
    std::vector<CallDescriptor> calls;   // per member
    std::vector<uint64_t> arrived_call;  // per member: the last call index it published here
    bool agree = true;
    std::string verdict;  // the disagreement message when !agree ("" if it could not be built)
  };

  // mutex_, locked after spinning on try_lock: the members arrive together and hold it only
  // to publish, and a blocked lock() would cost a futex sleep and wake-up per call.
  std::unique_lock<std::mutex> lock_spinning();
  void publish_locked(Generation& gen, size_t position, uint64_t index, const CallDescriptor& call);
  void complete_locked(Generation& gen, uint64_t index);
  Outcome wait_locked(std::unique_lock<std::mutex>& lock, Generation& gen, uint64_t index,
                      Collective kind);
  Outcome failure_locked(Collective kind, uint64_t index) const;
  Outcome time_out_locked(const Generation& gen, uint64_t index, Collective kind);
  Outcome verdict_of(const Generation& gen) const;
  void spin_until_settled(uint64_t index) const;

  template <typename Done>
  bool spin(Done done) const;

  const std::vector<int64_t> members_;
  const AbortFlag& abort_;
  const std::chrono::milliseconds timeout_;
  const int spin_limit_;  // busy-wait iterations before blocking (0 when oversubscribed)

  std::mutex mutex_;
  std::condition_variable cv_;
  std::array<Generation, 2> generations_;
  std::atomic<uint64_t> completed_calls_{0};   // generations [0, completed_calls_) completed
  std::atomic<uint64_t> barrier_arrivals_{0};  // barrier j completes at (j + 1) * size()

  // Per member, touched only by that member's (one at a time) calling thread.
  std::vector<uint64_t> next_call_;
  std::vector<uint64_t> next_barrier_;
  std::unique_ptr<std::atomic<bool>[]> busy_;

  // Set when a generation timed out; guarded by mutex_ (broken_ also read by spinners).
  std::atomic<bool> broken_{false};
  uint64_t broken_index_ = 0;
  std::string broken_message_;
};

/** Marks a member busy on a group for the duration of one call (begin_call / end_call). */
class CallGuard {
 public:
  CallGuard(GroupRendezvous& group, size_t position)
      : group_(group), position_(position), entered_(group.begin_call(position)) {}
  ~CallGuard() {
    if (entered_) group_.end_call(position_);
  }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;
  /** False when the member already had a call in flight on the group. */
  bool entered() const { return entered_; }

 private:
  GroupRendezvous& group_;
  size_t position_;
  bool entered_;
};

/** The error of a call made while the same replica's previous call on the group runs. */
Outcome overlapping_call(Collective kind, std::span<const int64_t> members, int64_t replica);

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_GROUP_RENDEZVOUS_H
