// The memory plan pass (core/compile/memory_planner.h): views and variables, buffers reused
// along a chain, an op taking a dying input's buffer, op scratch per device.
#include "core/compile/memory_planner.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "core/compile/passes.h"
#include "core/ir/autodiff.h"
#include "core/ir/error.h"
#include "core/ops/kernel_def.h"
#include "tests/runtime/compiled_graph.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using testing::f32;

using testing::compile_one_stage;

TEST(MemoryPlanner, ViewsShareStorageAndVariablesArePersistent) {
  ir::Graph g;
  const ir::TensorId x = g.add_variable("x", ir::DType::Float32, {2, 2}, f32({1, 2, 3, 4}));
  ir::Attributes flat;
  flat.set("shape", std::vector<int64_t>{4});
  const ir::TensorId r = g.add_op("reshape", {x}, flat).front();
  const ir::TensorId n = g.add_op("neg", {r}, {}).front();
  const Program p = compile_one_stage(g);
  ASSERT_EQ(p.stages.size(), 1u);
  EXPECT_EQ(p.stages[0].actions[0].size(), 2u) << "the reshape and the neg";
  EXPECT_EQ(p.root_of[static_cast<size_t>(r)], x);
  EXPECT_EQ(p.devices[0].persistent_offset.count(x), 1u);
  EXPECT_EQ(p.stages[0].slot_offset.count(n), 1u);
  EXPECT_EQ(p.devices[0].persistent_bytes, 16u);
}

TEST(MemoryPlanner, AChainOfOpsReusesMemory) {
  // x -> neg -> neg -> ... : each intermediate dies after the next op, so the slot region
  // holds about two of them at once, not all ten.
  ir::Graph g;
  const ir::StreamId s = g.add_h2d_stream("x", ir::DType::Float32, {1024});
  ir::TensorId t = g.stream(s).tensor;
  for (int i = 0; i < 10; ++i) t = g.add_op("neg", {t}, {}).front();
  g.add_d2h_stream("y", t);
  const Program p = compile_one_stage(g);
  EXPECT_EQ(p.stages[0].slot_plan.peak_live_bytes, 2u * 4096u);
  EXPECT_LE(p.stages[0].slot_plan.arena_bytes, 3u * 4096u);
}

/// x (h2d "x" [1,1,8,8]) -> neg -> t; dx = max_pool2d_grad(t, dy of h2d "dy") with `kernel`
/// and `stride`: an op whose kernel may overwrite its input t (ops::KernelDef::may_inplace)
/// when the windows tile the plane.
struct PoolGradGraph {
  ir::Graph g;
  ir::TensorId t, dx;
  explicit PoolGradGraph(int64_t kernel = 2, int64_t stride = 2) {
    t = g.add_op("neg", {g.stream(g.add_h2d_stream("x", ir::DType::Float32, {1, 1, 8, 8})).tensor}, {}).front();
    const int64_t out = (8 - kernel) / stride + 1;
    const ir::TensorId dy = g.stream(g.add_h2d_stream("dy", ir::DType::Float32, {1, 1, out, out})).tensor;
    ir::Attributes a;
    a.set("kernel", std::vector<int64_t>{kernel});
    a.set("stride", std::vector<int64_t>{stride});
    dx = g.add_op("max_pool2d_grad", {t, dy}, a).front();
  }
  size_t offset(const Program& p, ir::TensorId id) const { return p.stages[0].slot_offset.at(id); }
};

TEST(MemoryPlanner, AnOpThatMayOverwriteItsInputTakesItsBufferWhereItReadsItLast) {
  PoolGradGraph m;
  m.g.add_d2h_stream("dx", m.dx);
  const Program p = compile_one_stage(m.g);
  EXPECT_EQ(m.offset(p, m.dx), m.offset(p, m.t));
  EXPECT_EQ(p.stages[0].slot_plan.peak_live_bytes, 256u + 256u + 64u) << "x and t, or t (then dx) and dy";
}

TEST(MemoryPlanner, AnInputReadLaterOrWindowsThatOverlapKeepTheirOwnBuffer) {
  {
    PoolGradGraph m;  // t is read after the gradient
    m.g.add_d2h_stream("t", m.g.add_op("neg", {m.t}, {}).front());
    const Program p = compile_one_stage(m.g);
    EXPECT_NE(m.offset(p, m.dx), m.offset(p, m.t));
  }
  {
    PoolGradGraph m;  // the host reads t after the gradient
    m.g.add_d2h_stream("dx", m.dx);
    m.g.add_d2h_stream("t", m.t);
    const Program p = compile_one_stage(m.g);
    EXPECT_NE(m.offset(p, m.dx), m.offset(p, m.t));
  }
  {
    PoolGradGraph m(3, 2);  // overlapping windows: the kernel zeroes dx before it reads x
    m.g.add_d2h_stream("dx", m.dx);
    const Program p = compile_one_stage(m.g);
    EXPECT_NE(m.offset(p, m.dx), m.offset(p, m.t));
  }
}

TEST(MemoryPlanner, OpScratchIsOneAreaPerDeviceNotPerSlot) {
  ir::Graph g;
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {2, 1, 8, 8})).tensor;
  const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {3, 1, 3, 3}, std::vector<std::byte>(108));
  const ir::TensorId y = g.add_op("conv2d", {x, w}, {}).front();
  g.add_d2h_stream("y", y);
  const size_t scratch = ops::scratch_bytes(g, g.op(0));
  ASSERT_GT(scratch, 0u);  // im2col
  const Program p = compile(g, place(g, {}), {.micro_batches = 2, .slots = {2}, .offload_optimizer_state = false, .in_place = {}});
  const DevicePlan& d = p.devices[0];
  EXPECT_EQ(d.scratch_bytes, scratch);
  const auto aligned = [](size_t n) { return (n + memory::kAlignment - 1) / memory::kAlignment * memory::kAlignment; };
  EXPECT_EQ(d.arena_bytes, d.persistent_size + aligned(scratch) + 2 * aligned(p.stages[0].slot_plan.arena_bytes));
  EXPECT_EQ(p.stages[0].slot_plan.peak_live_bytes, (2 * 64 + 2 * 3 * 36) * 4u);  // x and y, no scratch
}

}  // namespace
}  // namespace plexus::compile
