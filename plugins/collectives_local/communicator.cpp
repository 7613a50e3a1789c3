#include "communicator.h"

#include <algorithm>

namespace plexus::collectives::local {
namespace {

// steady_clock counts nanoseconds in an int64: keep deadlines far from overflow.
constexpr int64_t kMaxTimeoutMs = int64_t{10} * 365 * 24 * 3600 * 1000;  // ten years

}  // namespace

Communicator::Communicator(const plx_comm_config& config)
    : hosted_{config.replication_factor, config.first_local_replica, config.local_replicas},
      timeout_(std::min(config.timeout_ms, kMaxTimeoutMs)) {}

GroupRendezvous& Communicator::group(std::span<const int64_t> members) {
  std::lock_guard lock(groups_mutex_);
  auto it = groups_.find(members);
  if (it == groups_.end()) {
    std::vector<int64_t> key(members.begin(), members.end());
    auto rendezvous = std::make_unique<GroupRendezvous>(key, abort_, timeout_);
    it = groups_.emplace(std::move(key), std::move(rendezvous)).first;
  }
  return *it->second;
}

void Communicator::abort(const char* reason) {
  abort_.set(reason);
  std::lock_guard lock(groups_mutex_);
  for (auto& [members, rendezvous] : groups_) rendezvous->wake_all();
}

}  // namespace plexus::collectives::local
