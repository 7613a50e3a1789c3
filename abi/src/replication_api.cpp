// C API: replication factor and replica groupings.
#include <algorithm>

#include "abi/src/handles.h"

using namespace plexus;
using abi::guarded;
using abi::require;

namespace {

ir::ReplicaGrouping from_c(const plx_replica_grouping* g, const char* fn) {
  require(g, fn, "grouping");
  return ir::ReplicaGrouping(g->replication_factor, g->group_size, g->stride);
}

plx_replica_grouping to_c(const ir::ReplicaGrouping& g) {
  return plx_replica_grouping{g.replication_factor(), g.group_size(), g.stride()};
}

}  // namespace

namespace plexus::abi {

ir::ReplicaGrouping make_grouping(int64_t replication_factor, int64_t group_size, int64_t stride) {
  if (group_size == 0 && stride >= 1) group_size = replication_factor / stride;
  return ir::ReplicaGrouping(replication_factor, group_size, stride);
}

}  // namespace plexus::abi

extern "C" {

PLX_API plx_status plx_ir_set_replication_factor(plx_ir* ir, int64_t replication_factor) {
  return guarded([&] {
    require(ir, "plx_ir_set_replication_factor", "ir");
    ir->graph.set_replication_factor(replication_factor);
  });
}

PLX_API plx_status plx_ir_get_replication_factor(const plx_ir* ir, int64_t* out_replication_factor) {
  return guarded([&] {
    require(ir, "plx_ir_get_replication_factor", "ir");
    require(out_replication_factor, "plx_ir_get_replication_factor", "out_replication_factor");
    *out_replication_factor = ir->graph.replication_factor();
  });
}

PLX_API plx_status plx_replica_grouping_create(int64_t replication_factor, int64_t group_size, int64_t stride,
                                               plx_replica_grouping* out_grouping) {
  return guarded([&] {
    require(out_grouping, "plx_replica_grouping_create", "out_grouping");
    *out_grouping = to_c(abi::make_grouping(replication_factor, group_size, stride));
  });
}

PLX_API plx_status plx_replica_grouping_get_num_groups(const plx_replica_grouping* grouping, int64_t* out_num_groups) {
  return guarded([&] {
    const ir::ReplicaGrouping g = from_c(grouping, "plx_replica_grouping_get_num_groups");
    require(out_num_groups, "plx_replica_grouping_get_num_groups", "out_num_groups");
    *out_num_groups = g.num_groups();
  });
}

PLX_API plx_status plx_replica_grouping_get_members(const plx_replica_grouping* grouping, int64_t group,
                                                    int64_t* members, size_t capacity, size_t* out_count) {
  return guarded([&] {
    const ir::ReplicaGrouping g = from_c(grouping, "plx_replica_grouping_get_members");
    const std::vector<int64_t> m = g.members(group);
    if (out_count) *out_count = m.size();
    if (members == nullptr) return;  // the caller only asks for the count
    if (capacity < m.size()) {
      ir::fail(ir::ErrorCode::BufferTooSmall, "group " + std::to_string(group) + " has " + std::to_string(m.size()) +
                                                  " members but the buffer holds " + std::to_string(capacity));
    }
    std::copy(m.begin(), m.end(), members);
  });
}

PLX_API plx_status plx_replica_grouping_get_group(const plx_replica_grouping* grouping, int64_t replica,
                                                  int64_t* out_group) {
  return guarded([&] {
    const ir::ReplicaGrouping g = from_c(grouping, "plx_replica_grouping_get_group");
    require(out_group, "plx_replica_grouping_get_group", "out_group");
    *out_group = g.group_of(replica);
  });
}

PLX_API plx_status plx_replica_grouping_transpose(const plx_replica_grouping* grouping,
                                                  plx_replica_grouping* out_transpose) {
  return guarded([&] {
    const ir::ReplicaGrouping g = from_c(grouping, "plx_replica_grouping_transpose");
    require(out_transpose, "plx_replica_grouping_transpose", "out_transpose");
    *out_transpose = to_c(g.transpose());
  });
}

}  // extern "C"
