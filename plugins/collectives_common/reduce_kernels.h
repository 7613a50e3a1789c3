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
 * A destination may be one of the sources at the same offset (in place): every source
 * element is read before the destination element at its index is written (the members
 * before the last are folded into an L1 accumulator block first; the last member's
 * element is read as the finished value is stored). With `streaming`, the
 * destinations are written with streaming stores (streaming_store.h); the caller fences
 * before publishing them.
 *
 * Preconditions (checked by validation): dtype and op are valid, the sources are non-NULL
 * when size > 0.
 */
void reduce_in_member_order(plx_dtype dtype, plx_reduce_op op,
                            std::span<const CallDescriptor> calls, size_t offset, size_t size,
                            std::span<void* const> dsts, bool streaming) noexcept;

/**
 * The same reduction split across processes (the MPI plugin's chain, collectives_mpi):
 * a partial is the accumulator of the members folded so far, partial_element_bytes() per
 * element (float32 for float32; uint32 for int32 sum, int32 for max/min, int64 for int32
 * mean). Folding the members in order, process after process, then finishing gives bit
 * for bit what reduce_in_member_order() gives over all of them.
 */
size_t partial_element_bytes(plx_dtype dtype, plx_reduce_op op);

/**
 * partial_out[i] = partial_in[i] (or calls[0].send[offset + i] when partial_in is NULL)
 * combined with calls[m].send[offset + i] for the following members m in order. partial_in
 * may equal partial_out. Same preconditions as reduce_in_member_order().
 */
void fold_partial(plx_dtype dtype, plx_reduce_op op, const void* partial_in,
                  std::span<const CallDescriptor> calls, size_t offset, size_t size,
                  void* partial_out) noexcept;

/** out[i] (dtype) = the finished partial[i] for a group of g members (mean divides by g). */
void finish_partial(plx_dtype dtype, plx_reduce_op op, size_t g, const void* partial,
                    size_t size, void* out) noexcept;

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_REDUCE_KERNELS_H
