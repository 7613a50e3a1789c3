// Human-readable pieces of error messages, and writing a message into a caller's buffer.
#ifndef PLEXUS_COLLECTIVES_COMMON_MESSAGES_H
#define PLEXUS_COLLECTIVES_COMMON_MESSAGES_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "collectives_common/call.h"

namespace plexus::collectives {

/** "all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier". */
const char* collective_name(Collective kind);

/** "float32", "int32", or "dtype <n>" for anything else. */
std::string dtype_name(plx_dtype dtype);

/** "sum", "mean", "max", "min", or "op <n>". */
std::string op_name(plx_reduce_op op);

/** "device buffers", "host buffers", or "buffer kind <n>". */
std::string buffer_kind_name(plx_buffer_kind kind);

/** "{0,4,8}"; long lists are shortened to their first 32 entries and a count. */
std::string format_members(std::span<const int64_t> members);

/** "replica 3" or "replicas 1,5". */
std::string format_replicas(std::span<const int64_t> replicas);

/** "<kind> on group {..}", the prefix of every message about a call. */
std::string call_prefix(Collective kind, std::span<const int64_t> members);

/**
 * Copies `text` into `out` (capacity bytes, NUL included), truncated if needed without
 * splitting a UTF-8 sequence. Does nothing when out is NULL or capacity is 0.
 */
void write_message(char* out, size_t capacity, std::string_view text) noexcept;

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_MESSAGES_H
