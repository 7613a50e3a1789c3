// The compile passes (core/compile/passes.h): their order, a whole compilation of a
// replicated MLP through run_passes against compile() of the same placement, and the memory
// limit refusing a device over its capacity, naming it.
#include "core/compile/passes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "tests/runtime/data_parallel_mlp.h"

namespace plexus::compile {
namespace {

namespace testing = runtime::testing;

using ::testing::HasSubstr;

TEST(Passes, RunInTheListedOrder) {
  std::vector<std::string> names;
  for (const Pass& pass : passes()) names.emplace_back(pass.name);
  EXPECT_EQ(names, (std::vector<std::string>{"placement", "schedule", "conv-pool groups", "relu epilogues",
                                             "gradient buckets", "kernels", "actions", "memory plan",
                                             "memory limit"}));
}

TEST(Passes, ASessionsCompilationEqualsCompileOfItsPlacement) {
  testing::Mlp m = testing::build_mlp(2, 4);
  CompileRequest request;
  request.device_iterations = 3;
  request.program.gradient_bucket_bytes = size_t{1} << 20;
  Compilation c{m.graph, request, {}, {}, 1, {}, {}};
  run_passes(c);
  EXPECT_EQ(c.strategy_name, "trivial");
  EXPECT_EQ(c.iterations, 3) << "a training program runs one schedule per device iteration";
  EXPECT_EQ(c.program.micro_batches, 1);
  ASSERT_FALSE(c.program.span_ops.empty()) << "a gradient bucket laid out as a span";
  const Program direct = compile(m.graph, c.program.placement, c.request.program);
  EXPECT_EQ(direct.devices[0].arena_bytes, c.program.devices[0].arena_bytes);
  EXPECT_EQ(direct.span_ops, c.program.span_ops);
  EXPECT_EQ(direct.stages[0].slot_offset, c.program.stages[0].slot_offset);
}

TEST(Passes, TheMemoryLimitRefusesADeviceOverItsCapacity) {
  testing::Mlp m = testing::build_mlp(2, 4);
  CompileRequest request;
  request.device_memory_bytes = 1024;
  Compilation c{m.graph, request, {}, {}, 1, {}, {}};
  try {
    run_passes(c);
    FAIL() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::OutOfDeviceMemory);
    EXPECT_THAT(e.what(), HasSubstr("device 0 needs"));
    EXPECT_THAT(e.what(), HasSubstr("its capacity (device_memory_bytes) is 1024"));
    // The five largest live at the peak, largest first: the MLP's weights (persistent).
    const std::string message = e.what();
    const size_t list = message.find("the largest tensors live at its peak: ");
    ASSERT_NE(list, std::string::npos) << message;
    EXPECT_EQ(std::count(message.begin() + static_cast<std::ptrdiff_t>(list), message.end(), '\''), 10) << message;
    EXPECT_THAT(message.substr(list), HasSubstr(" bytes (persistent)"));
  }
}

}  // namespace
}  // namespace plexus::compile
