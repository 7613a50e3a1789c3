// The buffers live on a device (core/compile/live_buffers.h) and the slot pieces of the
// program they come from: the pieces account for every byte of a slot region's plan at
// every position, and the buffers at the peak for the device's planned peak.
#include "core/compile/live_buffers.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "core/compile/passes.h"
#include "core/ir/autodiff.h"
#include "tests/runtime/data_parallel_mlp.h"
#include "tests/runtime/test_graphs.h"
#include "tests/runtime/two_block_model.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

size_t sum(const std::vector<LiveBuffer>& live) {
  return std::accumulate(live.begin(), live.end(), size_t{0}, [](size_t n, const LiveBuffer& b) { return n + b.bytes; });
}

/// Every position of every stage: the pieces live there sum to the plan's live bytes.
void expect_pieces_cover_the_plan(const Program& p, const std::string& what) {
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const StagePlan& sp = p.stages[s];
    for (size_t k = 0; k < sp.slot_plan.live_bytes.size(); ++k) {
      size_t bytes = 0;
      for (const SlotPiece& piece : sp.slot_pieces) {
        if (piece.first <= static_cast<int64_t>(k) && static_cast<int64_t>(k) <= piece.last) bytes += piece.bytes;
      }
      EXPECT_EQ(bytes, sp.slot_plan.live_bytes[k]) << what << ", stage " << s << ", position " << k;
    }
  }
}

/// Every device: the buffers at the peak plus the scratch area are the planned peak.
void expect_peak_buffers_make_the_planned_peak(const ir::Graph& g, const Program& p, const std::string& what) {
  for (size_t d = 0; d < p.devices.size(); ++d) {
    EXPECT_EQ(sum(live_buffers(g, p, d)) + p.devices[d].scratch_bytes, p.devices[d].planned_peak_bytes) << what << ", device " << d;
  }
}

/// x (h2d [1,1,8,8]) -> neg -> t; dx = max_pool2d_grad(t, dy) overwrites t, its dying input.
struct PoolGrad {
  ir::Graph g;
  ir::TensorId t, dx;
  PoolGrad() {
    t = g.add_op("neg", {g.stream(g.add_h2d_stream("x", ir::DType::Float32, {1, 1, 8, 8})).tensor}, {}).front();
    const ir::TensorId dy = g.stream(g.add_h2d_stream("dy", ir::DType::Float32, {1, 1, 4, 4})).tensor;
    ir::Attributes a;
    a.set("kernel", std::vector<int64_t>{2});
    a.set("stride", std::vector<int64_t>{2});
    dx = g.add_op("max_pool2d_grad", {t, dy}, a).front();
    g.add_d2h_stream("dx", dx);
  }
};

TEST(LiveBuffers, ABufferAnOutputTakesOverIsItsInputsThenItsOutputs) {
  PoolGrad m;
  const Program p = compile(m.g, place(m.g, {}), {});
  ASSERT_EQ(p.stages[0].slot_offset.at(m.t), p.stages[0].slot_offset.at(m.dx));  // one buffer
  const SlotPiece* t = nullptr;
  const SlotPiece* dx = nullptr;
  for (const SlotPiece& piece : p.stages[0].slot_pieces) {
    if (piece.root == m.t) t = &piece;
    if (piece.root == m.dx) dx = &piece;
  }
  ASSERT_TRUE(t && dx);
  EXPECT_EQ(t->bytes, 256u);
  EXPECT_EQ(dx->bytes, 256u);
  EXPECT_EQ(t->last + 1, dx->first);  // t up to the op before the pool's gradient, dx from it on
  expect_pieces_cover_the_plan(p, "pool grad");
  expect_peak_buffers_make_the_planned_peak(m.g, p, "pool grad");
}

