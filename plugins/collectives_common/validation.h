// Argument checks done by the caller alone, before any rendezvous: a call that fails here
// returns at once with PLX_ERR_INVALID_ARGUMENT and never meets the other members (they
// time out, or are woken by the abort the runtime issues when a replica fails).
#ifndef PLEXUS_COLLECTIVES_COMMON_VALIDATION_H
#define PLEXUS_COLLECTIVES_COMMON_VALIDATION_H

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "collectives_common/call.h"
#include "collectives_common/outcome.h"
#include "plexus/collectives_plugin.h"

namespace plexus::collectives {

/** The replicas a communicator serves: R global ones, [first, first + count) hosted here. */
struct HostedReplicas {
  int64_t replication_factor = 1;
  int64_t first = 0;
  int64_t count = 1;
};

/** struct_size of each version of plx_comm_config (collectives_plugin.h): 1 ends at
 *  timeout_ms, 1.1 at cluster_source (the cluster definition). */
inline constexpr size_t kCommConfigSizeV1 = offsetof(plx_comm_config, worker_addresses);
inline constexpr size_t kCommConfigSizeV1_1 = offsetof(plx_comm_config, cluster_source) + sizeof(const char*);

/**
 * Checks a communicator configuration (and out_comm) as every plugin must: NULL pointers,
 * struct_size (version 1's or later, never ending inside a field), R >= 1, local range
 * inside [0, R), timeout > 0, and the cluster definition when struct_size covers it (W >= 0
 * addresses, none NULL, worker_index in [0, W), the source named). A plugin adds its own
 * limits (which jobs it serves) after this, with PLX_ERR_UNSUPPORTED.
 */
Outcome validate_config(const plx_comm_config* config, plx_comm** out_comm);

/** True when `config` (valid) reaches the cluster definition's fields (plugin ABI 1.1):
 *  the caller said whether there is one. */
inline bool carries_cluster(const plx_comm_config& config) { return config.struct_size >= kCommConfigSizeV1_1; }

/** The replicas `config` (valid) describes. */
HostedReplicas hosted_replicas(const plx_comm_config& config);

/** config.timeout_ms, capped at ten years so that deadlines never overflow steady_clock. */
std::chrono::milliseconds timeout_of(const plx_comm_config& config);

/**
 * Checks one call's arguments (args non-NULL with a large enough struct_size, checked by
 * the caller): the group (non-empty, strictly increasing, inside [0, R)), the calling
 * replica (hosted here and a member), and for data-moving collectives dtype, op, buffer
 * kind, root, sizes, NULL buffers and overlapping buffers.
 */
Outcome validate_call(const plx_coll_args& args, Collective kind, const HostedReplicas& hosted);

}  // namespace plexus::collectives

#endif  // PLEXUS_COLLECTIVES_COMMON_VALIDATION_H
