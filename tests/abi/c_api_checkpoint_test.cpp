// Checkpoints through the C API only (docs/design.md "Checkpoints"): save and load with the
// caller's counters, the step counter, asynchronous saves completing once, and every bad
// argument refused with a status and a message naming it.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

// One float32 variable "w" [4] that every step increments by x ([4] per step), and a
// session with device_iterations 2.
struct Counter {
  IrPtr ir = make_ir();
  plx_stream x = 0;
  plx_tensor w = 0;
  SessionPtr session;
  Counter() {
    const int64_t shape[] = {4};
    const float zeros[4] = {0, 0, 0, 0};
    plx_tensor xt = 0;
    EXPECT_EQ(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &x, &xt), PLX_OK);
    EXPECT_EQ(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, shape, 1, zeros, sizeof zeros, &w), PLX_OK);
    size_t n = 0;
    plx_tensor updated = 0;
    const plx_tensor inputs[] = {w, xt};
    EXPECT_EQ(plx_ir_add_op(ir.get(), "scaled_add_", inputs, 2, nullptr, 0, &updated, 1, &n), PLX_OK)
        << plx_last_error();
    plx_session_options o;
    plx_session_options_init(&o);
    o.device_iterations = 2;
    plx_session* s = nullptr;
    EXPECT_EQ(plx_session_create(ir.get(), &o, &s), PLX_OK) << plx_last_error();
    session.reset(s);
  }
  void run(float value) {
    const std::vector<float> data(8, value);
    const int64_t shape[] = {2, 4};
    const plx_host_array in{x, PLX_DTYPE_FLOAT32, const_cast<float*>(data.data()), shape, 2};
    ASSERT_PLX_OK(plx_session_run(session.get(), &in, 1, nullptr, 0));
  }
  std::vector<float> read() const {
    std::vector<float> v(4);
    EXPECT_EQ(plx_session_read_variable(session.get(), w, v.data(), 16), PLX_OK);
    return v;
  }
};

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("plexus-capi-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(CApiCheckpoint, SaveAndLoadCarryTheStateTheStepAndTheCounters) {
  Counter c;
  c.run(1.0f);
  int64_t step = 0;
  ASSERT_PLX_OK(plx_session_get_step(c.session.get(), &step));
  EXPECT_EQ(step, 2);
  const std::string file = temp_file("a.ckpt");
  plx_checkpoint_options o;
  plx_checkpoint_options_init(&o);
  const char* names[] = {"epoch", "run"};
  int64_t values[] = {4, 9};
  o.num_counters = 2;
  o.counter_names = names;
  o.counter_values = values;
  ASSERT_PLX_OK(plx_session_save_checkpoint(c.session.get(), file.c_str(), &o));
  c.run(1.0f);
  EXPECT_EQ(c.read(), (std::vector<float>(4, 4.0f)));
  values[0] = values[1] = -1;
  ASSERT_PLX_OK(plx_session_load_checkpoint(c.session.get(), file.c_str(), &o));
  EXPECT_EQ(c.read(), (std::vector<float>(4, 2.0f)));
  EXPECT_EQ(values[0], 4);
  EXPECT_EQ(values[1], 9);
  ASSERT_PLX_OK(plx_session_get_step(c.session.get(), &step));
  EXPECT_EQ(step, 2);
  const char* unknown[] = {"nope"};
  o.num_counters = 1;
  o.counter_names = unknown;
  EXPECT_PLX_ERROR(plx_session_load_checkpoint(c.session.get(), file.c_str(), &o), PLX_ERR_NOT_FOUND, "counter 'nope'");
  std::filesystem::remove(file);
}

struct Done {
  std::atomic<int> calls{0};
  std::atomic<plx_status> status{PLX_ERR_INTERNAL};
  std::string message;
};

void on_done(void* user_data, plx_status status, const char* message) {
  auto* d = static_cast<Done*>(user_data);
  d->message = message;
  d->status = status;
  ++d->calls;
}

