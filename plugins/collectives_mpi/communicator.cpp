#include "communicator.h"

#include <algorithm>
#include <thread>

#include "collectives_common/messages.h"
#include "mpi_runtime.h"
#include "transfers.h"

namespace plexus::collectives::mpi {
namespace {

// Workers reach comm_create at different times (one still loads data or finishes its
// previous session), so creation waits at least this long, whatever the calls' timeout.
constexpr std::chrono::milliseconds kMinCreateWait{60000};

// MPI_Comm_idup, polled so that a worker that never comes cannot hang comm_create.
Outcome duplicate_world(std::chrono::milliseconds call_timeout, MPI_Comm* out) {
  const std::chrono::milliseconds timeout = std::max(call_timeout, kMinCreateWait);
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Comm_idup(MPI_COMM_WORLD, out, &request) != MPI_SUCCESS) {
    return Outcome::error(PLX_ERR_RUNTIME, "comm_create: MPI_Comm_idup failed");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      note_failure();
      return Outcome::error(PLX_ERR_TIMEOUT,
                            "comm_create: timed out after " + std::to_string(timeout.count()) +
                                " ms waiting for the other MPI ranks to create the "
                                "communicator (every worker creates its sessions' "
                                "communicators in the same order)");
    }
    std::this_thread::yield();
  }
  MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return Outcome::ok();
}

}  // namespace

Outcome open_world(const plx_comm_config& config, MPI_Comm* out) {
  if (Outcome ready = ensure_mpi(); !ready.is_ok()) return ready;
  if (Outcome bounded = check_kept_bound(); !bounded.is_ok()) return bounded;
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string worker = "MPI rank " + std::to_string(rank) + " of " + std::to_string(size);
  if (Outcome layout = workers::check_layout(config, rank, size, worker); !layout.is_ok()) {
    return layout;
  }
  return duplicate_world(timeout_of(config), out);
}

namespace {

int rank_of(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

// MPI_TAG_UB, at least 32767.
int tag_limit_of(MPI_Comm comm) {
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &found);
  return found && tag_ub != nullptr ? *tag_ub : 32767;
}

}  // namespace

MpiCommunicator::MpiCommunicator(const plx_comm_config& config, MPI_Comm comm)
    : Communicator(config, rank_of(comm), tag_limit_of(comm)), comm_(comm) {}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (failed_.load() || abort_flag().is_set()) {
    keep_until_exit(comm_);
  } else {
    MPI_Comm_free(&comm_);
  }
}

std::unique_ptr<workers::Transfers> MpiCommunicator::transfers(const workers::Group& group, Collective kind) {
  return std::make_unique<MpiTransfers>(comm_, group, kind, timeout(), abort_flag(), failed_);
}

}  // namespace plexus::collectives::mpi
