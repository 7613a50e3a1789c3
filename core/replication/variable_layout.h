// How a variable's host data maps onto replicas (seed 001, 13.2 and 13.4; DESIGN.md
// "Semantics"): initial data is [num_groups] + shape (group dim left out for one group)
// and replica r starts from row group_of(r); reading returns one row per group
// (one_per_group: [num_groups] + shape, squeezed for one group, from each group's lowest
// replica) or one per replica (all_replicas: [R] + shape); writing takes the same shape.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/tensor.h"

namespace plexus::replication {

struct VariableLayout {
  ir::Shape host_shape;               ///< shape read and written by the host
  std::vector<int64_t> row_source;    ///< reading: host row k comes from replica row_source[k]
  std::vector<int64_t> replica_row;   ///< writing: replica r takes host row replica_row[r]
  std::vector<int64_t> initial_row;   ///< creation: replica r starts from data row initial_row[r]
};

/// Layout of variable `var` (its grouping and retrieval mode) over its grouping's replicas.
VariableLayout variable_layout(const ir::TensorInfo& var);

}  // namespace plexus::replication
