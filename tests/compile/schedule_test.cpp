// Schedules (core/compile/schedule.cpp): the problem check, the trivial one-device schedule,
// every rule of strategy_plugin.h broken once by a hand-made schedule (the error names the
// rule and the step), and the analysis of the textbook 1F1B and fill-drain schedules
// (activation slots per stage, simulated makespan).
#include "core/compile/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "tests/error_of.h"

namespace plexus::compile {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Step F(int64_t s, int64_t m) { return {s, m, StepKind::Forward}; }
Step B(int64_t s, int64_t m) { return {s, m, StepKind::Backward}; }
Step U(int64_t s) { return {s, -1, StepKind::Update}; }

using plexus::test::error_of;

// S stages, stage s on device s.
ScheduleProblem one_stage_per_device(int64_t S, int64_t M, bool training = true) {
  ScheduleProblem p;
  p.num_stages = S;
  p.num_devices = S;
  for (int64_t s = 0; s < S; ++s) p.stage_device.push_back(s);
  p.num_micro_batches = M;
  p.training = training;
  return p;
}

// Textbook 1F1B, one stage per device: min(S - s, M) warm-up forwards, then one backward and
// one forward alternately, then the remaining backwards, then the update.
Schedule one_f_one_b(int64_t S, int64_t M) {
  Schedule schedule(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    auto& list = schedule[static_cast<size_t>(s)];
    const int64_t warm_up = std::min(S - s, M);
    for (int64_t m = 0; m < warm_up; ++m) list.push_back(F(s, m));
    for (int64_t m = 0; m < M; ++m) {
      list.push_back(B(s, m));
      if (warm_up + m < M) list.push_back(F(s, warm_up + m));
    }
    list.push_back(U(s));
  }
  return schedule;
}

// Textbook GPipe fill-drain, one stage per device.
Schedule fill_drain(int64_t S, int64_t M) {
  Schedule schedule(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    auto& list = schedule[static_cast<size_t>(s)];
    for (int64_t m = 0; m < M; ++m) list.push_back(F(s, m));
    for (int64_t m = 0; m < M; ++m) list.push_back(B(s, m));
    list.push_back(U(s));
  }
  return schedule;
}

// --- check_problem ----------------------------------------------------------------------

TEST(CheckProblem, AcceptsAValidProblem) {
  ScheduleProblem p = one_stage_per_device(3, 4);
  p.stage_device = {0, 0, 2};  // several stages per device, a device without a stage
  EXPECT_NO_THROW(check_problem(p));
}

TEST(CheckProblem, NamesEachBadField) {
  struct Case {
    std::function<void(ScheduleProblem&)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](ScheduleProblem& p) { p.num_stages = 0; }, "num_stages is 0, must be >= 1"},
      {[](ScheduleProblem& p) { p.num_devices = 0; }, "num_devices is 0, must be >= 1"},
      {[](ScheduleProblem& p) { p.num_micro_batches = -1; }, "num_micro_batches is -1, must be >= 1"},
      {[](ScheduleProblem& p) { p.stage_device.pop_back(); }, "stage_device has 1 entries for 2 stages"},
      {[](ScheduleProblem& p) { p.stage_device[1] = 2; }, "stage 1 is on device 2, outside [0, 2)"},
      {[](ScheduleProblem& p) { p.stage_device[0] = -1; }, "stage 0 is on device -1, outside [0, 2)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    ScheduleProblem p = one_stage_per_device(2, 2);
    c.spoil(p);
    const ir::Error e = error_of([&] { check_problem(p); });
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr(c.message));
  }
}

// --- trivial_schedule -------------------------------------------------------------------

TEST(TrivialSchedule, RunsEachMicroBatchForwardThenBackwardThenTheUpdates) {
  ScheduleProblem p = one_stage_per_device(2, 2);
  p.num_devices = 1;
  p.stage_device = {0, 0};
  const Schedule schedule = trivial_schedule(p);
  const Schedule expected = {{F(0, 0), F(1, 0), B(1, 0), B(0, 0), F(0, 1), F(1, 1), B(1, 1), B(0, 1), U(0), U(1)}};
  EXPECT_EQ(schedule, expected);
  const ScheduleAnalysis a = check_schedule(p, schedule, "trivial");
  EXPECT_EQ(a.slots, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(a.makespan, 10);  // one device, one unit per step
  EXPECT_EQ(a.start_time, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}));
}

