// all_reduce as reduce-scatter + all-gather over shared memory, fused so that each member
// moves O(count) bytes whatever the group size, and the data crosses memory about as often
// as in a memcpy of it:
//   member p reduces chunk p (chunking.h) of every member's send, in member order, a block
//   at a time in L1, and stores each finished block into chunk p of EVERY member's recv
//   (the all-gather, pushed by the owner instead of pulled by the readers).
// Member p reads count elements and writes count elements; a pulled all-gather would also
// read every other chunk back from memory. No barrier is needed between the two halves:
// chunk p of any buffer is read and written by member p only. The caller's final barrier
// (collective_call.cpp) keeps every recv alive until all owners have written into it. In
// place works: each element is read from every send before it is written anywhere
// (reduce_kernels.h).
#include <vector>

#include "algorithms.h"
#include "collectives_common/chunking.h"
#include "collectives_common/reduce_kernels.h"
#include "collectives_common/streaming_store.h"

namespace plexus::collectives::local {

void all_reduce_phase(GroupRendezvous& /*group*/, size_t position, std::span<const CallDescriptor> calls) {
  const CallDescriptor& mine = calls[position];
  const Chunk chunk = chunk_of(mine.count, calls.size(), position);
  if (chunk.size == 0) return;
  const bool streaming = use_streaming(mine.count * kElementBytes);
  constexpr size_t kInline = 16;  // groups up to this size need no heap allocation
  void* inline_dsts[kInline];
  std::vector<void*> heap_dsts;
  void** dsts = inline_dsts;
  if (calls.size() > kInline) {
    heap_dsts.resize(calls.size());
    dsts = heap_dsts.data();
  }
  for (size_t m = 0; m < calls.size(); ++m) {
    dsts[m] = static_cast<std::byte*>(calls[m].recv) + chunk.begin * kElementBytes;
  }
  reduce_in_member_order(mine.dtype, mine.op, calls, chunk.begin, chunk.size,
                         std::span<void* const>(dsts, calls.size()), streaming);
  if (streaming) streaming_fence();
}

}  // namespace plexus::collectives::local
