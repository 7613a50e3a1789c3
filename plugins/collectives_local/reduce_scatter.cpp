// reduce_scatter: member p reduces block p (elements [p * count, (p + 1) * count)) of every
// member's send, in member order, into its recv. The members work in parallel, each
// reading g * count elements and writing count.
#include "algorithms.h"
#include "collectives_common/reduce_kernels.h"
#include "collectives_common/streaming_store.h"

namespace plexus::collectives::local {

void reduce_scatter_phase(GroupRendezvous& /*group*/, size_t position,
                          std::span<const CallDescriptor> calls) {
  const CallDescriptor& mine = calls[position];
  const bool streaming = use_streaming(mine.count * kElementBytes);
  void* const dst[] = {mine.recv};
  reduce_in_member_order(mine.dtype, mine.op, calls, position * mine.count, mine.count, dst, streaming);
  if (streaming) streaming_fence();
}

}  // namespace plexus::collectives::local
