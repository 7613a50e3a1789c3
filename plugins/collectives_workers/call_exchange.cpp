#include "collectives_workers/call_exchange.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "collectives_common/agreement.h"
#include "collectives_common/messages.h"

namespace plexus::collectives::workers {
namespace {

// A call on the wire: fixed widths, no pointers. Every worker runs the same build of the
// plugin on the same architecture (one job), so the layout is shared as is.
struct WireCall {
  int32_t kind;
  int32_t dtype;
  int32_t op;
  int32_t buffer_kind;
  int64_t replica;
  int64_t count;
  int64_t root;
};
static_assert(std::is_trivially_copyable_v<WireCall> && sizeof(WireCall) == 40);

WireCall to_wire(const CallDescriptor& call) {
  return {static_cast<int32_t>(call.kind), call.dtype,   call.op,
          call.buffer_kind,                call.replica, static_cast<int64_t>(call.count),
          call.root};
}

CallDescriptor from_wire(const WireCall& wire) {
  CallDescriptor call;
  call.kind = static_cast<Collective>(wire.kind);
  call.dtype = wire.dtype;
  call.op = wire.op;
  call.buffer_kind = wire.buffer_kind;
  call.replica = wire.replica;
  call.count = static_cast<size_t>(wire.count);
  call.root = wire.root;
  return call;
}

constexpr size_t kAlignment = 64;

size_t round_up(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// Bytes one member's send holds for `call`.
size_t send_bytes(const CallDescriptor& call, size_t members) {
  const size_t factor = call.kind == Collective::reduce_scatter ? members : 1;
  return factor * call.count * kElementBytes;
}

using WallClock = std::chrono::system_clock;

// Milliseconds since the epoch on the wall clock, the one clock workers on several hosts share.
int64_t wall_ms(WallClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Where worker w's envelope sits in group.envelopes: slot w of the group's workers. First
// the moment its sender stops waiting for this call (wall-clock ms), then its calls, then
// its members' sends (if any) from `payload` on, one after the other.
struct Envelope {
  std::byte* base = nullptr;
  size_t payload = 0;   // offset of the data behind the calls
  size_t capacity = 0;  // bytes the slot holds
  static constexpr size_t kCallsOffset = sizeof(int64_t);

  void put_deadline(int64_t ms) const { std::memcpy(base, &ms, sizeof(ms)); }
  int64_t deadline() const {
    int64_t ms = 0;
    std::memcpy(&ms, base, sizeof(ms));
    return ms;
  }
  void put(size_t j, const CallDescriptor& call) const {
    const WireCall wire = to_wire(call);
    std::memcpy(base + kCallsOffset + j * sizeof(WireCall), &wire, sizeof(WireCall));
  }
  CallDescriptor get(size_t j) const {
    WireCall wire;
    std::memcpy(&wire, base + kCallsOffset + j * sizeof(WireCall), sizeof(WireCall));
    return from_wire(wire);
  }
  std::byte* data() const { return base + payload; }
};

std::vector<Envelope> lay_out_envelopes(Group& group) {
  std::vector<Envelope> envelopes;
  size_t offset = 0;
  for (const WorkerMembers& worker : group.workers()) {
    const size_t payload = round_up(Envelope::kCallsOffset + worker.count * sizeof(WireCall));
    envelopes.push_back({nullptr, payload, payload + kInlinePayloadBytes});
    offset += envelopes.back().capacity;
  }
  group.envelopes.resize(offset);
  offset = 0;
  for (Envelope& envelope : envelopes) {
    envelope.base = group.envelopes.data() + offset;
    offset += envelope.capacity;
  }
  return envelopes;
}

// Fills this worker's envelope; returns its length in bytes.
size_t pack(const Envelope& envelope, std::span<const CallDescriptor> local, size_t members,
            std::chrono::milliseconds timeout) {
  envelope.put_deadline(wall_ms(WallClock::now() + timeout));
  for (size_t j = 0; j < local.size(); ++j) envelope.put(j, local[j]);
  if (!calls_agree(local) || !travels_inline(local[0], members)) {
    return Envelope::kCallsOffset + local.size() * sizeof(WireCall);
  }
  const size_t bytes = send_bytes(local[0], members);
  for (size_t j = 0; j < local.size(); ++j) {
    if (bytes > 0) std::memcpy(envelope.data() + j * bytes, local[j].send, bytes);
  }
  return envelope.payload + local.size() * bytes;
}

// Every member's call, remote sends pointing into the envelopes when the data came along.
void unpack(const Group& group, std::span<const Envelope> envelopes, std::span<const CallDescriptor> local,
            std::vector<CallDescriptor>* calls) {
  calls->assign(group.members().size(), CallDescriptor{});
  const size_t self = group.self();
  for (size_t w = 0; w < envelopes.size(); ++w) {
    const WorkerMembers& worker = group.workers()[w];
    for (size_t j = 0; j < worker.count; ++j) {
      (*calls)[worker.first + j] = w == self ? local[j] : envelopes[w].get(j);
    }
  }
  if (!calls_agree(*calls) || !travels_inline(local[0], calls->size())) return;
  const size_t bytes = send_bytes(local[0], calls->size());
  for (size_t w = 0; w < envelopes.size(); ++w) {
    const WorkerMembers& worker = group.workers()[w];
    for (size_t j = 0; w != self && j < worker.count; ++j) {
      (*calls)[worker.first + j].send = envelopes[w].data() + j * bytes;
    }
  }
}

// Each worker stops waiting for the others' envelopes at the deadline in its own (or
// later, its timeout counting from the last message that completed). Once any worker's
// deadline has passed, it may have given up, and its data must not be used: without this
// a late worker would find the data of a call that failed elsewhere and succeed alone.
// Every worker completes the exchange when the last envelope comes, and so checks the
// earliest deadline at about the same moment and reaches the same verdict.
Outcome check_deadlines(const Transfers& transfers, const Group& group, std::span<const Envelope> envelopes,
                        Collective kind) {
  size_t earliest = 0;
  for (size_t w = 1; w < envelopes.size(); ++w) {
    if (envelopes[w].deadline() < envelopes[earliest].deadline()) earliest = w;
  }
  const int64_t late = wall_ms(WallClock::now()) - envelopes[earliest].deadline();
  if (late <= 0) return Outcome::ok();
  return Outcome::error(PLX_ERR_TIMEOUT, call_prefix(kind, group.members()) +
                                             ": timed out: the group's calls were all in only " +
                                             std::to_string(late) + " ms after " +
                                             transfers.describe_peers({group.workers()[earliest].rank}) +
                                             " stopped waiting for them");
}

}  // namespace

bool travels_inline(const CallDescriptor& call, size_t members) {
  return is_reduction(call.kind) && members * send_bytes(call, members) <= kInlinePayloadBytes;
}

Outcome exchange_calls(Transfers& transfers, Group& group, std::span<const CallDescriptor> local,
                       std::chrono::milliseconds timeout, std::vector<CallDescriptor>* calls) {
  const std::vector<Envelope> envelopes = lay_out_envelopes(group);
  const size_t self = group.self();
  const size_t length = pack(envelopes[self], local, group.members().size(), timeout);
  for (size_t w = 0; w < envelopes.size(); ++w) {
    if (w == self) continue;
    const int rank = group.workers()[w].rank;
    transfers.post_send(rank, envelopes[self].base, length);
    transfers.post_recv(rank, envelopes[w].base, envelopes[w].capacity);
  }
  if (Outcome done = transfers.wait_all(); !done.is_ok()) return done;
  if (Outcome fresh = check_deadlines(transfers, group, envelopes, local[0].kind); !fresh.is_ok()) return fresh;
  unpack(group, envelopes, local, calls);
  if (calls_agree(*calls)) return Outcome::ok();
  return Outcome::error(PLX_ERR_INVALID_ARGUMENT, describe_disagreement(group.members(), *calls));
}

}  // namespace plexus::collectives::workers
