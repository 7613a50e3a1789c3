#include "transfers.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "collectives_common/messages.h"
#include "mpi_runtime.h"

namespace plexus::collectives::mpi {
namespace {

// Polls before the waiting thread starts yielding its core to others (ranks oversubscribed
// on few cores, or the replicas' compute threads).
constexpr size_t kSpinRounds = 64;
// Polls, yielding, before the thread naps between polls instead. A yield does not give the
// core to a process of another scheduling group (Linux autogroups: each session is one), so
// a rank that only yields while it waits keeps a core from the rank it waits for; two ranks
// sharing 2 cores, as tests/multihost runs them, took 1.1 s a step instead of 0.05 s.
constexpr size_t kYieldRounds = 1024;
constexpr std::chrono::microseconds kNap{50};

}  // namespace

MpiTransfers::MpiTransfers(MPI_Comm comm, const Group& group, Collective kind,
                           std::chrono::milliseconds timeout, const AbortFlag& abort,
                           std::atomic<bool>& failed)
    : Transfers(group, kind),
      comm_(comm),
      timeout_(timeout),
      abort_(abort),
      failed_(failed),
      last_progress_(Clock::now()) {}

MpiTransfers::~MpiTransfers() {
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    if (is_recv_[i]) MPI_Cancel(&requests_[i]);
    MPI_Request_free(&requests_[i]);
  }
}

MpiTransfers::Id MpiTransfers::post(int rank, bool is_recv, int code, MPI_Request request) {
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

MpiTransfers::Id MpiTransfers::post_send(int rank, const void* data, size_t bytes) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int code = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, rank, group_.tag(), comm_,
                             &request);
  return post(rank, false, code, request);
}

MpiTransfers::Id MpiTransfers::post_recv(int rank, void* data, size_t bytes) {
  MPI_Request request = MPI_REQUEST_NULL;
  const int code =
      MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, rank, group_.tag(), comm_, &request);
  return post(rank, true, code, request);
}

bool MpiTransfers::progress() {
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

bool MpiTransfers::still_waiting(size_t round) {
  if (abort_.is_set()) {
    fail(PLX_ERR_CANCELLED, "cancelled: " + abort_.reason());
    return false;
  }
  if (Clock::now() - last_progress_ >= timeout_) {
    fail(PLX_ERR_TIMEOUT, "timed out after " + std::to_string(timeout_.count()) +
                              " ms waiting for " + pending_peers());
    return false;
  }
  if (round >= kYieldRounds) {
    std::this_thread::sleep_for(kNap);
  } else if (round >= kSpinRounds) {
    std::this_thread::yield();
  }
  return true;
}

Outcome MpiTransfers::wait(Id id) {
  for (size_t round = 0; failure().is_ok(); ++round) {
    if (requests_[id] == MPI_REQUEST_NULL) return Outcome::ok();
    if (!progress() || !still_waiting(round)) break;
  }
  return failure();
}

Outcome MpiTransfers::wait_all() {
  for (size_t round = 0; failure().is_ok(); ++round) {
    if (pending_ == 0) return Outcome::ok();
    if (!progress() || !still_waiting(round)) break;
  }
  return failure();
}

std::string MpiTransfers::peer_name(int rank) const { return "MPI rank " + std::to_string(rank); }

// Any failure leaves the communicator's messages unsettled (see ~MpiCommunicator); a
// cancellation is this worker's own abort, so only other failures mean a peer may be gone.
void MpiTransfers::on_failure(plx_status status) {
  failed_.store(true);
  if (status != PLX_ERR_CANCELLED) note_failure();
}

// "replica 1 (MPI rank 1)" / "replicas 2,3 (MPI rank 1)": the workers of pending receives
// (what this worker is waiting for), else of pending sends.
std::string MpiTransfers::pending_peers() const {
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
  return describe_peers(ranks);
}

}  // namespace plexus::collectives::mpi
