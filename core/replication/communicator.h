// Collectives as one replica's kernels see them (docs/design.md, "Plugins"). The runtime
// implements this over the collectives plugin chosen for the session; kernels never see
// the plugin ABI.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/ir/dtype.h"

namespace plexus::replication {

/// Reductions of all-reduce and reduce-scatter. Values equal PLX_REDUCE_*.
enum class ReduceOp : int32_t { Sum = 0, Mean = 1, Max = 2, Min = 3 };

/// Parses "sum" | "mean" | "max" | "min"; returns false for anything else.
bool parse_reduce_op(const std::string_view name, ReduceOp& out);

/// One replica's end of a communicator. Element layouts are those of
/// abi/include/plexus/collectives_plugin.h; `group` lists the taking part replicas'
/// global indices, increasing, the caller among them. Every call blocks until the
/// caller's part is done and throws ir::Error (Timeout, Cancelled, InvalidArgument, ...)
/// with the plugin's message on failure. Calls allocate nothing. One thread per object.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int64_t replica() const = 0;
  virtual void all_reduce(std::span<const int64_t> group, const void* send, void* recv, size_t count, ir::DType dtype,
                          ReduceOp op) = 0;
  virtual void all_gather(std::span<const int64_t> group, const void* send, void* recv, size_t count,
                          ir::DType dtype) = 0;
  virtual void reduce_scatter(std::span<const int64_t> group, const void* send, void* recv, size_t count,
                              ir::DType dtype, ReduceOp op) = 0;
  virtual void broadcast(std::span<const int64_t> group, int64_t root, const void* send, void* recv, size_t count,
                         ir::DType dtype) = 0;
  virtual void barrier(std::span<const int64_t> group) = 0;
};

}  // namespace plexus::replication