TEST(CApiCheckpoint, AsyncSavesCompleteOnceWithTheirStatus) {
  Counter c;
  c.run(2.0f);
  Done ok, failed;
  plx_checkpoint_options o;
  plx_checkpoint_options_init(&o);
  o.on_complete = on_done;
  o.user_data = &ok;
  const std::string file = temp_file("async.ckpt");
  plx_run* save = nullptr;
  ASSERT_PLX_OK(plx_session_save_checkpoint_async(c.session.get(), file.c_str(), &o, &save));
  c.run(2.0f);  // training goes on: the snapshot was taken before
  ASSERT_PLX_OK(plx_run_wait(save, -1));
  plx_run_destroy(save);
  EXPECT_EQ(ok.calls.load(), 1);
  EXPECT_EQ(ok.status.load(), PLX_OK);
  ASSERT_PLX_OK(plx_session_load_checkpoint(c.session.get(), file.c_str(), nullptr));
  EXPECT_EQ(c.read(), (std::vector<float>(4, 4.0f)));

  o.user_data = &failed;
  ASSERT_PLX_OK(plx_session_save_checkpoint_async(c.session.get(), "/nonexistent-plexus-dir/x.ckpt", &o, &save));
  EXPECT_PLX_ERROR(plx_run_wait(save, -1), PLX_ERR_IO, "/nonexistent-plexus-dir/x.ckpt");
  plx_run_destroy(save);
  EXPECT_EQ(failed.calls.load(), 1);
  EXPECT_EQ(failed.status.load(), PLX_ERR_IO);
  EXPECT_THAT(failed.message, HasSubstr("cannot create the temporary file"));
  std::filesystem::remove(file);
}

TEST(CApiCheckpoint, BadArgumentsAreRefusedNamingThem) {
  Counter c;
  const std::string file = temp_file("bad.ckpt");
  plx_checkpoint_options o;
  plx_checkpoint_options_init(&o);
  plx_run* save = nullptr;
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(nullptr, file.c_str(), &o), PLX_ERR_INVALID_ARGUMENT, "session");
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(c.session.get(), nullptr, &o), PLX_ERR_INVALID_ARGUMENT, "path");
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(c.session.get(), "", &o), PLX_ERR_INVALID_ARGUMENT, "path is empty");
  EXPECT_PLX_ERROR(plx_session_save_checkpoint_async(c.session.get(), file.c_str(), &o, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "out_save");
  o.level = 0;
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(c.session.get(), file.c_str(), &o), PLX_ERR_INVALID_ARGUMENT,
                   "options->level 0 is not in 1 .. 19");
  o.level = 3;
  o.threads = 0;
  EXPECT_PLX_ERROR(plx_session_save_checkpoint_async(c.session.get(), file.c_str(), &o, &save), PLX_ERR_INVALID_ARGUMENT,
                   "options->threads 0");
  EXPECT_EQ(save, nullptr);
  o.threads = 1;
  o.shuffle = 7;
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(c.session.get(), file.c_str(), &o), PLX_ERR_INVALID_ARGUMENT,
                   "options->shuffle 7");
  o.shuffle = PLX_SHUFFLE_AUTO;
  o.num_counters = 1;
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(c.session.get(), file.c_str(), &o), PLX_ERR_INVALID_ARGUMENT,
                   "options->counter_names");
  o.num_counters = 0;
  o.struct_size = 8;
  EXPECT_PLX_ERROR(plx_session_load_checkpoint(c.session.get(), file.c_str(), &o), PLX_ERR_INVALID_ARGUMENT,
                   "struct_size");
  EXPECT_PLX_ERROR(plx_session_load_checkpoint(c.session.get(), "/nonexistent-plexus-dir/x.ckpt", nullptr), PLX_ERR_IO,
                   "cannot open");
  EXPECT_PLX_ERROR(plx_session_get_step(c.session.get(), nullptr), PLX_ERR_INVALID_ARGUMENT, "out_step");
  EXPECT_FALSE(std::filesystem::exists(file));
}

}  // namespace
