// The communicator kernels see (core/replication/communicator.cpp): reduction names as
// ops take them in their "op" attribute, and values equal to the plugin ABI's PLX_REDUCE_*.
#include "core/replication/communicator.h"

#include <gtest/gtest.h>

#include <plexus/collectives_plugin.h>

#include <string_view>
#include <utility>

namespace plexus::replication {
namespace {

TEST(ReduceOp, ParsesTheFourNames) {
  const std::pair<std::string_view, ReduceOp> names[] = {
      {"sum", ReduceOp::Sum}, {"mean", ReduceOp::Mean}, {"max", ReduceOp::Max}, {"min", ReduceOp::Min}};
  for (const auto& [name, op] : names) {
    ReduceOp out = ReduceOp::Max == op ? ReduceOp::Sum : ReduceOp::Max;  // anything but the answer
    EXPECT_TRUE(parse_reduce_op(name, out)) << name;
    EXPECT_EQ(out, op) << name;
  }
}

TEST(ReduceOp, RefusesOtherNamesAndLeavesTheOutputAlone) {
  for (std::string_view name : {"", "Sum", "MEAN", "avg", "sum ", "prod"}) {
    ReduceOp out = ReduceOp::Min;
    EXPECT_FALSE(parse_reduce_op(name, out)) << "'" << name << "'";
    EXPECT_EQ(out, ReduceOp::Min) << "'" << name << "'";
  }
}

TEST(ReduceOp, ValuesEqualThePluginAbis) {
  EXPECT_EQ(static_cast<int>(ReduceOp::Sum), PLX_REDUCE_SUM);
  EXPECT_EQ(static_cast<int>(ReduceOp::Mean), PLX_REDUCE_MEAN);
  EXPECT_EQ(static_cast<int>(ReduceOp::Max), PLX_REDUCE_MAX);
  EXPECT_EQ(static_cast<int>(ReduceOp::Min), PLX_REDUCE_MIN);
}

}  // namespace
}  // namespace plexus::replication
