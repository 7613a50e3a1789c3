// The pipelined strategy (plugins/strategy_pipelined), loaded through compile::Strategy:
// for S in {1, 2, 4}, M in {S, 2S, 10}, training and inference, every stage layout and every
// option, the schedule passes check_schedule, each stage follows its documented order
// (1F1B or fill-drain) and needs the documented activation slots; fill-drain on one stage
// per device takes 2(M + S - 1) forward/backward units. M < S and unknown options are
// refused with messages naming them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "core/ir/error.h"
#include "core/compile/schedule.h"
#include "core/compile/strategy.h"
#include "tests/plugins/strategy/problems.h"

namespace plexus::compile::strategy_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Stage s's documented order when training: 1F1B ("" and "1f1b") or fill-drain.
std::vector<compile::Step> training_order(int64_t s, int64_t S, int64_t M, const std::string& option) {
  std::vector<compile::Step> steps;
  if (option == "fill_drain") {
    for (int64_t m = 0; m < M; ++m) steps.push_back(F(s, m));
    for (int64_t m = 0; m < M; ++m) steps.push_back(B(s, m));
  } else {
    const int64_t warm_up = std::min(S - s, M);
    for (int64_t m = 0; m < warm_up; ++m) steps.push_back(F(s, m));
    for (int64_t m = 0; m < M; ++m) {
      steps.push_back(B(s, m));
      if (warm_up + m < M) steps.push_back(F(s, warm_up + m));
    }
  }
  steps.push_back(U(s));
  return steps;
}

std::vector<compile::Step> inference_order(int64_t s, int64_t M) {
  std::vector<compile::Step> steps;
  for (int64_t m = 0; m < M; ++m) steps.push_back(F(s, m));
  return steps;
}

struct Case {
  int64_t S;
  int64_t M;
  bool training;
  Layout layout;
  std::string option;
};

// For gtest's messages: "S=4 M=10 training pairs ..." instead of the bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << "S=" << c.S << " M=" << c.M << (c.training ? " training " : " inference ") << layout_name(c.layout) << " "
      << (c.option.empty() ? "default" : c.option);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (int64_t S : {1, 2, 4}) {
    std::vector<int64_t> Ms = {S, 2 * S, 10};
    std::sort(Ms.begin(), Ms.end());
    Ms.erase(std::unique(Ms.begin(), Ms.end()), Ms.end());
    for (int64_t M : Ms) {
      for (bool training : {true, false}) {
        for (Layout layout : kLayouts) {
          for (const char* option : {"", "1f1b", "fill_drain"}) cases.push_back({S, M, training, layout, option});
        }
      }
    }
  }
  return cases;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return "S" + std::to_string(c.S) + "_M" + std::to_string(c.M) + (c.training ? "_training_" : "_inference_") +
         layout_name(c.layout) + "_" + (c.option.empty() ? "default" : c.option);
}

class PipelinedSchedule : public testing::TestWithParam<Case> {};

