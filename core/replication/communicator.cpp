#include "core/replication/communicator.h"

#include <string_view>

namespace plexus::replication {

bool parse_reduce_op(const std::string_view name, ReduceOp& out) {
  if (name == "sum") {
    out = ReduceOp::Sum;
  } else if (name == "mean") {
    out = ReduceOp::Mean;
  } else if (name == "max") {
    out = ReduceOp::Max;
  } else if (name == "min") {
    out = ReduceOp::Min;
  } else {
    return false;
  }
  return true;
}

}  // namespace plexus::replication
