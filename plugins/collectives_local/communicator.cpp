#include "communicator.h"

#include <algorithm>

namespace plexus::collectives::local {

Communicator::Communicator(const plx_comm_config& config)
    : hosted_(hosted_replicas(config)), timeout_(timeout_of(config)) {}

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
