// all_gather: member p copies member i's send to recv[i * count, (i + 1) * count) for every
// i, starting with its own block and going round so that members read different sources.
#include <cstring>

#include "algorithms.h"
#include "collectives_common/streaming_store.h"

namespace plexus::collectives::local {

void all_gather_phase(GroupRendezvous& /*group*/, size_t position,
                      std::span<const CallDescriptor> calls) {
  const CallDescriptor& mine = calls[position];
  const size_t bytes = mine.count * kElementBytes;
  if (bytes == 0) return;
  const size_t g = calls.size();
  const bool streaming = use_streaming(g * bytes);
  for (size_t step = 0; step < g; ++step) {
    const size_t source = (position + step) % g;
    void* dst = static_cast<std::byte*>(mine.recv) + source * bytes;
    if (streaming) {
      copy_streaming(dst, calls[source].send, bytes);
    } else {
      std::memcpy(dst, calls[source].send, bytes);
    }
  }
  if (streaming) streaming_fence();
}

}  // namespace plexus::collectives::local
