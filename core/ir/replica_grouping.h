// Replica groupings (seed 001, 13.2; docs/design.md "Semantics"): how the R replicas of a
// replicated program split into groups, for initialising and reading variables and for
// collectives. A grouping is part of a variable's type, like its shape, so it lives in the
// IR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plexus::ir {

/// (group_size g, stride s) over R replicas: replica r is in group (r / (s*g)) * s + r % s,
/// groups numbered by their lowest replica. Valid when g >= 1, s >= 1 and R % (s*g) == 0
/// (the rule PopXL's implementation enforces; the seed's stricter wording would reject
/// documented groupings such as R=8, s=2, g=2). Immutable value; thread-safe.
class ReplicaGrouping {
 public:
  /// Throws ir::Error(InvalidGrouping) with R, g and s in the message when invalid.
  ReplicaGrouping(int64_t replication_factor, int64_t group_size, int64_t stride);
  /// One group of all replicas (the default grouping).
  static ReplicaGrouping all(int64_t replication_factor) { return {replication_factor, replication_factor, 1}; }

  int64_t replication_factor() const { return r_; }
  int64_t group_size() const { return g_; }
  int64_t stride() const { return s_; }
  int64_t num_groups() const { return r_ / g_; }

  /// Group of replica `r` (0 <= r < R, else InvalidArgument).
  int64_t group_of(int64_t replica) const;
  /// Members of group `group`, increasing (0 <= group < num_groups, else InvalidArgument).
  std::vector<int64_t> members(int64_t group) const;
  /// Index of `replica` among its group's members.
  int64_t position_in_group(int64_t replica) const;
  /// The orthogonal grouping: replicas holding the same position in each group. Exists when
  /// s == 1 or s*g == R; throws InvalidGrouping otherwise.
  ReplicaGrouping transpose() const;

  /// "ReplicaGrouping(R=8, group_size=2, stride=4)"
  std::string to_string() const;
  bool operator==(const ReplicaGrouping&) const = default;

 private:
  int64_t r_, g_, s_;
};

}  // namespace plexus::ir
