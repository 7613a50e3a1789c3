#include "core/runtime/program.h"

#include <gtest/gtest.h>

#include "tests/runtime/test_graphs.h"

namespace plexus::runtime {
namespace {

using testing::f32;

TEST(Program, SchedulesInCreationOrderAndSharesStorageOfViews) {
  ir::Graph g;
  const ir::TensorId x = g.add_variable("x", ir::DType::Float32, {2, 2}, f32({1, 2, 3, 4}));
  ir::Attributes flat;
  flat.set("shape", std::vector<int64_t>{4});
  const ir::TensorId r = g.add_op("reshape", {x}, flat).front();
  const ir::TensorId n = g.add_op("neg", {r}, {}).front();
  const Program p = compile(g);
  EXPECT_EQ(p.schedule, (std::vector<ir::OpId>{0, 1}));
  EXPECT_EQ(p.tensor_offset[static_cast<size_t>(r)], p.tensor_offset[static_cast<size_t>(x)]);
  EXPECT_NE(p.tensor_offset[static_cast<size_t>(n)], p.tensor_offset[static_cast<size_t>(x)]);
  EXPECT_EQ(p.plan.persistent_bytes, 16u);
}

TEST(Program, AChainOfOpsReusesMemory) {
  // x -> neg -> neg -> ... : each intermediate dies after the next op, so the arena holds
  // about two of them at once, not all ten.
  ir::Graph g;
  const ir::StreamId s = g.add_h2d_stream("x", ir::DType::Float32, {1024});
  ir::TensorId t = g.stream(s).tensor;
  for (int i = 0; i < 10; ++i) t = g.add_op("neg", {t}, {}).front();
  g.add_d2h_stream("y", t);
  const Program p = compile(g);
  EXPECT_EQ(p.plan.peak_live_bytes, 2u * 4096u);
  EXPECT_LE(p.plan.arena_bytes, 3u * 4096u);
}

TEST(Program, DeviceToHostStreamsKeepTheirTensorAliveUntilTheCopy) {
  ir::Graph g;
  const ir::StreamId s = g.add_h2d_stream("x", ir::DType::Float32, {256});
  const ir::TensorId a = g.add_op("neg", {g.stream(s).tensor}, {}).front();
  const ir::TensorId b = g.add_op("neg", {a}, {}).front();
  const ir::TensorId c = g.add_op("neg", {b}, {}).front();
  g.add_op("neg", {c}, {});
  g.add_d2h_stream("a", a);  // copied after op 3: `a` lives through positions 1..4
  const Program p = compile(g);
  for (size_t position = 1; position <= 4; ++position) EXPECT_GE(p.plan.live_bytes[position], 1024u * 2);
  EXPECT_EQ(d2h_position(g.stream(1)), 4u);
}

}  // namespace
}  // namespace plexus::runtime
