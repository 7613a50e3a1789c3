#include "transfers.h"

#include <gloo/common/error.h>

#include <algorithm>

#include "communicator.h"

namespace plexus::collectives::gloo_plugin {

GlooTransfers::GlooTransfers(GlooCommunicator& comm, const workers::Group& group, Collective kind)
    : Transfers(group, kind), comm_(comm), last_progress_(Clock::now()) {
  comm_.enlist(this);
}

GlooTransfers::~GlooTransfers() { comm_.dismiss(this); }

GlooTransfers::Id GlooTransfers::post(int rank, void* data, size_t bytes, bool is_recv) {
  Message message;
  message.rank = rank;
  message.is_recv = is_recv;
  try {
    message.buffer = comm_.context().createUnboundBuffer(data, bytes);
    const auto slot = static_cast<uint64_t>(group_.tag());
    if (is_recv) {
      message.buffer->recv(rank, slot);
    } else {
      message.buffer->send(rank, slot);
    }
  } catch (const std::exception& e) {
    fail(PLX_ERR_RUNTIME, std::string("posting a message ") + (is_recv ? "from " : "to ") +
                              describe_peers({rank}) + " failed: " + e.what());
    message.buffer.reset();
    message.done = true;
  }
  std::lock_guard lock(messages_mutex_);
  messages_.push_back(std::move(message));
  return messages_.size() - 1;
}

GlooTransfers::Id GlooTransfers::post_send(int rank, const void* data, size_t bytes) {
  // Gloo's buffers are read-write; a send only reads it.
  return post(rank, const_cast<void*>(data), bytes, false);
}

GlooTransfers::Id GlooTransfers::post_recv(int rank, void* data, size_t bytes) { return post(rank, data, bytes, true); }

bool GlooTransfers::complete(Id id) {
  Message& m = messages_[id];
  if (m.done) return true;
  const AbortFlag& abort = comm_.abort_flag();
  const auto remaining = std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                    last_progress_ + comm_.timeout() - Clock::now()));
  const std::string peer = describe_peers({m.rank});
  try {
    if (!abort.is_set() && (m.is_recv ? m.buffer->waitRecv(remaining) : m.buffer->waitSend(remaining))) {
      m.done = true;
      last_progress_ = Clock::now();
      return true;
    }
    fail(PLX_ERR_CANCELLED, "cancelled: " + (abort.is_set() ? abort.reason() : std::string("aborted")));
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("imed out") != std::string::npos) {
      fail(PLX_ERR_TIMEOUT, "timed out after " + std::to_string(comm_.timeout().count()) + " ms waiting for " + peer);
    } else {
      fail(PLX_ERR_RUNTIME, "lost contact with " + peer + ": " + what);
    }
  }
  return false;
}

Outcome GlooTransfers::wait(Id id) {
  if (failure().is_ok()) complete(id);
  return failure();
}

Outcome GlooTransfers::wait_all() {
  for (Id id = 0; id < messages_.size() && failure().is_ok(); ++id) complete(id);
  return failure();
}

// Every buffer, done or not: `done` belongs to the waiting thread, and an abort flag left on
// a finished buffer is never read (nothing waits on it again).
void GlooTransfers::abort_waits() {
  std::lock_guard lock(messages_mutex_);
  for (Message& m : messages_) {
    if (!m.buffer) continue;
    if (m.is_recv) {
      m.buffer->abortWaitRecv();
    } else {
      m.buffer->abortWaitSend();
    }
  }
}

std::string GlooTransfers::peer_name(int rank) const { return comm_.job().describe(rank); }

}  // namespace plexus::collectives::gloo_plugin
