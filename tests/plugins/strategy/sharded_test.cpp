// The sharded strategy (plugins/strategy_sharded), loaded through compile::Strategy: for S in
// {1, 2, 4}, M in {1, S, 2S, 10} (any M >= 1, fewer micro-batches than stages too), training
// and inference, every stage layout, each device runs its stages' steps in the global order
// F(0,m) .. F(S-1,m), B(S-1,m) .. B(0,m) for m = 0 .. M-1, then U(0) .. U(S-1); the schedule
// passes check_schedule and needs one activation slot per stage. Options are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "core/compile/schedule.h"
#include "core/compile/strategy.h"
#include "tests/plugins/strategy/problems.h"

namespace plexus::compile::strategy_test {
namespace {

using ::testing::HasSubstr;

// The documented global order, split by device.
compile::Schedule sharded_order(const compile::ScheduleProblem& p) {
  std::vector<compile::Step> global;
  for (int64_t m = 0; m < p.num_micro_batches; ++m) {
    for (int64_t s = 0; s < p.num_stages; ++s) global.push_back(F(s, m));
    if (!p.training) continue;
    for (int64_t s = p.num_stages - 1; s >= 0; --s) global.push_back(B(s, m));
  }
  if (p.training) {
    for (int64_t s = 0; s < p.num_stages; ++s) global.push_back(U(s));
  }
  compile::Schedule schedule(static_cast<size_t>(p.num_devices));
  for (const compile::Step& step : global) {
    schedule[static_cast<size_t>(p.stage_device[static_cast<size_t>(step.stage)])].push_back(step);
  }
  return schedule;
}

struct Case {
  int64_t S;
  int64_t M;
  bool training;
  Layout layout;
};

// For gtest's messages: "S=4 M=10 training pairs ..." instead of the bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << "S=" << c.S << " M=" << c.M << (c.training ? " training " : " inference ") << layout_name(c.layout);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int64_t S : {1, 2, 4}) {
    std::vector<int64_t> Ms = {1, S, 2 * S, 10};
    std::sort(Ms.begin(), Ms.end());
    Ms.erase(std::unique(Ms.begin(), Ms.end()), Ms.end());
    for (int64_t M : Ms) {
      for (bool training : {true, false}) {
        for (Layout layout : kLayouts) cases.push_back({S, M, training, layout});
      }
    }
  }
  return cases;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return "S" + std::to_string(c.S) + "_M" + std::to_string(c.M) + (c.training ? "_training_" : "_inference_") +
         layout_name(c.layout);
}

class ShardedSchedule : public testing::TestWithParam<Case> {};

TEST_P(ShardedSchedule, FollowsTheGlobalOrderAndPassesTheCheck) {
  const Case& c = GetParam();
  const compile::ScheduleProblem p = make_problem(c.S, c.M, c.training, c.layout);
  const compile::Schedule schedule = compile::Strategy("sharded").schedule(p, "");
  EXPECT_EQ(schedule, sharded_order(p));
  const compile::ScheduleAnalysis a = compile::check_schedule(p, schedule, "sharded");
  EXPECT_EQ(a.slots, std::vector<int64_t>(static_cast<size_t>(c.S), 1));
  if (c.training) {
    // One step at a time: B(s, M-1) ends at 2SM - s; then each device runs the updates of
    // its stages, after the backward of its lowest stage.
    int64_t makespan = 0;
    for (int64_t d = 0; d < p.num_devices; ++d) {
      const auto first = std::find(p.stage_device.begin(), p.stage_device.end(), d);
      if (first == p.stage_device.end()) continue;
      const int64_t lowest_stage = first - p.stage_device.begin();
      const int64_t stages = std::count(p.stage_device.begin(), p.stage_device.end(), d);
      makespan = std::max(makespan, 2 * c.S * c.M - lowest_stage + stages);
    }
    EXPECT_EQ(a.makespan, makespan);
  } else {
    // No backward makes stage 0 wait for the last stage, so devices may overlap.
    EXPECT_LE(a.makespan, c.S * c.M);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, ShardedSchedule, testing::ValuesIn(all_cases()), case_name);

TEST(ShardedStrategy, RefusesOptionsNamingThem) {
  try {
    compile::Strategy("sharded").schedule(make_problem(2, 2, true, Layout::one_per_device), "fill_drain");
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("unknown option 'fill_drain' for the sharded strategy"));
  }
}

}  // namespace
}  // namespace plexus::compile::strategy_test
