#include "core/replication/variable_layout.h"

namespace plexus::replication {

VariableLayout variable_layout(const ir::TensorInfo& var) {
  const ir::ReplicaGrouping& g = var.grouping.value();
  const int64_t r = g.replication_factor();
  VariableLayout layout;
  layout.row_shape = var.sharding ? var.sharding->full_shape : var.shape;
  layout.host_shape = layout.row_shape;
  const std::optional<ir::ReplicaGrouping> domain =
      var.sharding ? std::optional<ir::ReplicaGrouping>(var.sharding->domain(r)) : std::nullopt;
  layout.shard_over = var.sharding ? var.sharding->shard_over : 1;
  // The replicas whose shards make up the value replica `replica` sees.
  auto sources = [&](int64_t replica) {
    return domain ? domain->members(domain->group_of(replica)) : std::vector<int64_t>{replica};
  };
  for (int64_t replica = 0; replica < r; ++replica) {
    layout.initial_row.push_back(g.group_of(replica));
    layout.shard_index.push_back(domain ? domain->position_in_group(replica) : 0);
  }
  if (var.retrieval == ir::RetrievalMode::AllReplicas) {
    layout.host_shape.insert(layout.host_shape.begin(), r);
    for (int64_t replica = 0; replica < r; ++replica) {
      layout.row_sources.push_back(sources(replica));
      layout.replica_row.push_back(replica);
    }
  } else {
    if (g.num_groups() > 1) layout.host_shape.insert(layout.host_shape.begin(), g.num_groups());
    for (int64_t group = 0; group < g.num_groups(); ++group) layout.row_sources.push_back(sources(g.members(group).front()));
    layout.replica_row = layout.initial_row;
  }
  return layout;
}

}  // namespace plexus::replication
