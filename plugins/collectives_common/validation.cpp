#include "collectives_common/validation.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "collectives_common/messages.h"

namespace plexus::collectives {
namespace {

Outcome invalid(std::string message) {
  return Outcome::error(PLX_ERR_INVALID_ARGUMENT, std::move(message));
}

std::string hosted_range(const HostedReplicas& hosted) {
  return "[" + std::to_string(hosted.first) + ", " + std::to_string(hosted.first + hosted.count) +
         ")";
}

Outcome check_group(const plx_coll_args& args, Collective kind, const HostedReplicas& hosted) {
  const std::string name = collective_name(kind);  // the group is not yet known to be valid
  if (args.group.size == 0) return invalid(name + ": the group is empty (group.size is 0)");
  if (args.group.members == nullptr) return invalid(name + ": group.members is NULL");
  const std::span<const int64_t> members(args.group.members, args.group.size);
  const int64_t r = hosted.replication_factor;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= r) {
      return invalid(name + ": group " + format_members(members) + " has member " +
                     std::to_string(members[i]) + " outside [0, " + std::to_string(r) + ")");
    }
    if (i > 0 && members[i] <= members[i - 1]) {
      return invalid(name + ": group " + format_members(members) +
                     " is not strictly increasing (members must be sorted and distinct)");
    }
  }
  return Outcome::ok();
}

std::span<const int64_t> members_of(const plx_coll_args& args) {
  return {args.group.members, args.group.size};
}

// "<kind> on group {..}: <what>", built only when a check fails.
Outcome invalid_call(const plx_coll_args& args, Collective kind, const std::string& what) {
  return invalid(call_prefix(kind, members_of(args)) + ": " + what);
}

bool is_member(const plx_coll_args& args, int64_t replica) {
  for (int64_t m : members_of(args)) {
    if (m == replica) return true;
  }
  return false;
}

Outcome check_caller(const plx_coll_args& args, Collective kind, const HostedReplicas& hosted) {
  if (args.replica < hosted.first || args.replica >= hosted.first + hosted.count) {
    return invalid_call(args, kind,
                        "replica " + std::to_string(args.replica) +
                            " is not hosted by this communicator (it hosts replicas " +
                            hosted_range(hosted) + ")");
  }
  if (!is_member(args, args.replica)) {
    return invalid_call(
        args, kind,
        "the calling replica " + std::to_string(args.replica) + " is not a member of the group");
  }
  return Outcome::ok();
}

Outcome check_enums(const plx_coll_args& args, Collective kind) {
  if (args.dtype != PLX_DTYPE_FLOAT32 && args.dtype != PLX_DTYPE_INT32) {
    return invalid_call(args, kind,
                        "unsupported " + dtype_name(args.dtype) +
                            " (expected PLX_DTYPE_FLOAT32 or PLX_DTYPE_INT32)");
  }
  if (is_reduction(kind) && (args.op < PLX_REDUCE_SUM || args.op > PLX_REDUCE_MIN)) {
    return invalid_call(
        args, kind,
        "unknown reduce " + op_name(args.op) + " (expected PLX_REDUCE_SUM, _MEAN, _MAX or _MIN)");
  }
  if (args.buffer_kind != PLX_BUFFER_DEVICE && args.buffer_kind != PLX_BUFFER_HOST) {
    return invalid_call(args, kind,
                        "unknown " + buffer_kind_name(args.buffer_kind) +
                            " (expected PLX_BUFFER_DEVICE or PLX_BUFFER_HOST)");
  }
  return Outcome::ok();
}

Outcome check_root(const plx_coll_args& args, Collective kind) {
  if (kind != Collective::broadcast || is_member(args, args.root)) return Outcome::ok();
  return invalid_call(args, kind,
                      "root " + std::to_string(args.root) + " is not a member of the group");
}

// Elements in send and recv for this collective, per the header's "Element layout".
struct BufferSizes {
  size_t send_factor = 1;  // send holds send_factor * count elements
  size_t recv_factor = 1;
};

BufferSizes sizes_of(Collective kind, size_t group_size) {
  if (kind == Collective::all_gather) return {1, group_size};
  if (kind == Collective::reduce_scatter) return {group_size, 1};
  return {1, 1};
}

bool send_is_read(const plx_coll_args& args, Collective kind) {
  return kind != Collective::broadcast || args.replica == args.root;
}

bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto a0 = reinterpret_cast<uintptr_t>(a);
  const auto b0 = reinterpret_cast<uintptr_t>(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

Outcome check_buffers(const plx_coll_args& args, Collective kind) {
  const BufferSizes sizes = sizes_of(kind, args.group.size);
  const size_t factor = std::max(sizes.send_factor, sizes.recv_factor);
  if (args.count > static_cast<size_t>(PTRDIFF_MAX) / kElementBytes / factor) {
    return invalid_call(args, kind, "count " + std::to_string(args.count) + " is too large");
  }
  if (args.count == 0) return Outcome::ok();
  const auto null_buffer = [&](const char* which) {
    return invalid_call(args, kind,
                        std::string(which) + " is NULL but count is " + std::to_string(args.count) +
                            " (replica " + std::to_string(args.replica) + ")");
  };
  if (send_is_read(args, kind) && args.send == nullptr) return null_buffer("send");
  if (args.recv == nullptr) return null_buffer("recv");
  const size_t send_bytes = args.count * sizes.send_factor * kElementBytes;
  const size_t recv_bytes = args.count * sizes.recv_factor * kElementBytes;
  const bool separate_buffers =
      kind == Collective::all_gather || kind == Collective::reduce_scatter;
  if (separate_buffers && overlap(args.send, send_bytes, args.recv, recv_bytes)) {
    return invalid_call(
        args, kind,
        std::string("send and recv overlap; ") + collective_name(kind) + " cannot run in place");
  }
  return Outcome::ok();
}

// Version 1's size or more, and never ending inside the cluster definition's fields.
Outcome check_config_size(size_t size) {
  if (size < kCommConfigSizeV1) {
    return invalid("comm_create: config->struct_size is " + std::to_string(size) + ", expected at least " +
                   std::to_string(kCommConfigSizeV1) + " (plugin ABI 1)");
  }
  if (size > kCommConfigSizeV1 && size < kCommConfigSizeV1_1) {
    return invalid("comm_create: config->struct_size is " + std::to_string(size) +
                   ", which ends inside the cluster definition's fields (plugin ABI 1 is " +
                   std::to_string(kCommConfigSizeV1) + " bytes, 1.1 is " + std::to_string(kCommConfigSizeV1_1) + ")");
  }
  return Outcome::ok();
}

// The cluster definition's fields (plugin ABI 1.1): W >= 0 addresses, none NULL, this
// worker among them, and the variable they came from.
Outcome check_cluster(const plx_comm_config& config) {
  const int64_t w = config.num_worker_addresses;
  if (w < 0) return invalid("comm_create: num_worker_addresses is " + std::to_string(w) + ", must be >= 0");
  if (w > 0 && config.worker_addresses == nullptr) {
    return invalid("comm_create: worker_addresses is NULL but num_worker_addresses is " + std::to_string(w));
  }
  for (int64_t i = 0; i < w; ++i) {
    if (config.worker_addresses[i] == nullptr) {
      return invalid("comm_create: worker_addresses[" + std::to_string(i) + "] is NULL");
    }
  }
  if (config.worker_index < 0 || config.worker_index >= std::max<int64_t>(w, 1)) {
    return invalid("comm_create: worker_index is " + std::to_string(config.worker_index) + ", not a worker in [0, " +
                   std::to_string(w) + ")" + (w == 0 ? " (num_worker_addresses is 0: no cluster definition)" : ""));
  }
  if (w > 0 && config.cluster_source == nullptr) {
    return invalid("comm_create: cluster_source is NULL; it names the variable of the cluster definition");
  }
  return Outcome::ok();
}

}  // namespace

Outcome validate_config(const plx_comm_config* config, plx_comm** out_comm) {
  if (config == nullptr) return invalid("comm_create: config is NULL");
  if (out_comm == nullptr) return invalid("comm_create: out_comm is NULL");
  if (Outcome size = check_config_size(config->struct_size); !size.is_ok()) return size;
  const int64_t r = config->replication_factor;
  const int64_t first = config->first_local_replica;
  const int64_t local = config->local_replicas;
  if (r < 1)
    return invalid("comm_create: replication_factor is " + std::to_string(r) + ", must be >= 1");
  if (local < 1) {
    return invalid("comm_create: local_replicas is " + std::to_string(local) + ", must be >= 1");
  }
  if (first < 0 || first > r - local) {
    return invalid("comm_create: first_local_replica " + std::to_string(first) +
                   " and local_replicas " + std::to_string(local) +
                   " do not fit inside the replicas [0, " + std::to_string(r) + ")");
  }
  if (config->timeout_ms <= 0) {
    return invalid("comm_create: timeout_ms is " + std::to_string(config->timeout_ms) +
                   ", must be > 0");
  }
  return carries_cluster(*config) ? check_cluster(*config) : Outcome::ok();
}

HostedReplicas hosted_replicas(const plx_comm_config& config) {
  return {config.replication_factor, config.first_local_replica, config.local_replicas};
}

std::chrono::milliseconds timeout_of(const plx_comm_config& config) {
  constexpr int64_t kMaxTimeoutMs = int64_t{10} * 365 * 24 * 3600 * 1000;
  return std::chrono::milliseconds(std::min(config.timeout_ms, kMaxTimeoutMs));
}

Outcome validate_call(const plx_coll_args& args, Collective kind, const HostedReplicas& hosted) {
  if (Outcome group = check_group(args, kind, hosted); !group.is_ok()) return group;
  if (Outcome caller = check_caller(args, kind, hosted); !caller.is_ok()) return caller;
  if (!moves_data(kind)) return Outcome::ok();
  if (Outcome enums = check_enums(args, kind); !enums.is_ok()) return enums;
  if (Outcome root = check_root(args, kind); !root.is_ok()) return root;
  return check_buffers(args, kind);
}

}  // namespace plexus::collectives
