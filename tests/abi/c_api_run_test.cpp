// Stream callbacks, asynchronous runs and cancellation through the C API only (docs/design.md
// "Streaming layer"): a callback's failure becomes the run's status with a message
// naming the stream, completion callbacks fire once, and bad requests are refused.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

// x [2] -> y = -x, device_iterations 4.
struct Negate {
  IrPtr ir = make_ir();
  plx_stream x = 0, y = 0;
  SessionPtr session;
  explicit Negate(int64_t depth) {
    const int64_t shape[] = {2};
    plx_tensor xt = 0, yt = 0;
    size_t n = 0;
    EXPECT_EQ(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &x, &xt), PLX_OK);
    EXPECT_EQ(plx_ir_add_op(ir.get(), "neg", &xt, 1, nullptr, 0, &yt, 1, &n), PLX_OK);
    EXPECT_EQ(plx_ir_add_d2h_stream(ir.get(), "y", yt, &y), PLX_OK);
    plx_session_options o;
    plx_session_options_init(&o);
    o.device_iterations = 4;
    o.prefetch_depth = depth;
    plx_session* s = nullptr;
    EXPECT_EQ(plx_session_create(ir.get(), &o, &s), PLX_OK) << plx_last_error();
    session.reset(s);
  }
};

struct Sink {
  std::vector<float> values;
  std::atomic<int> completions{0};
  plx_status last_status = PLX_OK;
  std::string last_message;
};

plx_status fill_step(void*, plx_stream, int64_t step, int64_t, void* buffer, size_t bytes) {
  const float v[2] = {static_cast<float>(step), 1.0f};
  if (bytes != sizeof v) return PLX_ERR_SHAPE_MISMATCH;
  std::memcpy(buffer, v, sizeof v);
  return PLX_OK;
}
plx_status fill_fails(void*, plx_stream, int64_t step, int64_t, void*, size_t) {
  return step == 2 ? PLX_ERR_IO : PLX_OK;
}
plx_status fill_slowly(void*, plx_stream, int64_t, int64_t, void* buffer, size_t bytes) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::memset(buffer, 0, bytes);
  return PLX_OK;
}
plx_status deliver(void* user, plx_stream, int64_t, int64_t, const void* data, size_t bytes) {
  auto* sink = static_cast<Sink*>(user);
  const auto* f = static_cast<const float*>(data);
  sink->values.insert(sink->values.end(), f, f + bytes / sizeof(float));
  return PLX_OK;
}
void complete(void* user, plx_status status, const char* message) {
  auto* sink = static_cast<Sink*>(user);
  sink->last_status = status;
  sink->last_message = message;
  ++sink->completions;
}

TEST(CApiRun, CallbacksFeedAndReceiveEveryStepAndCompletionFiresOnce) {
  for (int64_t depth : {0, 2}) {
    Negate m(depth);
    Sink sink;
    const plx_stream_callback callbacks[] = {{m.x, fill_step, nullptr, nullptr}, {m.y, nullptr, deliver, &sink}};
    plx_run_options o;
    plx_run_options_init(&o);
    o.callbacks = callbacks;
    o.num_callbacks = 2;
    o.on_complete = complete;
    o.user_data = &sink;
    plx_run* run = nullptr;
    ASSERT_PLX_OK(plx_session_run_async(m.session.get(), &o, &run));
    EXPECT_EQ(plx_run_wait(run, -1), PLX_OK);
    EXPECT_EQ(plx_run_wait(run, 0), PLX_OK);  // waiting again is fine
    plx_run_destroy(run);
    EXPECT_EQ(sink.values, (std::vector<float>{-0.f, -1, -1, -1, -2, -1, -3, -1}));
    EXPECT_EQ(sink.completions.load(), 1);
    EXPECT_EQ(sink.last_status, PLX_OK);
    plx_stream_stats st{};
    st.struct_size = sizeof st;
    ASSERT_PLX_OK(plx_session_get_stream_stats(m.session.get(), &st));
    EXPECT_EQ(st.h2d_bytes, 4 * 8);
    EXPECT_EQ(st.d2h_bytes, 4 * 8);
    EXPECT_EQ(st.prefetch_depth, depth);
  }
}

