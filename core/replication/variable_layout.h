// How a variable's host data maps onto replicas (seed 001, 13.2 and 13.4; seed 000 17.2;
// docs/design.md "Semantics"): initial data is [num_groups] + full shape (group dim left out for
// one group) and replica r starts from row group_of(r); reading returns one row per group
// (one_per_group: [num_groups] + shape, squeezed for one group, from each group's lowest
// replica) or one per replica (all_replicas: [R] + shape); writing takes the same shape.
// A replica-sharded variable keeps one shard per replica; its host rows are full,
// unpadded tensors, each assembled from the shards of one shard domain. Writing it with
// all_replicas stores, on replica r, r's shard of row r: rows of one shard domain should
// agree, or reading returns a mix of them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/tensor.h"

namespace plexus::replication {

struct VariableLayout {
  ir::Shape host_shape;  ///< shape read and written by the host
  /// Reading: host row k is assembled from these replicas, which hold shards 0, 1, ... of it
  /// (one replica when the variable is not sharded).
  std::vector<std::vector<int64_t>> row_sources;
  std::vector<int64_t> replica_row;   ///< writing: replica r takes host row replica_row[r]
  std::vector<int64_t> initial_row;   ///< creation: replica r starts from data row initial_row[r]
  std::vector<int64_t> shard_index;   ///< replica r holds this shard of its row (0 when unsharded)
  int64_t shard_over = 1;             ///< shards per row (1 when unsharded)
  ir::Shape row_shape;                ///< the full shape of one row
};

/// Layout of variable `var` (grouping, retrieval mode, sharding) over its replicas.
VariableLayout variable_layout(const ir::TensorInfo& var);

}  // namespace plexus::replication