TEST_P(PipelinedSchedule, PassesTheCheckAndFollowsTheDocumentedOrder) {
  const Case& c = GetParam();
  const compile::ScheduleProblem p = make_problem(c.S, c.M, c.training, c.layout);
  const compile::Strategy strategy("pipelined");
  const compile::Schedule schedule = strategy.schedule(p, c.option);  // checked inside; again below for the analysis
  const compile::ScheduleAnalysis a = compile::check_schedule(p, schedule, "pipelined");

  ASSERT_EQ(schedule.size(), static_cast<size_t>(p.num_devices));
  for (int64_t s = 0; s < c.S; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    const auto& list = schedule[static_cast<size_t>(p.stage_device[static_cast<size_t>(s)])];
    const std::vector<compile::Step> expected = c.training ? training_order(s, c.S, c.M, c.option) : inference_order(s, c.M);
    EXPECT_EQ(steps_of_stage(list, s), expected);
    const int64_t slots = !c.training ? 1 : c.option == "fill_drain" ? c.M : std::min(c.S - s, c.M);
    EXPECT_EQ(a.slots[static_cast<size_t>(s)], slots);
    if (c.layout == Layout::one_per_device) {
      EXPECT_EQ(list, expected);  // the device list is the stage order itself
    }
  }

  if (c.training && c.option == "fill_drain" && c.layout == Layout::one_per_device) {
    // GPipe: forwards and backwards end after 2(M + S - 1) units (then U(0) takes one), so
    // each device idles 2(S - 1) of them: the bubble (S - 1) / (M + S - 1).
    int64_t last_end = 0;
    for (size_t d = 0; d < schedule.size(); ++d) {
      for (size_t i = 0; i < schedule[d].size(); ++i) {
        if (schedule[d][i].kind != compile::StepKind::Update) last_end = std::max(last_end, a.start_time[d][i] + 1);
      }
    }
    EXPECT_EQ(last_end, 2 * (c.M + c.S - 1));
    EXPECT_EQ(a.makespan, 2 * (c.M + c.S - 1) + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, PipelinedSchedule, testing::ValuesIn(all_cases()), case_name);

TEST(PipelinedStrategy, OneFOneBNeedsFewerSlotsThanFillDrain) {
  const compile::Strategy strategy("pipelined");
  for (int64_t S : {1, 2, 4}) {
    for (int64_t M : {S, 2 * S, int64_t{10}}) {
      for (Layout layout : kLayouts) {
        SCOPED_TRACE("S=" + std::to_string(S) + " M=" + std::to_string(M) + " " + layout_name(layout));
        const compile::ScheduleProblem p = make_problem(S, M, /*training=*/true, layout);
        const std::vector<int64_t> one_f_one_b = compile::check_schedule(p, strategy.schedule(p, ""), "1f1b").slots;
        const std::vector<int64_t> fill_drain = compile::check_schedule(p, strategy.schedule(p, "fill_drain"), "fd").slots;
        for (size_t s = 0; s < one_f_one_b.size(); ++s) EXPECT_LE(one_f_one_b[s], fill_drain[s]) << "stage " << s;
        const int64_t total_1f1b = std::accumulate(one_f_one_b.begin(), one_f_one_b.end(), int64_t{0});
        const int64_t total_fill_drain = std::accumulate(fill_drain.begin(), fill_drain.end(), int64_t{0});
        EXPECT_EQ(total_1f1b, S * (S + 1) / 2);
        EXPECT_EQ(total_fill_drain, S * M);
        if (S * M > 1) {
          EXPECT_LT(total_1f1b, total_fill_drain);
        }
      }
    }
  }
}

// The error strategy.schedule(p, options) throws; fails the test if none.
ir::Error schedule_error(const compile::Strategy& strategy, const compile::ScheduleProblem& p, const std::string& options) {
  try {
    strategy.schedule(p, options);
  } catch (const ir::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no ir::Error thrown";
  return ir::Error(ir::ErrorCode::Internal, "no error");
}

TEST(PipelinedStrategy, RefusesFewerMicroBatchesThanStages) {
  const compile::Strategy strategy("pipelined");
  for (bool training : {true, false}) {
    for (const char* option : {"", "fill_drain"}) {
      SCOPED_TRACE(std::string(training ? "training" : "inference") + " option '" + option + "'");
      const ir::Error e = schedule_error(strategy, make_problem(4, 3, training, Layout::one_per_device), option);
      EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), AllOf(HasSubstr("execution strategy 'pipelined'"),
                                  HasSubstr("pipelined execution needs at least as many micro-batches (gradient "
                                            "accumulation when training) as stages"),
                                  HasSubstr("3 micro-batches for 4 stages")));
    }
  }
  EXPECT_THAT(schedule_error(strategy, make_problem(2, 1, true, Layout::all_on_one), "").what(),
              HasSubstr("1 micro-batches for 2 stages"));
}

TEST(PipelinedStrategy, RefusesAnUnknownOptionNamingIt) {
  const compile::Strategy strategy("pipelined");
  for (const char* option : {"zigzag", "1F1B", "fill_drain,1f1b", " fill_drain"}) {
    SCOPED_TRACE(option);
    const ir::Error e = schedule_error(strategy, make_problem(2, 4, true, Layout::one_per_device), option);
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("unknown option '" + std::string(option) + "' for the pipelined strategy"));
  }
}

TEST(PipelinedStrategy, SchedulesConcurrentlyFromSeveralThreads) {
  // strategy_plugin.h: make_schedule may be called from any thread, concurrently.
  const compile::Strategy strategy("pipelined");
  const compile::ScheduleProblem p = make_problem(4, 10, true, Layout::round_robin);
  const compile::Schedule expected = strategy.schedule(p, "");
  std::vector<compile::Schedule> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) results[t] = strategy.schedule(p, "");
    });
  }
  for (std::thread& t : threads) t.join();
  for (const compile::Schedule& r : results) EXPECT_EQ(r, expected);
}

}  // namespace
}  // namespace plexus::compile::strategy_test