TEST(CApiRun, AFailingCallbackEndsTheRunWithItsStatusNamingTheStream) {
  Negate m(2);
  Sink sink;
  const plx_stream_callback callbacks[] = {{m.x, fill_fails, nullptr, nullptr}};
  plx_run_options o;
  plx_run_options_init(&o);
  o.callbacks = callbacks;
  o.num_callbacks = 1;
  o.on_complete = complete;
  o.user_data = &sink;
  EXPECT_PLX_ERROR(plx_session_run_with(m.session.get(), &o), PLX_ERR_IO, "fill callback of stream 'x'",
                   "PLX_ERR_IO", "step 2");
  EXPECT_EQ(sink.completions.load(), 1);
  EXPECT_EQ(sink.last_status, PLX_ERR_IO);
  EXPECT_THAT(sink.last_message, HasSubstr("stream 'x'"));
  const plx_stream_callback good[] = {{m.x, fill_step, nullptr, nullptr}};
  o.callbacks = good;
  o.on_complete = nullptr;
  EXPECT_EQ(plx_session_run_with(m.session.get(), &o), PLX_OK);  // still usable
}

TEST(CApiRun, CancelAndTimeoutsAreStatuses) {
  Negate m(2);
  const plx_stream_callback callbacks[] = {{m.x, fill_slowly, nullptr, nullptr}};
  plx_run_options o;
  plx_run_options_init(&o);
  o.callbacks = callbacks;
  o.num_callbacks = 1;
  plx_run* run = nullptr;
  ASSERT_PLX_OK(plx_session_run_async(m.session.get(), &o, &run));
  EXPECT_PLX_ERROR(plx_run_wait(run, 10), PLX_ERR_STILL_RUNNING, "still going after 10 ms");
  ASSERT_PLX_OK(plx_session_cancel(m.session.get()));
  EXPECT_PLX_ERROR(plx_run_wait(run, 2000), PLX_ERR_CANCELLED, "cancelled");
  plx_run_destroy(run);
}

// A fill callback that holds its run until the test opens the gate, and says it has begun.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool entered = false, open = false;
  void wait_entered() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return entered; });
  }
  void release() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};
plx_status fill_at_gate(void* user, plx_stream, int64_t, int64_t, void* buffer, size_t bytes) {
  auto* gate = static_cast<Gate*>(user);
  std::unique_lock lock(gate->mutex);
  gate->entered = true;
  gate->changed.notify_all();
  gate->changed.wait(lock, [&] { return gate->open; });
  std::memset(buffer, 0, bytes);
  return PLX_OK;
}

plx_run* start(plx_session* session, const plx_stream_callback* callbacks, size_t n) {
  plx_run_options o;
  plx_run_options_init(&o);
  o.callbacks = callbacks;
  o.num_callbacks = n;
  plx_run* run = nullptr;
  EXPECT_EQ(plx_session_run_async(session, &o, &run), PLX_OK) << plx_last_error();
  return run;
}

// plx_run_cancel ends one run: a queued one at once, the running one when it wakes; the
// run queued behind both still runs, with every value.
TEST(CApiRun, CancellingOneRunLeavesTheOthersRunning) {
  Negate m(0);
  Gate gate;
  Sink sink;
  const plx_stream_callback held[] = {{m.x, fill_at_gate, nullptr, &gate}};
  const plx_stream_callback normal[] = {{m.x, fill_step, nullptr, nullptr}, {m.y, nullptr, deliver, &sink}};
  plx_run* running = start(m.session.get(), held, 1);
  gate.wait_entered();
  plx_run* queued = start(m.session.get(), normal, 2);
  plx_run* last = start(m.session.get(), normal, 2);
  ASSERT_PLX_OK(plx_run_cancel(queued));
  EXPECT_PLX_ERROR(plx_run_wait(queued, 0), PLX_ERR_CANCELLED, "plx_run_cancel");  // ended at once
  ASSERT_PLX_OK(plx_run_cancel(running));
  gate.release();
  EXPECT_PLX_ERROR(plx_run_wait(running, -1), PLX_ERR_CANCELLED, "cancelled");
  EXPECT_EQ(plx_run_wait(last, -1), PLX_OK) << plx_last_error();
  EXPECT_EQ(sink.values, (std::vector<float>{-0.f, -1, -1, -1, -2, -1, -3, -1}));  // only the last run's
  ASSERT_PLX_OK(plx_run_cancel(last));  // ended: keeps its status
  EXPECT_EQ(plx_run_wait(last, 0), PLX_OK);
  EXPECT_EQ(plx_run_cancel(nullptr), PLX_ERR_INVALID_ARGUMENT);
  for (plx_run* r : {running, queued, last}) plx_run_destroy(r);
}