TEST(TrivialSchedule, InferenceRunsForwardsOnly) {
  ScheduleProblem p = one_stage_per_device(2, 3, /*training=*/false);
  const Schedule schedule = trivial_schedule(p);
  const Schedule expected = {{F(0, 0), F(0, 1), F(0, 2)}, {F(1, 0), F(1, 1), F(1, 2)}};
  EXPECT_EQ(schedule, expected);
  const ScheduleAnalysis a = check_schedule(p, schedule, "trivial");
  EXPECT_EQ(a.slots, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(a.makespan, 4);  // the second device starts one unit later
}

TEST(TrivialSchedule, RefusesABadProblem) {
  ScheduleProblem p = one_stage_per_device(2, 2);
  p.stage_device = {0, 5};
  EXPECT_EQ(error_of([&] { trivial_schedule(p); }).code(), ir::ErrorCode::InvalidArgument);
}

// --- check_schedule: each rule broken once ----------------------------------------------

// The error check_schedule throws for `schedule`, which must be ErrorCode::Plugin naming the
// source "hand-made".
std::string rule_error(const ScheduleProblem& p, const Schedule& schedule) {
  const ir::Error e = error_of([&] { check_schedule(p, schedule, "hand-made"); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("schedule from 'hand-made'"));
  return e.what();
}

TEST(CheckSchedule, AcceptsTheTextbookSchedules) {
  for (int64_t S : {1, 2, 4}) {
    for (int64_t M : {1, 2, 4, 10}) {
      SCOPED_TRACE("S=" + std::to_string(S) + " M=" + std::to_string(M));
      EXPECT_NO_THROW(check_schedule(one_stage_per_device(S, M), one_f_one_b(S, M), "1f1b"));
      EXPECT_NO_THROW(check_schedule(one_stage_per_device(S, M), fill_drain(S, M), "fill_drain"));
    }
  }
}

TEST(CheckSchedule, RuleCoverageMissingStep) {
  Schedule s = fill_drain(2, 2);
  s[0].erase(s[0].begin() + 3);  // B(0,1)
  EXPECT_THAT(rule_error(one_stage_per_device(2, 2), s),
              AllOf(HasSubstr("rule 'coverage'"), HasSubstr("B(0,1) is missing")));
}

TEST(CheckSchedule, RuleCoverageStepListedTwice) {
  Schedule s = fill_drain(2, 2);
  s[1].insert(s[1].begin() + 1, F(1, 0));
  EXPECT_THAT(rule_error(one_stage_per_device(2, 2), s),
              AllOf(HasSubstr("rule 'coverage'"), HasSubstr("F(1,0) is listed twice")));
}

TEST(CheckSchedule, RuleCoverageStepOnTheWrongDevice) {
  Schedule s = fill_drain(2, 2);
  s[1].push_back(s[0].back());  // U(0) on device 1 as well
  EXPECT_THAT(rule_error(one_stage_per_device(2, 2), s),
              AllOf(HasSubstr("rule 'coverage'"),
                    HasSubstr("U(0) is listed on device 1 but stage 0 runs on device 0")));
}

TEST(CheckSchedule, RuleCoverageStepOfAnotherProgram) {
  Schedule s = fill_drain(1, 2);
  s[0].push_back(F(0, 2));  // micro-batch 2 of 2
  EXPECT_THAT(rule_error(one_stage_per_device(1, 2), s),
              AllOf(HasSubstr("rule 'coverage'"), HasSubstr("F(0,2) is not a step of this program")));
  ScheduleProblem inference = one_stage_per_device(1, 1, /*training=*/false);
  EXPECT_THAT(rule_error(inference, {{F(0, 0), B(0, 0)}}),
              AllOf(HasSubstr("rule 'coverage'"), HasSubstr("B(0,0) is not a step of this program")));
  EXPECT_THAT(rule_error(inference, {{F(0, 0), F(3, 0)}}),
              AllOf(HasSubstr("rule 'coverage'"), HasSubstr("F(3,0) names no stage")));
}

TEST(CheckSchedule, RuleCoverageWrongNumberOfDeviceLists) {
  Schedule s = fill_drain(2, 2);
  s.pop_back();
  EXPECT_THAT(rule_error(one_stage_per_device(2, 2), s),
              AllOf(HasSubstr("rule 'coverage'"), HasSubstr("1 device lists for 2 devices")));
}

TEST(CheckSchedule, RuleOrder) {
  const Schedule s = {{F(0, 1), F(0, 0), B(0, 0), B(0, 1), U(0)}};
  EXPECT_THAT(rule_error(one_stage_per_device(1, 2), s),
              AllOf(HasSubstr("rule 'order'"), HasSubstr("F(0,0) comes after micro-batch 1")));
}

TEST(CheckSchedule, RuleForward) {
  ScheduleProblem p = one_stage_per_device(2, 1, /*training=*/false);
  p.num_devices = 1;
  p.stage_device = {0, 0};
  EXPECT_THAT(rule_error(p, {{F(1, 0), F(0, 0)}}),
              AllOf(HasSubstr("rule 'forward'"),
                    HasSubstr("F(1,0) is listed before F(0,0), which it waits for, on device 0")));
}

TEST(CheckSchedule, RuleBackward) {
  const Schedule s = {{B(0, 0), F(0, 0), U(0)}};
  EXPECT_THAT(rule_error(one_stage_per_device(1, 1), s),
              AllOf(HasSubstr("rule 'backward'"), HasSubstr("B(0,0) is listed before F(0,0)")));
  // A backward also waits for the next stage's backward.
  ScheduleProblem p = one_stage_per_device(2, 1);
  p.num_devices = 1;
  p.stage_device = {0, 0};
  EXPECT_THAT(rule_error(p, {{F(0, 0), F(1, 0), B(0, 0), B(1, 0), U(0), U(1)}}),
              AllOf(HasSubstr("rule 'backward'"), HasSubstr("B(0,0) is listed before B(1,0)")));
}

TEST(CheckSchedule, RuleUpdate) {
  const Schedule s = {{F(0, 0), F(0, 1), B(0, 0), U(0), B(0, 1)}};
  EXPECT_THAT(rule_error(one_stage_per_device(1, 2), s),
              AllOf(HasSubstr("rule 'update'"), HasSubstr("U(0) is listed before B(0,1)")));
}

TEST(CheckSchedule, RuleProgress) {
  // Each list is fine on its own, but device 0 waits for B(1,0) before it sends F(0,1),
  // while device 1 waits for F(0,1) before it runs B(1,0).
  const Schedule s = {{F(0, 0), B(0, 0), F(0, 1), B(0, 1), U(0)}, {F(1, 0), F(1, 1), B(1, 0), B(1, 1), U(1)}};
  EXPECT_THAT(rule_error(one_stage_per_device(2, 2), s),
              AllOf(HasSubstr("rule 'progress'"), HasSubstr("device 0 at B(0,0), device 1 at F(1,1)")));
}

// --- check_schedule: analysis -----------------------------------------------------------

TEST(ScheduleAnalysis, OneFOneBNeedsSMinusSSlotsCappedByM) {
  for (int64_t S : {1, 2, 4}) {
    for (int64_t M : {1, 2, 3, 4, 8, 10}) {  // M < S too: the checker itself allows it
      SCOPED_TRACE("S=" + std::to_string(S) + " M=" + std::to_string(M));
      const ScheduleAnalysis a = check_schedule(one_stage_per_device(S, M), one_f_one_b(S, M), "1f1b");
      for (int64_t s = 0; s < S; ++s) EXPECT_EQ(a.slots[static_cast<size_t>(s)], std::min(S - s, M)) << "stage " << s;
    }
  }
}

TEST(ScheduleAnalysis, FillDrainNeedsMSlotsAndTakesTwiceMPlusSMinusOneUnits) {
  for (int64_t S : {1, 2, 3, 4}) {
    for (int64_t M : {1, 2, 4, 10}) {
      SCOPED_TRACE("S=" + std::to_string(S) + " M=" + std::to_string(M));
      const Schedule schedule = fill_drain(S, M);
      const ScheduleAnalysis a = check_schedule(one_stage_per_device(S, M), schedule, "fill_drain");
      EXPECT_EQ(a.slots, std::vector<int64_t>(static_cast<size_t>(S), M));
      // Forwards and backwards end after 2(M + S - 1) units, then U(0) takes one more.
      int64_t last_forward_backward_end = 0;
      for (size_t d = 0; d < schedule.size(); ++d) {
        for (size_t i = 0; i < schedule[d].size(); ++i) {
          if (schedule[d][i].kind != StepKind::Update) {
            last_forward_backward_end = std::max(last_forward_backward_end, a.start_time[d][i] + 1);
          }
        }
      }
      const int64_t T = 2 * (M + S - 1);
      EXPECT_EQ(last_forward_backward_end, T);
      EXPECT_EQ(a.makespan, T + 1);
      // Each device is busy 2M of the T units: the bubble is (S-1)/(M+S-1) of the time.
      EXPECT_EQ((T - 2 * M) * (M + S - 1), (S - 1) * T);
    }
  }
}

TEST(ScheduleAnalysis, InferenceNeedsOneSlotPerStage) {
  ScheduleProblem p = one_stage_per_device(3, 5, /*training=*/false);
  const ScheduleAnalysis a = check_schedule(p, trivial_schedule(p), "trivial");
  EXPECT_EQ(a.slots, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(a.makespan, 5 + 3 - 1);  // fill and drain, no backward
}

}  // namespace
}  // namespace plexus::compile
