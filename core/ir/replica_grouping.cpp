#include "core/ir/replica_grouping.h"

#include "core/ir/error.h"

namespace plexus::ir {

namespace {

std::string describe(int64_t r, int64_t g, int64_t s) {
  return "replication factor " + std::to_string(r) + ", group_size " + std::to_string(g) + ", stride " +
         std::to_string(s);
}

}  // namespace

ReplicaGrouping::ReplicaGrouping(int64_t replication_factor, int64_t group_size, int64_t stride)
    : r_(replication_factor), g_(group_size), s_(stride) {
  if (r_ < 1) fail(ErrorCode::InvalidGrouping, "invalid replica grouping: " + describe(r_, g_, s_) + ": the replication factor must be >= 1");
  if (g_ < 1 || s_ < 1) {
    fail(ErrorCode::InvalidGrouping, "invalid replica grouping: " + describe(r_, g_, s_) +
                                         ": group_size and stride must be >= 1");
  }
  if (g_ > r_ || s_ > r_ || r_ % (s_ * g_) != 0) {
    fail(ErrorCode::InvalidGrouping, "invalid replica grouping: " + describe(r_, g_, s_) +
                                         ": stride * group_size must divide the replication factor");
  }
}

int64_t ReplicaGrouping::group_of(int64_t replica) const {
  if (replica < 0 || replica >= r_) {
    fail(ErrorCode::InvalidArgument, "replica " + std::to_string(replica) + " is outside [0, " + std::to_string(r_) + ")");
  }
  return (replica / (s_ * g_)) * s_ + replica % s_;
}

std::vector<int64_t> ReplicaGrouping::members(int64_t group) const {
  if (group < 0 || group >= num_groups()) {
    fail(ErrorCode::InvalidArgument, "group " + std::to_string(group) + " is outside [0, " +
                                         std::to_string(num_groups()) + ") for " + to_string());
  }
  const int64_t first = (group / s_) * s_ * g_ + group % s_;
  std::vector<int64_t> out;
  for (int64_t j = 0; j < g_; ++j) out.push_back(first + j * s_);
  return out;
}

int64_t ReplicaGrouping::position_in_group(int64_t replica) const {
  group_of(replica);  // range check
  return (replica % (s_ * g_)) / s_;
}

ReplicaGrouping ReplicaGrouping::transpose() const {
  if (s_ == 1) return ReplicaGrouping(r_, r_ / g_, g_);
  if (s_ * g_ == r_) return ReplicaGrouping(r_, s_, 1);
  fail(ErrorCode::InvalidGrouping, "the transpose of " + to_string() +
                                       " does not exist: it needs stride 1 or stride * group_size == replication factor");
}

std::string ReplicaGrouping::to_string() const {
  return "ReplicaGrouping(R=" + std::to_string(r_) + ", group_size=" + std::to_string(g_) +
         ", stride=" + std::to_string(s_) + ")";
}

}  // namespace plexus::ir
