#include "collectives_workers/transfers.h"

#include <algorithm>

#include "collectives_common/messages.h"

namespace plexus::collectives::workers {

void Transfers::post_send_all(int rank, const void* data, size_t bytes) {
  const auto* bytes_in = static_cast<const std::byte*>(data);
  for (size_t done = 0; done < bytes; done += kMaxMessageBytes) {
    post_send(rank, bytes_in + done, std::min(kMaxMessageBytes, bytes - done));
  }
}

void Transfers::post_recv_all(int rank, void* data, size_t bytes) {
  auto* bytes_out = static_cast<std::byte*>(data);
  for (size_t done = 0; done < bytes; done += kMaxMessageBytes) {
    post_recv(rank, bytes_out + done, std::min(kMaxMessageBytes, bytes - done));
  }
}

void Transfers::fail(plx_status status, const std::string& what) {
  if (!failure_.is_ok()) return;
  on_failure(status);
  failure_ = Outcome::error(status, call_prefix(kind_, group_.members()) + ": " + what);
}

std::string Transfers::describe_peers(const std::vector<int>& ranks) const {
  std::string text;
  for (int rank : ranks) {
    if (!text.empty()) text += " and ";
    const WorkerMembers* worker = group_.worker_of_rank(rank);
    if (worker != nullptr) text += format_replicas(group_.members_of(*worker)) + " ";
    text += "(" + peer_name(rank) + ")";
  }
  return text.empty() ? "the other workers" : text;
}

}  // namespace plexus::collectives::workers
