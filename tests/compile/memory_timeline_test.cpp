// A device's planned memory over its schedule (core/compile/memory_timeline.h).
#include "core/compile/memory_timeline.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/compile/passes.h"
#include "tests/runtime/two_block_model.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

/// Both devices' steps of a 2-stage pipeline of `m` micro-batches, stage s on device s:
/// forward and backward of each micro-batch in turn, then the update.
Schedule two_device_schedule(int64_t m) {
  Schedule schedule(2);
  for (int64_t s = 0; s < 2; ++s) {
    for (int64_t mb = 0; mb < m; ++mb) {
      schedule[static_cast<size_t>(s)].push_back({s, mb, StepKind::Forward});
      schedule[static_cast<size_t>(s)].push_back({s, mb, StepKind::Backward});
    }
    schedule[static_cast<size_t>(s)].push_back({s, -1, StepKind::Update});
  }
  return schedule;
}

struct Pipelined {
  testing::TwoBlockModel model{true};  // AdamW: optimizer state
  Program program = compile(model.g, place(model.g, {{{"B1"}, 0}, {{"B2"}, 1}}),
                            {.micro_batches = 2, .slots = {2, 1}, .offload_optimizer_state = false, .in_place = {}});
  Schedule schedule = two_device_schedule(2);
  std::vector<MemoryStep> timeline(size_t d) const {
    return memory_timeline(model.g, program, schedule[d], d, optimizer_state_roots(model.g));
  }
};

TEST(MemoryTimeline, EveryActionOfEveryStepInOrderWithItsTimelinePosition) {
  const Pipelined p;
  for (size_t d = 0; d < 2; ++d) {
    const StagePlan& sp = p.program.stages[d];
    const std::vector<MemoryStep> t = p.timeline(d);
    size_t expected = 0;
    for (const Step& step : p.schedule[d]) expected += sp.actions[static_cast<size_t>(step.kind)].size();
    ASSERT_EQ(t.size(), expected);
    EXPECT_EQ(t.front().step, p.schedule[d].front());
    EXPECT_EQ(t.front().position, 0);
    EXPECT_EQ(t.back().step.kind, StepKind::Update);
    EXPECT_EQ(t.back().position, static_cast<int64_t>(sp.slot_plan.live_bytes.size()) - 1);
  }
}

TEST(MemoryTimeline, EachStepIsThePlanAtItsPositionAndTheLargestThePlannedPeak) {
  const Pipelined p;
  for (size_t d = 0; d < 2; ++d) {
    const StagePlan& sp = p.program.stages[d];
    const DevicePlan& dp = p.program.devices[d];
    const std::vector<MemoryStep> t = p.timeline(d);
    size_t top = 0;
    for (const MemoryStep& m : t) {
      const size_t slots = static_cast<size_t>(sp.slots);
      EXPECT_EQ(m.total(), dp.persistent_bytes + dp.scratch_bytes + sp.slot_plan.live_bytes[static_cast<size_t>(m.position)] +
                               (slots - 1) * sp.slot_plan.peak_live_bytes)
          << "device " << d << " position " << m.position;
      EXPECT_EQ(m.bytes[static_cast<size_t>(MemoryKind::Scratch)], dp.scratch_bytes);
      top = std::max(top, m.total());
    }
    EXPECT_EQ(top, dp.planned_peak_bytes) << "device " << d;
  }
}

TEST(MemoryTimeline, KindsSplitTheBytes) {
  const Pipelined p;
  const std::vector<MemoryStep> t = p.timeline(1);
  const auto bytes = [&](const MemoryStep& m, MemoryKind k) { return m.bytes[static_cast<size_t>(k)]; };
  // Device 1 holds w2 [5,2], its constants, and w2's AdamW state m, v [5,2] and step []
  // throughout; the accumulator of w2's gradient too.
  size_t constants = 0;
  for (const auto& [root, offset] : p.program.devices[1].persistent_offset) {
    if (p.model.g.tensor(root).kind == ir::TensorKind::Constant) constants += p.model.g.tensor(root).bytes();
  }
  for (const MemoryStep& m : t) {
    EXPECT_EQ(bytes(m, MemoryKind::Variables), 40u + constants);
    EXPECT_EQ(bytes(m, MemoryKind::OptimizerState), 40u + 40u + 4u);
    EXPECT_GE(bytes(m, MemoryKind::Gradients), 40u);
  }
  // labels is a stream the stage loads: a stream slot while the forward step runs.
  EXPECT_TRUE(std::any_of(t.begin(), t.end(), [&](const MemoryStep& m) { return bytes(m, MemoryKind::StreamSlots) > 0; }));
  EXPECT_TRUE(std::any_of(t.begin(), t.end(), [&](const MemoryStep& m) { return bytes(m, MemoryKind::Activations) > 0; }));
}

TEST(MemoryTimeline, LabelsSayWhatRuns) {
  const Pipelined p;
  EXPECT_EQ(step_label({0, 3, StepKind::Forward}), "fwd stage 0 mb 3");
  EXPECT_EQ(step_label({1, 0, StepKind::Backward}), "bwd stage 1 mb 0");
  EXPECT_EQ(step_label({1, -1, StepKind::Update}), "upd stage 1");
  const std::vector<MemoryStep> t = p.timeline(0);
  std::vector<std::string> labels;
  for (const MemoryStep& m : t) labels.push_back(action_label(p.model.g, p.program, m.action));
  EXPECT_EQ(labels.front(), "load stream 'x'");
  EXPECT_NE(std::find(labels.begin(), labels.end(), "send 'relu#1' to stage 1"), labels.end()) << labels[3];
  // Per micro-batch (2): x w1 forward, and x^T dh for w1's gradient backward.
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(), [](const std::string& l) { return l.rfind("matmul '", 0) == 0; }), 4);
}

}  // namespace
}  // namespace plexus::compile