TEST(LiveBuffers, PiecesCoverEverySlotPlanAndThePeakBuffersThePlannedPeak) {
  testing::Mlp mlp = testing::build_mlp(2, 4);  // gradient buckets laid out as views
  CompileOptions buckets;
  buckets.gradient_bucket_bytes = size_t{25} << 20;
  const Program views = compile(mlp.graph, place(mlp.graph, {}), buckets);
  ASSERT_EQ(views.span_ops.size(), 1u);
  expect_pieces_cover_the_plan(views, "bucket views");
  expect_peak_buffers_make_the_planned_peak(mlp.graph, views, "bucket views");

  testing::TwoBlockModel adamw(true);  // pipelined over two devices, accumulating 4 micro-batches
  const Program piped = compile(adamw.g, place(adamw.g, {{{"B1"}, 0}, {{"B2"}, 1}}),
                                {.micro_batches = 4, .slots = {2, 1}, .offload_optimizer_state = true, .in_place = {}});
  expect_pieces_cover_the_plan(piped, "pipelined");
  expect_peak_buffers_make_the_planned_peak(adamw.g, piped, "pipelined");
}

TEST(LiveBuffers, TheRunningSlotIsAtItsPositionAndEveryOtherRegionAtItsPeak) {
  testing::TwoBlockModel m;  // both stages on device 0; stage 0 keeps two micro-batch slots
  const Program p = compile(m.g, place(m.g, {{{"B1"}, 0}, {{"B2"}, 0}}),
                            {.micro_batches = 4, .slots = {2, 1}, .offload_optimizer_state = false, .in_place = {}});
  const StagePlan& s0 = p.stages[0];
  const StagePlan& s1 = p.stages[1];
  const size_t peak0 = s0.slot_plan.peak_live_bytes, peak1 = s1.slot_plan.peak_live_bytes;
  EXPECT_EQ(s0.slot_plan.live_bytes[static_cast<size_t>(slot_peak_position(s0))], peak0);
  const size_t persistent = p.devices[0].persistent_bytes;
  for (size_t k = 0; k < s0.slot_plan.live_bytes.size(); ++k) {
    const std::vector<LiveBuffer> live = live_buffers(m.g, p, 0, RunningAction{0, static_cast<int64_t>(k)});
    EXPECT_EQ(sum(live), persistent + s0.slot_plan.live_bytes[k] + peak0 + peak1) << "position " << k;
  }
  const std::vector<LiveBuffer> at1 = live_buffers(m.g, p, 0, RunningAction{1, 0});
  EXPECT_EQ(sum(at1), persistent + 2 * peak0 + s1.slot_plan.live_bytes[0]);
  // The accumulators of the gradients are persistent buffers of their stage.
  size_t accumulators = 0;
  for (const LiveBuffer& b : at1) accumulators += b.persistent && b.stage >= 0;
  EXPECT_EQ(accumulators, s0.accumulator.size() + s1.accumulator.size());
  EXPECT_EQ(accumulators, 2u);
  EXPECT_THROW(live_buffers(m.g, p, 1), std::out_of_range);
}

TEST(LiveBuffers, LargestFirstWithSlotCopiesCounted) {
  testing::TwoBlockModel m;
  const Program p = compile(m.g, place(m.g, {{{"B1"}, 0}, {{"B2"}, 1}}),
                            {.micro_batches = 2, .slots = {2, 1}, .offload_optimizer_state = false, .in_place = {}});
  const std::vector<LiveBuffer> live = live_buffers(m.g, p, 0);
  ASSERT_FALSE(live.empty());
  for (size_t i = 1; i < live.size(); ++i) EXPECT_GE(live[i - 1].bytes, live[i].bytes);
  // A running action names a stage of the device asked about: stage 1 runs on device 1.
  EXPECT_THROW(live_buffers(m.g, p, 0, RunningAction{1, 0}), std::out_of_range);
  EXPECT_THROW(live_buffers(m.g, p, 0, RunningAction{2, 0}), std::out_of_range);
  EXPECT_THROW(live_buffers(m.g, p, 0, RunningAction{-1, 0}), std::out_of_range);
  EXPECT_NO_THROW(live_buffers(m.g, p, 1, RunningAction{1, 0}));
  for (const LiveBuffer& b : live) {
    if (b.persistent) continue;
    EXPECT_EQ(b.copies, 2);
    EXPECT_EQ(b.bytes % 2, 0u);
  }
}

}  // namespace
}  // namespace plexus::compile
