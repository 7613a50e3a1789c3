// The MPI messages of one collective call between this worker and the group's other
// workers, and waiting for them without ever hanging: the leader polls its requests
// (MPI_Test drives Open MPI's progress) and gives up when nothing has completed for the
// communicator's timeout, when the communicator is aborted, or when MPI reports an error
// (the communicator uses MPI_ERRORS_RETURN). Every failure names the group and the
// replicas of the worker(s) it was waiting for.
//
// All messages of a group use the group's tag; MPI keeps messages between two ranks with
// one tag in order, so sender and receiver only have to post the same sequence of sizes.
#ifndef PLEXUS_COLLECTIVES_MPI_TRANSFERS_H
#define PLEXUS_COLLECTIVES_MPI_TRANSFERS_H

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <vector>

#include "collectives_common/abort_flag.h"
#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "group.h"

namespace plexus::collectives::mpi {

/** Largest single message; longer transfers are split (MPI counts are int). */
inline constexpr size_t kMaxMessageBytes = size_t{1} << 20;

class Transfers {
 public:
  Transfers(MPI_Comm comm, const Group& group, Collective kind, std::chrono::milliseconds timeout,
            const AbortFlag& abort);
  /** Cancels and frees the requests still pending (after a failure). */
  ~Transfers();
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  using Id = size_t;

  /** Posts one message (bytes <= kMaxMessageBytes) to / from `rank`; the id is for wait(). */
  Id post_send(int rank, const void* data, size_t bytes);
  Id post_recv(int rank, void* data, size_t bytes);

  /** Posts `bytes` as consecutive messages of at most kMaxMessageBytes. */
  void post_send_all(int rank, const void* data, size_t bytes);
  void post_recv_all(int rank, void* data, size_t bytes);

  /** Waits for one request (the others progress meanwhile). */
  Outcome wait(Id id);
  /** Waits for every request posted so far. */
  Outcome wait_all();

 private:
  using Clock = std::chrono::steady_clock;

  Id post(int rank, bool is_recv, int code, MPI_Request request);
  // One round of MPI_Testsome; false when a failure was recorded.
  bool progress();
  // Checks abort and the stall timeout; false when a failure was recorded.
  bool still_waiting(size_t round);
  void fail(plx_status status, const std::string& what);
  std::string pending_peers() const;

  MPI_Comm comm_;
  const Group& group_;
  Collective kind_;
  std::chrono::milliseconds timeout_;
  const AbortFlag& abort_;
  Clock::time_point last_progress_;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;
  std::vector<bool> is_recv_;
  std::vector<int> completed_;        // MPI_Testsome's outputs, sized with requests_
  std::vector<MPI_Status> statuses_;
  size_t pending_ = 0;
  Outcome failure_;
};

}  // namespace plexus::collectives::mpi

#endif  // PLEXUS_COLLECTIVES_MPI_TRANSFERS_H
