// all_reduce / reduce_scatter whose data came with the exchange of calls (see algorithms.h).
#include <vector>

#include "collectives_common/reduce_kernels.h"
#include "collectives_workers/algorithms.h"

namespace plexus::collectives::workers {

void reduce_exchanged(const Group& group, std::span<const CallDescriptor> calls,
                      std::span<const CallDescriptor> local) {
  const CallDescriptor& call = local[0];
  if (call.kind == Collective::all_reduce) {
    std::vector<void*> recvs;
    for (const CallDescriptor& member : local) recvs.push_back(member.recv);
    reduce_in_member_order(call.dtype, call.op, calls, 0, call.count, recvs, /*streaming=*/false);
    return;
  }
  // reduce_scatter: member p receives block p of the reduced sends.
  for (size_t j = 0; j < local.size(); ++j) {
    void* const recv[] = {local[j].recv};
    reduce_in_member_order(call.dtype, call.op, calls, (group.mine().first + j) * call.count, call.count,
                           recv, /*streaming=*/false);
  }
}

}  // namespace plexus::collectives::workers
