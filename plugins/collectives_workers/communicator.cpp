#include "collectives_workers/communicator.h"

#include "collectives_common/messages.h"

namespace plexus::collectives::workers {
namespace {

Outcome unsupported(const std::string& what) {
  return Outcome::error(PLX_ERR_UNSUPPORTED, "comm_create: " + what);
}

// FNV-1a over the member list, reduced to a tag in [0, limit].
int tag_of(std::span<const int64_t> members, int limit) {
  uint64_t hash = 14695981039346656037ull;
  for (int64_t member : members) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= static_cast<uint64_t>(member >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  }
  return static_cast<int>(hash % (static_cast<uint64_t>(limit) + 1));
}

}  // namespace

Outcome check_layout(const plx_comm_config& config, int rank, int size, const std::string& worker) {
  const int64_t local = config.local_replicas;
  const std::string job = "this process is " + worker + " and hosts " + std::to_string(local) + " replicas";
  if (local * size != config.replication_factor) {
    return unsupported(job + ", so the job has " + std::to_string(local * size) +
                       " replicas, but replication_factor is " +
                       std::to_string(config.replication_factor) +
                       " (every worker must host the same number of replicas)");
  }
  if (config.first_local_replica != rank * local) {
    return unsupported(job + ", so its first replica is " + std::to_string(rank * local) +
                       ", but first_local_replica is " +
                       std::to_string(config.first_local_replica));
  }
  return Outcome::ok();
}

Communicator::Communicator(const plx_comm_config& config, int rank, int tag_limit)
    : hosted_(hosted_replicas(config)), timeout_(timeout_of(config)), rank_(rank), tag_limit_(tag_limit) {}

Outcome Communicator::group(std::span<const int64_t> members, Group** out) {
  std::lock_guard lock(groups_mutex_);
  auto it = groups_.find(members);
  if (it == groups_.end()) {
    const int tag = tag_of(members, tag_limit_);
    for (const auto& [other, group] : groups_) {
      if (group->tag() != tag) continue;
      return Outcome::error(PLX_ERR_UNSUPPORTED,
                            "groups " + format_members(members) + " and " +
                                format_members(other) + " map to the same tag " +
                                std::to_string(tag) + "; use other replica groupings");
    }
    std::vector<int64_t> key(members.begin(), members.end());
    auto group = std::make_unique<Group>(key, hosted_.count, rank_, tag, abort_, timeout_);
    it = groups_.emplace(std::move(key), std::move(group)).first;
  }
  *out = it->second.get();
  return Outcome::ok();
}

void Communicator::abort(const char* reason) {
  abort_.set(reason);
  std::lock_guard lock(groups_mutex_);
  for (auto& [members, group] : groups_) group->local().wake_all();
}

}  // namespace plexus::collectives::workers
