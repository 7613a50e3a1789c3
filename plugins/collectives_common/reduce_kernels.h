// Reduction kernels: combine the members' inputs element by element, in member order, so
// that the result is deterministic and identical wherever it is computed.
#ifndef PLEXUS_COLLECTIVES_COMMON_REDUCE_KERNELS_H
#define PLEXUS_COLLECTIVES_COMMON_REDUCE_KERNELS_H

#include <cstddef>
#include <span>

#include "collectives_common/call.h"

namespace plexus::collectives {

/**
 * Writes, for i in [0, size) and every d in `dsts`, d[i] = op over members m = 0, 1, ...,
 * g-1 (in that order) of calls[m].send[offset + i], where g = calls.size() and elements
 * are of `dtype`. Each block is reduced once (in L1) and then stored to every destination,
 * so n elements read from the sources cost n stores per destination and nothing more.
 *
 * float32: the sum is accumulated in float32 from member 0 upward; mean is that sum
 * divided by g. int32: sum wraps modulo 2^32; mean is the exact (int64) sum divided by g,
 * truncated toward zero. max/min keep the earlier member's value on ties.
 *
 * A destination may be one of the sources at the same offset (in place): each block of
 * elements is read from every source before it is written. With `streaming`, the
 * destinations are written with streaming stores (streaming_store.h); the caller fences
 * before publishing them.
 *
 * Preconditions (checked by validation): dtype and op are valid, the sources are non-NULL
 * when size > 0.
 */
void reduce_in_member_order(plx_dtype dtype, plx_reduce_op op,
                            std::span<const CallDescriptor> calls, size_t offset, size_t size,
                            std::span<void* const> dsts, bool streaming) noexcept;

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_REDUCE_KERNELS_H
