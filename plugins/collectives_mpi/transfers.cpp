#include "transfers.h"

#include <algorithm>
#include <thread>

#include "collectives_common/messages.h"
#include "mpi_runtime.h"

namespace plexus::collectives::mpi {
namespace {

// Polls before the waiting thread starts yielding its core to others (ranks oversubscribed
// on few cores, or the replicas' compute threads).
constexpr size_t kSpinRounds = 64;

}  // namespace

Transfers::Transfers(MPI_Comm comm, const Group& group, Collective kind,
                     std::chrono::milliseconds timeout, const AbortFlag& abort)
    : comm_(comm),
      group_(group),
      kind_(kind),
      timeout_(timeout),
      abort_(abort),
      last_progress_(Clock::now()) {}

Transfers::~Transfers() {
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    if (is_recv_[i]) MPI_Cancel(&requests_[i]);
    MPI_Request_free(&requests_[i]);
  }
}

Transfers::Id Transfers::post(int rank, bool is_recv, int code, MPI_Request request) {
  if (code != MPI_SUCCESS) {
    fail(PLX_ERR_RUNTIME, std::string("posting a message ") + (is_recv ? "from" : "to") +
                              " MPI rank " + std::to_string(rank) + " failed: " +
                              mpi_error_text(code));
    request = MPI_REQUEST_NULL;
  } else {
    ++pending_;
  }
  requests_.push_back(request);
  peers_.push_back(rank);
  is_recv_.push_back(is_recv);
  completed_.resize(requests_.size());
  statuses_.resize(requests_.size());
  return requests_.size() - 1;
}

Transfers::Id Transfers::post_send(int rank, const void* data, size_t bytes) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int code = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, rank, group_.tag(), comm_,
                             &request);
  return post(rank, false, code, request);
}

Transfers::Id Transfers::post_recv(int rank, void* data, size_t bytes) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int code =
      MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, rank, group_.tag(), comm_, &request);
  return post(rank, true, code, request);
}

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

bool Transfers::progress() {
  if (pending_ == 0) return true;
  int completed = 0;
  const int code = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &completed,
                                completed_.data(), statuses_.data());
  if (code != MPI_SUCCESS && code != MPI_ERR_IN_STATUS) {
    fail(PLX_ERR_RUNTIME, "MPI_Testsome failed while waiting for " + pending_peers() + ": " +
                              mpi_error_text(code));
    return false;
  }
  if (completed == MPI_UNDEFINED || completed == 0) return true;
  for (int i = 0; i < completed; ++i) {
    const int error = statuses_[static_cast<size_t>(i)].MPI_ERROR;
    if (code == MPI_ERR_IN_STATUS && error != MPI_SUCCESS) {
      const auto which = static_cast<size_t>(completed_[static_cast<size_t>(i)]);
      fail(PLX_ERR_RUNTIME, "lost contact with " + pending_peers() + " (a message " +
                                (is_recv_[which] ? "from" : "to") + " MPI rank " +
                                std::to_string(peers_[which]) + " failed: " +
                                mpi_error_text(error) + ")");
      return false;
    }
  }
  pending_ -= static_cast<size_t>(completed);
  last_progress_ = Clock::now();
  return true;
}

bool Transfers::still_waiting(size_t round) {
  if (abort_.is_set()) {
    failure_ = Outcome::error(PLX_ERR_CANCELLED,
                              call_prefix(kind_, group_.members()) + ": cancelled: " +
                                  abort_.reason());
    return false;
  }
  if (Clock::now() - last_progress_ >= timeout_) {
    fail(PLX_ERR_TIMEOUT, "timed out after " + std::to_string(timeout_.count()) +
                              " ms waiting for " + pending_peers());
    return false;
  }
  if (round >= kSpinRounds) std::this_thread::yield();
  return true;
}

Outcome Transfers::wait(Id id) {
  for (size_t round = 0; failure_.is_ok(); ++round) {
    if (requests_[id] == MPI_REQUEST_NULL) return Outcome::ok();
    if (!progress() || !still_waiting(round)) break;
  }
  return failure_;
}

Outcome Transfers::wait_all() {
  for (size_t round = 0; failure_.is_ok(); ++round) {
    if (pending_ == 0) return Outcome::ok();
    if (!progress() || !still_waiting(round)) break;
  }
  return failure_;
}

void Transfers::fail(plx_status status, const std::string& what) {
  if (!failure_.is_ok()) return;
  note_failure();
  failure_ = Outcome::error(status, call_prefix(kind_, group_.members()) + ": " + what);
}

// "replica 1 (MPI rank 1)" / "replicas 2,3 (MPI rank 1)": the workers of pending receives
// (what this worker is waiting for), else of pending sends.
std::string Transfers::pending_peers() const {
  std::vector<int> ranks;
  for (bool recvs : {true, false}) {
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] != MPI_REQUEST_NULL && is_recv_[i] == recvs &&
          std::find(ranks.begin(), ranks.end(), peers_[i]) == ranks.end()) {
        ranks.push_back(peers_[i]);
      }
    }
    if (!ranks.empty()) break;
  }
  std::string text;
  for (int rank : ranks) {
    if (!text.empty()) text += " and ";
    const WorkerMembers* worker = group_.worker_of_rank(rank);
    if (worker != nullptr) text += format_replicas(group_.members_of(*worker)) + " ";
    text += "(MPI rank " + std::to_string(rank) + ")";
  }
  return text.empty() ? "the other workers" : text;
}

}  // namespace plexus::collectives::mpi
