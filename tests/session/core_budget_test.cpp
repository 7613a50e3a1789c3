#include "core/session/core_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "core/session/session.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::session {
namespace {

using ::testing::HasSubstr;

TEST(CoreBudget, DefaultThreadsShareTheCoresAndNeverWarn) {
  const CoreBudget b = plan_core_budget(2, 0, 1, 8);
  EXPECT_EQ(b.threads_per_device, 4);
  EXPECT_TRUE(b.device_spin);
  EXPECT_TRUE(b.io_spin);  // 2 devices + 1 io thread on 8 cores
  EXPECT_EQ(b.warning, "");
  EXPECT_EQ(plan_core_budget(3, 0, 1, 2).threads_per_device, 1);  // more devices than cores: 1 each
}

TEST(CoreBudget, SpinningNeedsACorePerThread) {
  const CoreBudget b = plan_core_budget(2, 1, 1, 2);
  EXPECT_TRUE(b.device_spin);
  EXPECT_FALSE(b.io_spin);  // the io thread would take a device's core
  EXPECT_FALSE(plan_core_budget(3, 1, 1, 2).device_spin);
}

// 2 pipeline stages x 2 threads on 2 cores (char_gpt --stages 2 --threads-per-device 2).
TEST(CoreBudget, MoreComputeThreadsThanCoresWarnsWithWhatItDoes) {
  const CoreBudget b = plan_core_budget(2, 2, 1, 2);
  EXPECT_EQ(b.threads_per_device, 2);  // the caller's choice is kept
  EXPECT_THAT(b.warning, HasSubstr("2 device(s) x 2 compute thread(s) = 4 threads on 2 core(s)"));
  EXPECT_THAT(b.warning, HasSubstr("spins at most 200 us and then sleeps"));
  EXPECT_THAT(b.warning, HasSubstr("threads_per_device 1 fits this machine."));
  EXPECT_THAT(plan_core_budget(3, 1, 1, 2).warning, HasSubstr("(device threads sleep at once)"));
  EXPECT_THAT(plan_core_budget(3, 1, 1, 2).warning, HasSubstr("as well as it can"));
  EXPECT_EQ(plan_core_budget(2, 1, 1, 2).warning, "");
}

TEST(CoreBudget, ASessionWarnsOnStderrOnceAndReportsItEachTime) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  runtime::testing::Accumulator m;
  SessionOptions opts;
  opts.threads_per_device = cores + 1;
  ::testing::internal::CaptureStderr();
  {
    Session first(m.graph, opts);
    Session second(m.graph, opts);
    ASSERT_EQ(second.warnings().size(), 1u);
    EXPECT_THAT(second.warnings()[0], HasSubstr(std::to_string(cores + 1) + " compute thread(s)"));
    EXPECT_EQ(second.options().threads_per_device, cores + 1);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("plexus: warning: 1 device(s) x " + std::to_string(cores + 1)));
  EXPECT_EQ(err.find("plexus: warning"), err.rfind("plexus: warning")) << err;  // once
  EXPECT_TRUE(Session(m.graph, {}).warnings().empty());
}

}  // namespace
}  // namespace plexus::session