// The two timeouts told apart. A run held at its data: plx_run_wait's own limit passing is
// PLX_ERR_STILL_RUNNING and the run goes on. A collective timing out (injected: the mock
// plugin's collectives time out at once, as a missing member makes them) is the run's own
// status, PLX_ERR_TIMEOUT, with the plugin's message; the session stays usable.
TEST(CApiRun, AWaitsLimitAndACollectivesTimeoutAreDifferentStatuses) {
  const char* path = std::getenv("PLEXUS_PLUGIN_PATH");
  const std::string with_mocks = std::string(PLEXUS_MOCK_PLUGIN_DIR) + (path ? std::string(":") + path : "");
  ASSERT_EQ(setenv("PLEXUS_PLUGIN_PATH", with_mocks.c_str(), 1), 0);
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 2));
  const int64_t shape[] = {2};
  plx_stream xs = 0, ys = 0;
  plx_tensor x = 0, y = 0;
  ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &xs, &x));
  ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "replicated_all_reduce", &x, 1, nullptr, 0, &y, 1, nullptr));
  ASSERT_PLX_OK(plx_ir_add_d2h_stream(ir.get(), "y", y, &ys));
  plx_session_options so;
  plx_session_options_init(&so);
  so.collectives_plugin = "mock_timing_out";
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), &so, &raw));
  SessionPtr session(raw);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Gate gate;
    const plx_stream_callback held[] = {{xs, fill_at_gate, nullptr, &gate}};
    plx_run* run = start(session.get(), held, 1);
    gate.wait_entered();
    EXPECT_PLX_ERROR(plx_run_wait(run, 10), PLX_ERR_STILL_RUNNING, "still going after 10 ms");
    gate.release();
    EXPECT_PLX_ERROR(plx_run_wait(run, -1), PLX_ERR_TIMEOUT, "never arrived");
    plx_run_destroy(run);
  }
}

TEST(CApiRun, BadRunOptionsAreRefusedNamingTheField) {
  Negate m(2);
  plx_run* run = nullptr;
  plx_run_options o;
  plx_run_options_init(&o);
  EXPECT_PLX_ERROR(plx_session_run_async(m.session.get(), nullptr, &run), PLX_ERR_INVALID_ARGUMENT, "options");
  EXPECT_PLX_ERROR(plx_session_run_async(m.session.get(), &o, &run), PLX_ERR_INVALID_ARGUMENT,
                   "input stream 'x' has no host array and no callback");
  o.num_callbacks = 1;
  EXPECT_PLX_ERROR(plx_session_run_async(m.session.get(), &o, &run), PLX_ERR_INVALID_ARGUMENT, "options->callbacks");
  const plx_stream_callback twice[] = {{m.x, fill_step, nullptr, nullptr}, {m.x, fill_step, nullptr, nullptr}};
  o.callbacks = twice;
  o.num_callbacks = 2;
  EXPECT_PLX_ERROR(plx_session_run_async(m.session.get(), &o, &run), PLX_ERR_INVALID_ARGUMENT, "has two callbacks");
  const plx_stream_callback wrong[] = {{m.y, fill_step, nullptr, nullptr}};
  o.callbacks = wrong;
  o.num_callbacks = 1;
  EXPECT_PLX_ERROR(plx_session_run_async(m.session.get(), &o, &run), PLX_ERR_INVALID_ARGUMENT,
                   "device-to-host stream needs a deliver");
  o.struct_size = 8;
  EXPECT_PLX_ERROR(plx_session_run_async(m.session.get(), &o, &run), PLX_ERR_INVALID_ARGUMENT, "struct_size");
  EXPECT_EQ(run, nullptr);
  EXPECT_PLX_ERROR(plx_run_wait(nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "run");
  plx_run_destroy(nullptr);
  plx_stream_stats st{};
  EXPECT_PLX_ERROR(plx_session_get_stream_stats(m.session.get(), &st), PLX_ERR_INVALID_ARGUMENT, "struct_size");
}

// Found by the C API sequence fuzzer (tests/abi/sequence_fuzz): a host-to-device stream that
// no op reads was never taken from its queue, so with more micro-batches than
// prefetch_depth the run never ended. It is loaded like any other: the run ends, and a
// device-to-host stream of its tensor returns what was fed.
TEST(CApiRun, AStreamNoOpReadsDoesNotStallTheRun) {
  for (int64_t depth : {0, 1, 2, 3}) {
    SCOPED_TRACE("prefetch_depth " + std::to_string(depth));
    IrPtr ir = make_ir();
    const int64_t shape[] = {2};
    const float one = 1.0f;
    plx_stream x = 0, unread = 0, x_out = 0, c_out = 0;
    plx_tensor xt = 0, ut = 0, c = 0, yt = 0;
    size_t n = 0;
    ASSERT_PLX_OK(plx_ir_add_constant(ir.get(), PLX_DTYPE_FLOAT32, nullptr, 0, &one, sizeof one, &c));
    ASSERT_PLX_OK(plx_ir_add_d2h_stream(ir.get(), "c", c, &c_out));
    ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "unread", PLX_DTYPE_FLOAT32, nullptr, 0, &unread, &ut));
    ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &x, &xt));
    ASSERT_PLX_OK(plx_ir_add_d2h_stream(ir.get(), "x_out", xt, &x_out));  // x is read by no op either
    ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "neg", &c, 1, nullptr, 0, &yt, 1, &n));
    plx_session_options o;
    plx_session_options_init(&o);
    o.device_iterations = 4;
    o.prefetch_depth = depth;
    o.threads_per_device = 1;
    plx_session* s = nullptr;
    ASSERT_PLX_OK(plx_session_create(ir.get(), &o, &s));
    SessionPtr session(s);
    const int64_t unread_shape[] = {4}, x_shape[] = {4, 2};
    std::vector<float> unread_data = {1, 2, 3, 4}, x_data = {0, 1, 2, 3, 4, 5, 6, 7}, x_back(8, -1.0f);
    const plx_host_array inputs[] = {{unread, PLX_DTYPE_FLOAT32, unread_data.data(), unread_shape, 1},
                                     {x, PLX_DTYPE_FLOAT32, x_data.data(), x_shape, 2}};
    const plx_host_array outputs[] = {{x_out, PLX_DTYPE_FLOAT32, x_back.data(), x_shape, 2}};
    for (int run = 0; run < 2; ++run) {
      ASSERT_PLX_OK(plx_session_run(session.get(), inputs, 2, outputs, 1));
      EXPECT_EQ(x_back, x_data);
    }
  }
}

