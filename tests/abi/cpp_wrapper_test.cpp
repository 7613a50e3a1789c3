// The C++ wrapper (bindings/cpp/plexus/plexus.hpp) over the calls it gained with C API
// version 10: version and status names, tensor dtypes, asynchronous runs and their Run
// handles (wait with a timeout, cancel, errors as plx::Error), asynchronous checkpoint
// saves, and the launcher's environment; the optimizer helpers (clipping, lr_schedule,
// sgd_momentum_) and op() with more outputs than its first guess.
#include <plexus/plexus.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// x [2] -> y = -x and a variable w [2], device_iterations `iterations`.
struct Negate {
  plx::Ir ir;
  plx::Stream x, y;
  plx::Tensor w;
  plx::Session session;
  explicit Negate(int64_t iterations) : ir(), session(build(iterations)) {}

 private:
  plx::Session build(int64_t iterations) {
    auto [xs, xt] = ir.h2d_stream("x", PLX_DTYPE_FLOAT32, {2});
    x = xs;
    y = ir.d2h_stream("y", ir.op1("neg", {xt}));
    w = ir.variable<float>("w", {2}, {5, 6});
    plx::SessionOptions o;
    o.device_iterations = iterations;
    return plx::Session(ir, o);
  }
};

// A fill callback that waits until `open` is set, then writes [step, 1].
struct Gate {
  std::atomic<bool> open{false};
  static plx_status fill(void* user_data, plx_stream, int64_t step, int64_t, void* buffer, size_t bytes) {
    auto* gate = static_cast<Gate*>(user_data);
    while (!gate->open.load()) std::this_thread::sleep_for(1ms);
    const float v[2] = {static_cast<float>(step), 1.0f};
    if (bytes != sizeof v) return PLX_ERR_SHAPE_MISMATCH;
    std::memcpy(buffer, v, sizeof v);
    return PLX_OK;
  }
};

plx_status fill_slowly(void*, plx_stream, int64_t, int64_t, void* buffer, size_t bytes) {
  std::this_thread::sleep_for(2ms);
  std::memset(buffer, 0, bytes);
  return PLX_OK;
}

plx_status fill_fails(void*, plx_stream, int64_t, int64_t, void*, size_t) { return PLX_ERR_IO; }

TEST(CppWrapper, VersionAndStatusNames) {
  EXPECT_EQ(plx::version(), static_cast<uint32_t>(PLX_API_VERSION));
  EXPECT_STREQ(plx::status_name(PLX_ERR_TIMEOUT), "PLX_ERR_TIMEOUT");
  EXPECT_STREQ(plx::status_name(12345), "PLX_ERR_UNKNOWN_STATUS");
}

TEST(CppWrapper, TensorDtype) {
  plx::Ir ir;
  const plx::Tensor f = ir.variable<float>("f", {2}, {1, 2});
  const plx::Tensor i = ir.variable<int32_t>("i", {3}, {1, 2, 3});
  EXPECT_EQ(ir.dtype(f), PLX_DTYPE_FLOAT32);
  EXPECT_EQ(ir.dtype(i), PLX_DTYPE_INT32);
  try {
    (void)ir.dtype(plx::Tensor{});
    FAIL() << "id 0 was accepted";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("plx_ir_get_tensor_type"));
  }
}

// The optimizer helpers: clip_by_global_norm_ over 10 gradients (11 outputs, more than
// op()'s first guess of 8), lr_schedule feeding sgd_momentum_'s lr tensor.
TEST(CppWrapper, ClippingScheduleAndSgdHelpers) {
  plx::Ir ir;
  std::vector<plx::Tensor> grads;
  for (int i = 0; i < 10; ++i) grads.push_back(ir.variable<float>("g" + std::to_string(i), {1}, {i == 0 ? 3.0f : 0.0f}));
  grads.push_back(ir.variable<float>("g10", {1}, {4.0f}));  // norm 5
  const std::vector<plx::Tensor> clipped = ir.clip_by_global_norm_(grads, 1.0, 0.0);
  ASSERT_EQ(clipped.size(), 12u);
  const plx::Stream norm = ir.d2h_stream("norm", clipped[0]);
  const plx::Tensor w = ir.variable<float>("w", {1}, {1.0f}), buf = ir.variable<float>("buf", {1}, {0.0f});
  const plx::Tensor step = ir.variable<float>("step", {}, {0.0f});
  ir.sgd_momentum_(w, grads[0], buf, step, ir.lr_schedule(step, 2, 10, 0.5, 0.0));
  plx::Session session(ir, plx::SessionOptions{});
  std::vector<float> norm_out(1);
  session.run({}, {plx::HostArray(norm, norm_out.data(), {})});
  EXPECT_FLOAT_EQ(norm_out[0], 5.0f);
  EXPECT_FLOAT_EQ(session.read<float>(grads[0])[0], 0.6f);   // 3 / 5
  EXPECT_FLOAT_EQ(session.read<float>(grads[10])[0], 0.8f);  // 4 / 5
  EXPECT_FLOAT_EQ(session.read<float>(buf)[0], 0.6f);        // the first step's buffer is the gradient
  EXPECT_FLOAT_EQ(session.read<float>(w)[0], 1.0f - 0.25f * 0.6f);  // lr 0.5 * (0 + 1) / 2
  EXPECT_EQ(session.read<float>(step)[0], 1.0f);
}

