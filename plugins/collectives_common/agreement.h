// The agreement check: every member of a call must ask for the same collective with the
// same count, dtype, op (reductions), root (broadcast) and buffer kind.
#ifndef PLEXUS_COLLECTIVES_COMMON_AGREEMENT_H
#define PLEXUS_COLLECTIVES_COMMON_AGREEMENT_H

#include <cstdint>
#include <span>
#include <string>

#include "collectives_common/call.h"

namespace plexus::collectives {

/** True when the members' calls agree (no allocation: this runs on every call). */
bool calls_agree(std::span<const CallDescriptor> calls);

/**
 * Returns "" when the members' calls (calls[i] made by members[i]) agree, else a message
 * naming the group, the replicas and the values that differ, e.g.
 * "all_reduce on group {0,1}: members disagree: replica 0 passed 100 float32 elements,
 * replica 1 passed 99 float32 elements". Only fields the collective uses are compared:
 * barrier compares the collective only; op is compared for all_reduce and reduce_scatter,
 * root for broadcast.
 */
std::string describe_disagreement(std::span<const int64_t> members,
                                  std::span<const CallDescriptor> calls);

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_AGREEMENT_H
