// Copies that bypass the caches (non-temporal stores) for large outputs. A normal store
// first reads the destination line into the cache (read-for-ownership), so writing a
// buffer larger than the cache costs twice its size in memory traffic; a streaming store
// costs its size once. Used by the collectives only above kStreamingThresholdBytes, where
// the output cannot stay in the cache until it is read anyway.
#ifndef PLEXUS_COLLECTIVES_COMMON_STREAMING_STORE_H
#define PLEXUS_COLLECTIVES_COMMON_STREAMING_STORE_H

#include <cstddef>

namespace plexus::collectives {

/**
 * Outputs of at least this many bytes per member are written with streaming stores: a
 * quarter of the 32 MiB L3 the development machines' 2 cores share. Smaller results stay
 * in the cache for the caller, who usually reads them next (bench/README.md,
 * "allreduce_bench").
 */
inline constexpr size_t kStreamingThresholdBytes = size_t{8} << 20;

/** True when an output of `bytes` (per member) is written with streaming stores. */
bool use_streaming(size_t bytes);

/** memcpy(dst, src, bytes) with streaming stores where the CPU has them (else memcpy). */
void copy_streaming(void* dst, const void* src, size_t bytes) noexcept;

/**
 * Makes this thread's streaming stores visible before its later stores (x86 sfence): call
 * before publishing the data to another thread (the barrier's release does not order
 * them).
 */
void streaming_fence() noexcept;

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_STREAMING_STORE_H
