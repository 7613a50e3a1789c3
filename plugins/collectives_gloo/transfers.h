// The Gloo messages of one collective call (collectives_workers/transfers.h): one Gloo
// unbound buffer per message, sent or received on the group's slot (its tag); Gloo keeps
// the messages of one slot between two workers in order over their one TCP connection.
//
// Waiting: messages are waited for in the order they were posted, each up to the
// communicator's timeout from the last completion (a stall timeout, as the MPI plugin's).
// Gloo ends a timed-out wait by failing the whole context, so a timeout or a lost peer
// leaves the communicator unusable until the runtime replaces it (as after any failure).
// abort() interrupts the wait in progress (Gloo's abortWaitSend / abortWaitRecv).
#ifndef PLEXUS_COLLECTIVES_GLOO_TRANSFERS_H
#define PLEXUS_COLLECTIVES_GLOO_TRANSFERS_H

#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "collectives_workers/transfers.h"

namespace plexus::collectives::gloo_plugin {

class GlooCommunicator;

class GlooTransfers final : public workers::Transfers {
 public:
  GlooTransfers(GlooCommunicator& comm, const workers::Group& group, Collective kind);
  ~GlooTransfers() override;

  Id post_send(int rank, const void* data, size_t bytes) override;
  Id post_recv(int rank, void* data, size_t bytes) override;
  Outcome wait(Id id) override;
  Outcome wait_all() override;

  /** Interrupts every pending wait (called by the communicator's abort, any thread). */
  void abort_waits();

 private:
  using Clock = std::chrono::steady_clock;

  struct Message {
    std::unique_ptr<::gloo::transport::UnboundBuffer> buffer;
    int rank = 0;
    bool is_recv = false;
    bool done = false;
  };

  Id post(int rank, void* data, size_t bytes, bool is_recv);
  // Waits for message `id` until the stall deadline; records failures.
  bool complete(Id id);
  std::string peer_name(int rank) const override;

  GlooCommunicator& comm_;
  Clock::time_point last_progress_;
  std::mutex messages_mutex_;  // the list, against abort_waits()
  std::vector<Message> messages_;
};

}  // namespace plexus::collectives::gloo_plugin

#endif  // PLEXUS_COLLECTIVES_GLOO_TRANSFERS_H
