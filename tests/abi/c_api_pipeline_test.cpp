// Blocks, stages, strategies, gradient accumulation, output modes, offload and traces
// through the C API only (seed 003): a two-block program pipelined over two devices, and
// every bad input refused with a message naming it.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

plx_tensor op1(plx_ir* ir, const char* name, std::vector<plx_tensor> inputs) {
  plx_tensor out = 0;
  size_t n = 0;
  EXPECT_EQ(plx_ir_add_op(ir, name, inputs.data(), inputs.size(), nullptr, 0, &out, 1, &n), PLX_OK) << plx_last_error();
  return out;
}

// x [2] -> B1: neg -> B2: relu -> y.
struct TwoBlocks {
  IrPtr ir = make_ir();
  plx_stream x = 0, y = 0;
  TwoBlocks() {
    const int64_t shape[] = {2};
    plx_tensor xt = 0;
    EXPECT_EQ(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &x, &xt), PLX_OK);
    EXPECT_EQ(plx_ir_begin_block(ir.get(), "B1", -1), PLX_OK);
    const plx_tensor a = op1(ir.get(), "neg", {xt});
    EXPECT_EQ(plx_ir_end_block(ir.get()), PLX_OK);
    EXPECT_EQ(plx_ir_begin_block(ir.get(), "B2", -1), PLX_OK);
    EXPECT_EQ(plx_ir_add_d2h_stream(ir.get(), "y", op1(ir.get(), "relu", {a}), &y), PLX_OK);
    EXPECT_EQ(plx_ir_end_block(ir.get()), PLX_OK);
  }
  /// Session options with B1 on device 0 and B2 on device 1, pipelined, device_iterations 4.
  static plx_session_options pipelined() {
    static const char* b1[] = {"B1"};
    static const char* b2[] = {"B2"};
    static const plx_stage stages[] = {{b1, 1, 0}, {b2, 1, 1}};
    plx_session_options o;
    plx_session_options_init(&o);
    o.stages = stages;
    o.num_stages = 2;
    o.execution_strategy = "pipelined";
    o.device_iterations = 4;
    return o;
  }
};

TEST(CApiPipeline, BlockScopesCheckTheirArguments) {
  IrPtr ir = make_ir();
  EXPECT_PLX_ERROR(plx_ir_begin_block(nullptr, "B1", -1), PLX_ERR_INVALID_ARGUMENT, "plx_ir_begin_block", "ir");
  EXPECT_PLX_ERROR(plx_ir_begin_block(ir.get(), nullptr, -1), PLX_ERR_INVALID_ARGUMENT, "name");
  EXPECT_PLX_ERROR(plx_ir_begin_block(ir.get(), "", -1), PLX_ERR_INVALID_ARGUMENT, "empty");
  EXPECT_PLX_ERROR(plx_ir_begin_block(ir.get(), "B1", -2), PLX_ERR_INVALID_ARGUMENT, "-2");
  EXPECT_PLX_ERROR(plx_ir_end_block(ir.get()), PLX_ERR_INVALID_ARGUMENT, "block: end without a matching begin");
  ASSERT_PLX_OK(plx_ir_begin_block(ir.get(), "B1", 0));
  ASSERT_PLX_OK(plx_ir_end_block(ir.get()));
  EXPECT_PLX_ERROR(plx_ir_begin_block(ir.get(), "B1", 1), PLX_ERR_INVALID_ARGUMENT, "B1");
}

