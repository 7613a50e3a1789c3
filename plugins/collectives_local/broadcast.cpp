// broadcast: every member copies the root's send into its own recv (the root too, unless
// it broadcasts in place, send == recv).
#include <cstring>

#include "algorithms.h"
#include "collectives_common/streaming_store.h"

namespace plexus::collectives::local {

void broadcast_phase(GroupRendezvous& group, size_t position,
                     std::span<const CallDescriptor> calls) {
  const CallDescriptor& mine = calls[position];
  const size_t root = group.position_of(mine.root);
  const void* source = calls[root].send;
  if (mine.count == 0 || source == mine.recv) return;
  const size_t bytes = mine.count * kElementBytes;
  if (use_streaming(bytes)) {
    copy_streaming(mine.recv, source, bytes);
    streaming_fence();
  } else {
    std::memcpy(mine.recv, source, bytes);
  }
}

}  // namespace plexus::collectives::local