// A run waiting for its data: wait(10 ms) says "still going", the outputs arrive once the
// gate opens, and wait() then returns.
TEST(CppWrapper, RunAsyncWaitsWithATimeout) {
  Negate m(3);
  Gate gate;
  std::vector<float> out(6, 0.0f);
  const plx::HostArray out_array(m.y, out.data(), {3, 2});
  const plx_host_array output = out_array.c();
  const plx_stream_callback callback{m.x.id, Gate::fill, nullptr, &gate};
  plx::RunOptions o;
  o.outputs = &output;
  o.num_outputs = 1;
  o.callbacks = &callback;
  o.num_callbacks = 1;
  plx::Run run = m.session.run_async(o);
  EXPECT_FALSE(run.wait(10ms));
  gate.open = true;
  EXPECT_TRUE(run.wait(10s));
  run.wait();  // an ended run stays ended
  EXPECT_EQ(out, (std::vector<float>{-0.0f, -1, -1, -1, -2, -1}));
  const plx_stream_stats stats = m.session.stream_stats();
  EXPECT_EQ(stats.h2d_bytes, 3u * 8u);
  EXPECT_EQ(stats.d2h_bytes, 3u * 8u);
}

TEST(CppWrapper, RunErrorsAndCancel) {
  Negate m(2000);
  const plx_stream_callback failing{m.x.id, fill_fails, nullptr, nullptr};
  plx::RunOptions o;
  o.callbacks = &failing;
  o.num_callbacks = 1;
  plx::Run failed = m.session.run_async(o);
  try {
    failed.wait();
    FAIL() << "a failing fill callback did not fail the run";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_IO);
    EXPECT_THAT(e.what(), HasSubstr("'x'"));
  }

  const plx_stream_callback slow{m.x.id, fill_slowly, nullptr, nullptr};
  o.callbacks = &slow;
  plx::Run run = m.session.run_async(o);  // 2000 micro-batches of 2 ms each
  EXPECT_FALSE(run.wait(5ms));
  run.cancel();
  try {
    EXPECT_TRUE(run.wait(30s));
    FAIL() << "a cancelled run ended well";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_CANCELLED);
  }

  plx::Run moved = std::move(run);  // move-only: the moved-from Run destroys nothing
  plx::RunOptions bad;
  try {
    (void)m.session.run_async(bad);  // no input for x
    FAIL() << "a run without input was started";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("'x'"));
  }
}

TEST(CppWrapper, SaveCheckpointAsync) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("plexus_cpp_wrapper_" + std::to_string(::getpid()) + ".ckpt");
  Negate m(1);
  plx::Run save = m.session.save_checkpoint_async(path.string(), {{"epoch", 7}});
  save.wait();
  m.session.write<float>(m.w, {0, 0});
  const auto counters = m.session.load_checkpoint(path.string(), {"epoch"});
  EXPECT_EQ(counters.at("epoch"), 7);
  EXPECT_EQ(m.session.read<float>(m.w), (std::vector<float>{5, 6}));
  std::filesystem::remove(path);

  try {
    (void)m.session.save_checkpoint_async("");
    FAIL() << "an empty path was accepted";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("path is empty"));
  }
  plx::Run failing = m.session.save_checkpoint_async("/nonexistent-dir/x.ckpt");
  try {
    failing.wait();
    FAIL() << "a save into a missing folder succeeded";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_IO);
  }
}

TEST(CppWrapper, WorkersReadEnvironment) {
  const plx::WorkerPlace alone = plx::workers_read_environment();
  EXPECT_EQ(alone.count, 1);
  EXPECT_EQ(alone.index, 0);
  ::setenv("PMI_SIZE", "4", 1);
  ::setenv("PMI_RANK", "3", 1);
  const plx::WorkerPlace place = plx::workers_read_environment();
  ::unsetenv("PMI_SIZE");
  ::unsetenv("PMI_RANK");
  EXPECT_EQ(place.count, 4);
  EXPECT_EQ(place.index, 3);
}

}  // namespace