TEST(CApiPipeline, StagesRunOnTheirDevicesAndTheTraceNamesThem) {
  TwoBlocks m;
  plx_session_options o = TwoBlocks::pipelined();
  o.output_mode = PLX_OUTPUT_EVERY_N;
  o.output_return_period = 2;
  o.profile = 1;
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(m.ir.get(), &o, &raw));
  SessionPtr s(raw);
  size_t devices = 0;
  ASSERT_PLX_OK(plx_session_get_num_devices(s.get(), &devices));
  EXPECT_EQ(devices, 2u);
  int64_t shape[4] = {};
  size_t rank = 0;
  ASSERT_PLX_OK(plx_session_get_host_shape(s.get(), m.y, shape, 4, &rank));
  ASSERT_EQ(rank, 2u);  // [4 / 2, 2]
  EXPECT_EQ(shape[0], 2);
  float in[8] = {-1, 1, -2, 2, -3, 3, -4, 4}, out[4] = {};
  const int64_t in_shape[] = {4, 2}, out_shape[] = {2, 2};
  const plx_host_array input{m.x, PLX_DTYPE_FLOAT32, in, in_shape, 2};
  const plx_host_array output{m.y, PLX_DTYPE_FLOAT32, out, out_shape, 2};
  ASSERT_PLX_OK(plx_session_run(s.get(), &input, 1, &output, 1));
  EXPECT_THAT(std::vector<float>(out, out + 4), ::testing::ElementsAre(2, 0, 4, 0));  // micro-batches 1 and 3
  size_t size = 0;
  EXPECT_EQ(plx_session_get_trace(s.get(), nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
  std::string trace(size, '\0');
  ASSERT_PLX_OK(plx_session_get_trace(s.get(), trace.data(), size, &size));
  trace.resize(size - 1);
  const nlohmann::json j = nlohmann::json::parse(trace);
  int forwards = 0;
  for (const auto& e : j["traceEvents"]) forwards += e["ph"] == "X" && e["cat"] == "forward";
  EXPECT_EQ(forwards, 8);  // 4 micro-batches x 2 stages
  EXPECT_EQ(j["otherData"]["busy_fraction"].size(), 2u);
}

plx_status fill_cancels_at_step_1(void*, plx_stream, int64_t step, int64_t, void* buffer, size_t bytes) {
  std::memset(buffer, 0, bytes);
  return step == 1 ? PLX_ERR_CANCELLED : PLX_OK;
}
plx_status fill_zeros(void*, plx_stream, int64_t, int64_t, void* buffer, size_t bytes) {
  std::memset(buffer, 0, bytes);
  return PLX_OK;
}

// A fill callback of stage 0 that returns PLX_ERR_CANCELLED is the run's own failure, not a
// consequence of another device's: stage 1, waiting for stage 0's activations, is woken and
// the run ends with that status (a fuzzed sequence once hung here), with the prefetching
// io threads filling and with the devices filling (prefetch_depth 0).
TEST(CApiPipeline, AStageCallbackThatCancelsEndsTheRunInsteadOfHangingTheNextStage) {
  for (int64_t depth : {0, 2}) {
    TwoBlocks m;
    plx_session_options o = TwoBlocks::pipelined();
    o.prefetch_depth = depth;
    plx_session* raw = nullptr;
    ASSERT_PLX_OK(plx_session_create(m.ir.get(), &o, &raw));
    SessionPtr s(raw);
    plx_stream_callback callbacks[] = {{m.x, fill_cancels_at_step_1, nullptr, nullptr}};
    plx_run_options ro;
    plx_run_options_init(&ro);
    ro.callbacks = callbacks;
    ro.num_callbacks = 1;
    plx_run* run = nullptr;
    ASSERT_PLX_OK(plx_session_run_async(s.get(), &ro, &run));
    SCOPED_TRACE("prefetch_depth " + std::to_string(depth));
    EXPECT_PLX_ERROR(plx_run_wait(run, 30000), PLX_ERR_CANCELLED, "fill callback of stream 'x'");
    plx_run_destroy(run);
    callbacks[0].fill = fill_zeros;
    EXPECT_EQ(plx_session_run_with(s.get(), &ro), PLX_OK) << plx_last_error();  // still usable
  }
}

TEST(CApiPipeline, BadPipelineOptionsAreRefusedNamingTheField) {
  TwoBlocks m;
  plx_session* s = nullptr;
  plx_session_options o;
  plx_session_options_init(&o);
  o.num_stages = 1;  // stages NULL
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "options->stages");
  const char* b1[] = {"B1"};
  const char* b12[] = {"B1", "B2"};
  const plx_stage bad_device[] = {{b12, 2, -5}};
  o.stages = bad_device;
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "options->stages[0].device is -5");
  const plx_stage missing[] = {{b1, 1, 0}};
  o.stages = missing;
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "block 'B2' is in no stage");
  const plx_stage both[] = {{b12, 2, 0}};
  o.stages = both;
  o.gradient_accumulation = 0;
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "gradient_accumulation is 0");
  o.gradient_accumulation = 1;
  o.output_mode = 7;
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "output_mode is 7");
  o.output_mode = PLX_OUTPUT_EVERY_N;
  o.device_iterations = 3;
  o.output_return_period = 2;
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "must divide device_iterations");
  o.output_mode = PLX_OUTPUT_ALL;
  o.execution_strategy = "no_such_strategy";
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_PLUGIN, "libplexus-strategy-no_such_strategy.so");
  o.execution_strategy = "pipelined";
  o.strategy_options = "zigzag";
  EXPECT_PLX_ERROR(plx_session_create(m.ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "zigzag");
  EXPECT_EQ(s, nullptr);
  o.strategy_options = nullptr;
  ASSERT_PLX_OK(plx_session_create(m.ir.get(), &o, &s));
  SessionPtr ok(s);
  EXPECT_PLX_ERROR(plx_session_get_trace(ok.get(), nullptr, 0, nullptr), PLX_ERR_INVALID_ARGUMENT, "profile");
}

}  // namespace
