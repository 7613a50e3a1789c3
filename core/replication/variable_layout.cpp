#include "core/replication/variable_layout.h"

namespace plexus::replication {

VariableLayout variable_layout(const ir::TensorInfo& var) {
  const ir::ReplicaGrouping& g = var.grouping.value();
  const int64_t r = g.replication_factor();
  VariableLayout layout;
  layout.host_shape = var.shape;
  for (int64_t replica = 0; replica < r; ++replica) layout.initial_row.push_back(g.group_of(replica));
  if (var.retrieval == ir::RetrievalMode::AllReplicas) {
    layout.host_shape.insert(layout.host_shape.begin(), r);
    for (int64_t replica = 0; replica < r; ++replica) {
      layout.row_source.push_back(replica);
      layout.replica_row.push_back(replica);
    }
  } else {
    if (g.num_groups() > 1) layout.host_shape.insert(layout.host_shape.begin(), g.num_groups());
    for (int64_t group = 0; group < g.num_groups(); ++group) layout.row_source.push_back(g.members(group).front());
    layout.replica_row = layout.initial_row;
  }
  return layout;
}

}  // namespace plexus::replication
