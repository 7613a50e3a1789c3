#include "collectives_workers/group.h"

#include <algorithm>

#include "collectives_common/messages.h"

namespace plexus::collectives::workers {
namespace {

std::vector<WorkerMembers> split_by_worker(std::span<const int64_t> members,
                                           int64_t local_replicas) {
  std::vector<WorkerMembers> workers;
  for (size_t p = 0; p < members.size(); ++p) {
    const int rank = static_cast<int>(members[p] / local_replicas);
    if (workers.empty() || workers.back().rank != rank) workers.push_back({rank, p, 0});
    ++workers.back().count;
  }
  return workers;
}

size_t index_of_rank(std::span<const WorkerMembers> workers, int rank) {
  for (size_t i = 0; i < workers.size(); ++i) {
    if (workers[i].rank == rank) return i;
  }
  return 0;  // unreachable: the caller hosts a member
}

std::vector<int64_t> hosted_members(std::span<const int64_t> members, const WorkerMembers& mine) {
  return {members.begin() + static_cast<ptrdiff_t>(mine.first),
          members.begin() + static_cast<ptrdiff_t>(mine.first + mine.count)};
}

}  // namespace

Group::Group(std::vector<int64_t> members, int64_t local_replicas, int rank, int tag,
             const AbortFlag& abort, std::chrono::milliseconds timeout)
    : members_(std::move(members)),
      workers_(split_by_worker(members_, local_replicas)),
      self_(index_of_rank(workers_, rank)),
      tag_(tag),
      local_(hosted_members(members_, workers_[self_]), abort, timeout) {}

std::span<const int64_t> Group::members_of(const WorkerMembers& worker) const {
  return std::span<const int64_t>(members_).subspan(worker.first, worker.count);
}

const WorkerMembers* Group::worker_of_rank(int rank) const {
  const auto it = std::find_if(workers_.begin(), workers_.end(),
                               [rank](const WorkerMembers& w) { return w.rank == rank; });
  return it == workers_.end() ? nullptr : &*it;
}

Outcome Group::broken_outcome() const {
  return Outcome::error(broken_.status,
                        "the group " + format_members(members_) +
                            " is unusable since an earlier call failed: " + broken_.message);
}

}  // namespace plexus::collectives::workers