// Found by the C API sequence fuzzer: after autodiff of a loss that is itself a scalar stream
// (no backward op), the program was taken for inference, so its update step never ran and the
// stream only an update op read was never taken from its queue: with prefetch_depth >= 1
// the run never ended. Autodiff makes a training program: the update op runs once per
// iteration and reads that iteration's micro-batch.
TEST(CApiRun, AnUpdateOpReadingAStreamRunsEveryIteration) {
  for (int64_t depth : {0, 1, 2}) {
    SCOPED_TRACE("prefetch_depth " + std::to_string(depth));
    IrPtr ir = make_ir();
    plx_stream x = 0, x_out = 0;
    plx_tensor xt = 0, grad = 0, doubled = 0;
    size_t n = 0;
    ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, nullptr, 0, &x, &xt));
    ASSERT_PLX_OK(plx_ir_autodiff(ir.get(), xt, &xt, 1, &grad));
    const plx_tensor both[] = {xt, xt};
    ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "scaled_add_", both, 2, nullptr, 0, &doubled, 1, &n));
    ASSERT_PLX_OK(plx_ir_add_d2h_stream(ir.get(), "x_out", xt, &x_out));
    plx_session_options o;
    plx_session_options_init(&o);
    o.device_iterations = 3;
    o.prefetch_depth = depth;
    o.threads_per_device = 1;
    plx_session* s = nullptr;
    ASSERT_PLX_OK(plx_session_create(ir.get(), &o, &s));
    SessionPtr session(s);
    const int64_t run_shape[] = {3};
    std::vector<float> x_data = {1, 2, 3}, x_back(3, -1.0f);
    const plx_host_array inputs[] = {{x, PLX_DTYPE_FLOAT32, x_data.data(), run_shape, 1}};
    const plx_host_array outputs[] = {{x_out, PLX_DTYPE_FLOAT32, x_back.data(), run_shape, 1}};
    ASSERT_PLX_OK(plx_session_run(session.get(), inputs, 1, outputs, 1));
    EXPECT_EQ(x_back, (std::vector<float>{2, 4, 6}));
  }
}

}  // namespace
