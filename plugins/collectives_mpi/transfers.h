// The MPI messages of one collective call (collectives_workers/transfers.h): MPI_Isend /
// MPI_Irecv with the group's tag, and waiting for them without ever hanging: the leader
// polls its requests (MPI_Test drives Open MPI's progress) and gives up when nothing has
// completed for the communicator's timeout, when the communicator is aborted, or when MPI
// reports an error (the communicator uses MPI_ERRORS_RETURN).
//
// All messages of a group use the group's tag; MPI keeps messages between two ranks with
// one tag in order, so sender and receiver only have to post the same sequence of sizes.
#ifndef PLEXUS_COLLECTIVES_MPI_TRANSFERS_H
#define PLEXUS_COLLECTIVES_MPI_TRANSFERS_H

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <vector>

#include "collectives_common/abort_flag.h"
#include "collectives_workers/transfers.h"

namespace plexus::collectives::mpi {

using workers::Group;

class MpiTransfers final : public workers::Transfers {
 public:
  /** `failed` (the communicator's, which outlives this) is set when a transfer fails. */
  MpiTransfers(MPI_Comm comm, const Group& group, Collective kind, std::chrono::milliseconds timeout,
               const AbortFlag& abort, std::atomic<bool>& failed);
  /** Cancels and frees the requests still pending (after a failure). */
  ~MpiTransfers() override;

  Id post_send(int rank, const void* data, size_t bytes) override;
  Id post_recv(int rank, void* data, size_t bytes) override;
  Outcome wait(Id id) override;
  Outcome wait_all() override;

 private:
  using Clock = std::chrono::steady_clock;

  Id post(int rank, bool is_recv, int code, MPI_Request request);
  // One round of MPI_Testsome; false when a failure was recorded.
  bool progress();
  // Checks abort and the stall timeout; false when a failure was recorded.
  bool still_waiting(size_t round);
  std::string peer_name(int rank) const override;
  void on_failure(plx_status status) override;
  std::string pending_peers() const;

  MPI_Comm comm_;
  std::chrono::milliseconds timeout_;
  const AbortFlag& abort_;
  std::atomic<bool>& failed_;
  Clock::time_point last_progress_;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;
  std::vector<bool> is_recv_;
  std::vector<int> completed_;        // MPI_Testsome's outputs, sized with requests_
  std::vector<MPI_Status> statuses_;
  size_t pending_ = 0;
};

}  // namespace plexus::collectives::mpi

#endif  // PLEXUS_COLLECTIVES_MPI_TRANSFERS_H
