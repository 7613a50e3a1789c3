// Retrieval modes (seed 001, 13.4) on the groupings of listing 13.1 (R=8): shapes, and
// values read back after the replicas have diverged.
#include "core/replication/variable_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/ir/error.h"
#include "core/ir/graph.h"
#include "core/session/session.h"

namespace plexus::replication {
namespace {

constexpr int64_t kR = 8;
const ir::Shape kBase = {3, 3};

struct Case {
  const char* name;
  int64_t group_size, stride;
  ir::RetrievalMode mode;
  ir::Shape host_shape;
};

std::vector<std::byte> bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Group k starts from value 100 * k in every element; each step adds (replica + 1) to
// every element on each replica, so replicas of one group diverge after a run.
class ListingThirteenOne : public ::testing::TestWithParam<Case> {};

TEST_P(ListingThirteenOne, ShapesAndValuesAfterDivergence) {
  const Case c = GetParam();
  ir::Graph g;
  g.set_replication_factor(kR);
  const ir::ReplicaGrouping grouping(kR, c.group_size, c.stride);
  std::vector<float> init;
  for (int64_t k = 0; k < grouping.num_groups(); ++k) init.insert(init.end(), 9, 100.0f * static_cast<float>(k));
  const ir::TensorId v = g.add_variable("v", ir::DType::Float32, kBase, bytes_of(init), grouping, c.mode);
  const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, kBase);
  g.add_op("scaled_add_", {v, g.stream(xs).tensor}, {});

  session::Session s(g, {});
  EXPECT_EQ(s.variable_shape(v), c.host_shape) << c.name;
  std::vector<float> x(static_cast<size_t>(kR * 9));
  for (int64_t r = 0; r < kR; ++r) std::fill_n(x.begin() + r * 9, 9, static_cast<float>(r + 1));
  const runtime::HostArray in{xs, x.data(), ir::DType::Float32, {kR, 3, 3}};
  s.run(std::span(&in, 1), {});

  std::vector<float> out(static_cast<size_t>(ir::numel(c.host_shape)));
  s.read_variable(v, std::as_writable_bytes(std::span(out)));
  const VariableLayout layout = variable_layout(g.tensor(v));
  for (size_t row = 0; row < layout.row_sources.size(); ++row) {
    ASSERT_EQ(layout.row_sources[row].size(), 1u);  // not sharded: one replica per row
    const int64_t replica = layout.row_sources[row].front();
    const float expected = 100.0f * static_cast<float>(grouping.group_of(replica)) + static_cast<float>(replica + 1);
    for (size_t e = 0; e < 9; ++e) ASSERT_EQ(out[row * 9 + e], expected) << c.name << " row " << row;
  }
  if (c.mode == ir::RetrievalMode::OnePerGroup) {  // each group's lowest replica
    for (int64_t k = 0; k < grouping.num_groups(); ++k) EXPECT_EQ(layout.row_sources[static_cast<size_t>(k)].front(), grouping.members(k).front());
  }

  // Writing takes the same shape; reading returns what was written.
  std::vector<float> written(out.size());
  for (size_t i = 0; i < written.size(); ++i) written[i] = static_cast<float>(i);
  s.write_variable(v, std::as_bytes(std::span(written)));
  s.read_variable(v, std::as_writable_bytes(std::span(out)));
  EXPECT_EQ(out, written);
}

INSTANTIATE_TEST_SUITE_P(
    Groupings, ListingThirteenOne,
    ::testing::Values(
        Case{"default_one_group", 8, 1, ir::RetrievalMode::OnePerGroup, {3, 3}},
        Case{"group_size_1", 1, 1, ir::RetrievalMode::OnePerGroup, {8, 3, 3}},
        Case{"group_size_2", 2, 1, ir::RetrievalMode::OnePerGroup, {4, 3, 3}},
        Case{"orthogonal_stride_4", 2, 4, ir::RetrievalMode::OnePerGroup, {4, 3, 3}},
        Case{"group_size_2_all_replicas", 2, 1, ir::RetrievalMode::AllReplicas, {8, 3, 3}},
        Case{"orthogonal_stride_4_all_replicas", 2, 4, ir::RetrievalMode::AllReplicas, {8, 3, 3}},
        Case{"default_all_replicas", 8, 1, ir::RetrievalMode::AllReplicas, {8, 3, 3}},
        // listing 13.1's last variable: "grouped across orthogonal replicas (0 and 2, 1 and 3)"
        Case{"pairs_stride_2", 2, 2, ir::RetrievalMode::OnePerGroup, {4, 3, 3}},
        Case{"pairs_stride_2_all_replicas", 2, 2, ir::RetrievalMode::AllReplicas, {8, 3, 3}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(VariableLayout, WrongInitialDataSizeNamesTheGroupDim) {
  ir::Graph g;
  g.set_replication_factor(kR);
  try {
    g.add_variable("v", ir::DType::Float32, kBase, bytes_of(std::vector<float>(9)), ir::ReplicaGrouping(kR, 2, 1));
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("expected 144 for float32[4,3,3] ([num_groups] + shape)"));
  }
  EXPECT_EQ(g.num_tensors(), 0u);  // nothing added
}

TEST(VariableLayout, ReplicatedStreamsCarryTheReplicaDim) {
  ir::Graph g;
  g.set_replication_factor(2);
  const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {4});
  session::SessionOptions opts;
  session::Session one(g, opts);
  EXPECT_EQ(one.host_shape(xs), (ir::Shape{2, 4}));
  opts.device_iterations = 3;
  session::Session three(g, opts);
  EXPECT_EQ(three.host_shape(xs), (ir::Shape{3, 2, 4}));
  std::vector<float> x(24);
  const runtime::HostArray wrong{xs, x.data(), ir::DType::Float32, {6, 4}};
  try {
    three.run(std::span(&wrong, 1), {});
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("input stream 'x': host array has shape [6,4], expected [3,2,4]"));
  }
}

}  // namespace
}  // namespace plexus::replication
