// Loading execution strategies (core/compile/strategy.cpp) against the plugins of this build
// and the mocks of tests/plugins/mock: a strategy whose schedule breaks a rule is refused at
// schedule time with a message naming the strategy, the rule and the step.
#include "core/compile/strategy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/ir/error.h"
#include "tests/plugins/strategy/problems.h"

namespace plexus::compile::strategy_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Puts the mock plugins' folder first on PLEXUS_PLUGIN_PATH for one test.
class MockPluginPath {
 public:
  MockPluginPath() {
    if (const char* old = std::getenv("PLEXUS_PLUGIN_PATH")) old_ = old;
    const std::string path = std::string(PLEXUS_MOCK_PLUGIN_DIR) + (old_ ? ":" + *old_ : "");
    setenv("PLEXUS_PLUGIN_PATH", path.c_str(), 1);
  }
  ~MockPluginPath() {
    if (old_) {
      setenv("PLEXUS_PLUGIN_PATH", old_->c_str(), 1);
    } else {
      unsetenv("PLEXUS_PLUGIN_PATH");
    }
  }
  MockPluginPath(const MockPluginPath&) = delete;
  MockPluginPath& operator=(const MockPluginPath&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST(Strategy, LoadsTheShippedStrategies) {
  for (const char* name : {"pipelined", "sharded"}) {
    const Strategy strategy(name);
    EXPECT_EQ(strategy.name(), name);
    EXPECT_THAT(strategy.path(), HasSubstr("libplexus-strategy-" + std::string(name) + ".so"));
  }
}

TEST(Strategy, RefusesAScheduleThatBreaksRuleBackward) {
  MockPluginPath path;
  const Strategy strategy("mock_bad");
  try {
    strategy.schedule(make_problem(2, 2, /*training=*/true, Layout::one_per_device), "");
    ADD_FAILURE() << "the broken schedule was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("schedule from 'mock_bad'"), HasSubstr("breaks rule 'backward'"),
                                HasSubstr("B(0,0) is listed before F(0,0)")));
  }
}

TEST(Strategy, MissingStrategyIsAPluginErrorNamingTheFile) {
  try {
    Strategy("no_such_strategy");
    ADD_FAILURE() << "loaded a strategy that does not exist";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
    EXPECT_THAT(e.what(), HasSubstr("libplexus-strategy-no_such_strategy.so"));
  }
}

// The path of a mock plugin file. (Appending, not operator+ on a temporary: GCC 12 reports
// -Warray-bounds falsely for the latter, GCC bug 105651.)
std::string mock_file(const char* file) {
  std::string path = PLEXUS_MOCK_PLUGIN_DIR;
  path += '/';
  path += file;
  return path;
}

TEST(Strategy, FromFileLoadsAPluginByPathUnderTheTablesName) {
  const Strategy strategy = Strategy::from_file(mock_file("libplexus-strategy-mock_bad.so"));
  EXPECT_EQ(strategy.name(), "mock_bad");
  EXPECT_THAT(strategy.path(), HasSubstr("libplexus-strategy-mock_bad.so"));
}

TEST(Strategy, FromFileRefusesATableOfAnotherAbiVersion) {
  try {
    Strategy::from_file(mock_file("libplexus-strategy-mock_wrong_abi.so"));
    ADD_FAILURE() << "loaded a table of ABI version 99";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
    EXPECT_THAT(e.what(), AllOf(HasSubstr("mock_wrong_abi.so"), HasSubstr("ABI version 99, this Plexus needs 1")));
  }
}

TEST(Strategy, UncheckedScheduleIsThePluginsOwnListsBrokenOrNot) {
  const Strategy strategy = Strategy::from_file(mock_file("libplexus-strategy-mock_bad.so"));
  const Schedule schedule = strategy.unchecked_schedule(make_problem(1, 1, /*training=*/true, Layout::all_on_one), "");
  const Schedule expected = {{{0, 0, StepKind::Backward}, {0, 0, StepKind::Forward}, {0, -1, StepKind::Update}}};
  EXPECT_EQ(schedule, expected);
}

TEST(Strategy, UncheckedScheduleRefusalIsInvalidArgumentWithThePluginsMessage) {
  try {
    Strategy("pipelined").unchecked_schedule(make_problem(4, 2, /*training=*/true, Layout::one_per_device), "");
    ADD_FAILURE() << "pipelined accepted 2 micro-batches for 4 stages";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("at least as many micro-batches"));
  }
}

}  // namespace
}  // namespace plexus::compile::strategy_test
