// The C entry of every strategy plugin (plugins/strategy_common: planner_call.cpp,
// problem.cpp, outcome.cpp), called directly through the table: bad arguments are
// PLX_ERR_INVALID_ARGUMENT with a message naming them, the caller's lists and counts are
// untouched on error, and the message respects the caller's capacity.
#include <plexus/strategy_plugin.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/plugin_host/plugin_library.h"

namespace plexus::compile::strategy_test {
namespace {

using ::testing::HasSubstr;

constexpr size_t kUntouched = 12345;

// One make_schedule call's arguments, valid until a test spoils one: S = 2 stages on 2
// devices, M = 2, training, room for every step.
struct Call {
  std::vector<int64_t> stage_device = {0, 1};
  plx_schedule_problem problem{sizeof(plx_schedule_problem), 2, 2, nullptr, 2, 1, ""};
  size_t capacity = 2 * (2 * 2 + 1);
  std::vector<std::vector<plx_schedule_step>> lists =
      std::vector<std::vector<plx_schedule_step>>(2, std::vector<plx_schedule_step>(capacity, {-7, -7, 99}));
  std::vector<plx_schedule_step*> pointers = {lists[0].data(), lists[1].data()};
  std::vector<size_t> counts = std::vector<size_t>(2, kUntouched);
  char message[256] = {};

  Call() { problem.stage_device = stage_device.data(); }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  plx_status run(const plx_strategy_plugin* table, const plx_schedule_problem* p, plx_schedule_step* const* steps,
                 size_t* step_counts) {
    return table->make_schedule(p, steps, capacity, step_counts, message, sizeof message);
  }
  plx_status run(const plx_strategy_plugin* table) { return run(table, &problem, pointers.data(), counts.data()); }

  // Nothing was written to the lists or counts.
  bool untouched() const {
    for (size_t d = 0; d < lists.size(); ++d) {
      if (counts[d] != kUntouched || lists[d][0].stage != -7) return false;
    }
    return true;
  }
};

class PlannerCall : public testing::TestWithParam<std::string> {
 protected:
  PlannerCall()
      : library_(plugin_host::PluginLibrary::open("strategy", GetParam())),
        table_(reinterpret_cast<plx_strategy_plugin_entry>(library_.symbol(PLX_STRATEGY_PLUGIN_SYMBOL))()) {}

  // Expects PLX_ERR_INVALID_ARGUMENT naming `what`, with the caller's outputs untouched.
  void expect_invalid(Call& call, plx_status status, const std::string& what) {
    EXPECT_EQ(status, PLX_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(call.message, HasSubstr(what));
    EXPECT_TRUE(call.untouched());
  }

  plugin_host::PluginLibrary library_;
  const plx_strategy_plugin* table_;
};

TEST_P(PlannerCall, WritesListsAndCountsOnSuccess) {
  Call call;
  ASSERT_EQ(call.run(table_), PLX_OK) << call.message;
  EXPECT_EQ(call.counts, (std::vector<size_t>{5, 5}));  // 2 forwards, 2 backwards, 1 update each
  EXPECT_EQ(call.lists[1][0].stage, 1);
  EXPECT_EQ(call.lists[1][0].kind, PLX_STEP_FORWARD);
}

TEST_P(PlannerCall, RefusesNullPointers) {
  Call call;
  expect_invalid(call, call.run(table_, nullptr, call.pointers.data(), call.counts.data()), "problem is NULL");
  expect_invalid(call, call.run(table_, &call.problem, nullptr, call.counts.data()), "device_steps or");
  expect_invalid(call, call.run(table_, &call.problem, call.pointers.data(), nullptr), "device_step_counts is NULL");
  call.problem.stage_device = nullptr;
  expect_invalid(call, call.run(table_), "stage_device is NULL");
  call.problem.stage_device = call.stage_device.data();
  call.pointers[1] = nullptr;
  expect_invalid(call, call.run(table_), "device_steps[1] is NULL");
}

TEST_P(PlannerCall, RefusesAnOldStructSize) {
  Call call;
  call.problem.struct_size = offsetof(plx_schedule_problem, options);
  expect_invalid(call, call.run(table_), "problem struct_size");
}

TEST_P(PlannerCall, RefusesBadCountsAndDevices) {
  Call call;
  call.problem.num_stages = 0;
  expect_invalid(call, call.run(table_), "num_stages is 0, must be in [1, 16777216]");
  call.problem.num_stages = 2;
  call.problem.num_micro_batches = (int64_t{1} << 24) + 1;
  expect_invalid(call, call.run(table_), "num_micro_batches is 16777217");
  call.problem.num_micro_batches = 2;
  call.problem.num_devices = -1;
  expect_invalid(call, call.run(table_), "num_devices is -1");
  call.problem.num_devices = 2;
  call.stage_device[1] = 2;
  expect_invalid(call, call.run(table_), "stage 1 is on device 2, outside [0, 2)");
}

TEST_P(PlannerCall, RefusesTooSmallACapacity) {
  Call call;
  call.capacity = 4;
  expect_invalid(call, call.run(table_), "device 0 runs 5 steps, more than the capacity 4");
}

TEST_P(PlannerCall, TruncatesTheMessageToItsCapacity) {
  Call call;
  std::memset(call.message, 'x', sizeof call.message);
  EXPECT_EQ(table_->make_schedule(nullptr, call.pointers.data(), call.capacity, call.counts.data(), call.message, 8),
            PLX_ERR_INVALID_ARGUMENT);
  EXPECT_STREQ(call.message, "problem");  // 7 bytes and the NUL
  EXPECT_EQ(call.message[8], 'x');
  // No buffer at all is fine too.
  EXPECT_EQ(table_->make_schedule(nullptr, call.pointers.data(), call.capacity, call.counts.data(), nullptr, 100),
            PLX_ERR_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Plugins, PlannerCall, testing::Values("pipelined", "sharded"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace plexus::compile::strategy_test
