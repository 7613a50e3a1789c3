// The C API under misuse, and a few end-to-end runs, through libplexus.so only
// (<plexus/plexus.h>; no core header). Every misuse returns one specific status and a
// message naming what is wrong, leaves out-parameters and the IR untouched, and never
// crashes (docs/design.md, "The C ABI").
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

plx_session_options options_with(int64_t device_iterations) {
  plx_session_options o;
  plx_session_options_init(&o);
  o.device_iterations = device_iterations;
  o.threads_per_device = 1;
  return o;
}

SessionPtr make_session(const plx_ir* ir, int64_t device_iterations = 1) {
  const plx_session_options o = options_with(device_iterations);
  plx_session* s = nullptr;
  EXPECT_EQ(plx_session_create(ir, &o, &s), PLX_OK) << plx_last_error();
  return SessionPtr(s);
}

plx_tensor variable(plx_ir* ir, const char* name, const std::vector<int64_t>& shape, const std::vector<float>& v) {
  plx_tensor t = 0;
  EXPECT_EQ(plx_ir_add_variable(ir, name, PLX_DTYPE_FLOAT32, shape.data(), shape.size(), v.data(),
                                v.size() * sizeof(float), &t),
            PLX_OK)
      << plx_last_error();
  return t;
}

plx_tensor constant(plx_ir* ir, const std::vector<int64_t>& shape, const std::vector<float>& v) {
  plx_tensor t = 0;
  EXPECT_EQ(
      plx_ir_add_constant(ir, PLX_DTYPE_FLOAT32, shape.data(), shape.size(), v.data(), v.size() * sizeof(float), &t),
      PLX_OK)
      << plx_last_error();
  return t;
}

struct H2d {
  plx_stream stream = 0;
  plx_tensor tensor = 0;
};

H2d h2d(plx_ir* ir, const char* name, plx_dtype dtype, const std::vector<int64_t>& shape) {
  H2d s;
  EXPECT_EQ(plx_ir_add_h2d_stream(ir, name, dtype, shape.data(), shape.size(), &s.stream, &s.tensor), PLX_OK)
      << plx_last_error();
  return s;
}

plx_stream d2h(plx_ir* ir, const char* name, plx_tensor t) {
  plx_stream s = 0;
  EXPECT_EQ(plx_ir_add_d2h_stream(ir, name, t, &s), PLX_OK) << plx_last_error();
  return s;
}

plx_tensor op1(plx_ir* ir, const char* op, const std::vector<plx_tensor>& inputs,
               const std::vector<plx_attr>& attrs = {}) {
  plx_tensor out = 0;
  size_t n = 0;
  EXPECT_EQ(plx_ir_add_op(ir, op, inputs.data(), inputs.size(), attrs.data(), attrs.size(), &out, 1, &n), PLX_OK)
      << plx_last_error();
  EXPECT_EQ(n, 1u);
  return out;
}

plx_host_array host(plx_stream s, float* data, const std::vector<int64_t>& shape) {
  return plx_host_array{s, PLX_DTYPE_FLOAT32, data, shape.data(), shape.size()};
}

std::string report_of(const plx_session* s) {
  size_t size = 0;
  EXPECT_EQ(plx_session_get_report(s, nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
  std::string text(size, '\0');
  EXPECT_EQ(plx_session_get_report(s, text.data(), text.size(), &size), PLX_OK) << plx_last_error();
  text.resize(size == 0 ? 0 : size - 1);
  return text;
}

// ---- A fixture IR: a[2,3], b[4,5], w[3,2] variables, c[2,3] constant, x[2,3] stream. --

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ir_ = make_ir();
    ASSERT_TRUE(ir_);
    a_ = variable(ir_.get(), "a", {2, 3}, {1, 2, 3, 4, 5, 6});
    b_ = variable(ir_.get(), "b", {4, 5}, std::vector<float>(20, 1.0f));
    w_ = variable(ir_.get(), "w", {3, 2}, {1, 0, 0, 1, 1, 1});
    c_ = constant(ir_.get(), {2, 3}, {1, 1, 1, 1, 1, 1});
    const H2d x = h2d(ir_.get(), "x", PLX_DTYPE_FLOAT32, {2, 3});
    x_ = x.stream;
    xt_ = x.tensor;
    y_ = op1(ir_.get(), "matmul", {xt_, w_});
    ys_ = d2h(ir_.get(), "y", y_);
  }

  plx_ir* ir() const { return ir_.get(); }

  IrPtr ir_;
  plx_tensor a_ = 0, b_ = 0, w_ = 0, c_ = 0, xt_ = 0, y_ = 0;
  plx_stream x_ = 0, ys_ = 0;
};

// ---- Status, version, last error -------------------------------------------------------

TEST(CApiStatus, EveryStatusHasItsName) {
  const std::vector<std::pair<plx_status, std::string>> names = {
      {PLX_OK, "PLX_OK"},
      {PLX_ERR_INVALID_ARGUMENT, "PLX_ERR_INVALID_ARGUMENT"},
      {PLX_ERR_UNKNOWN_OP, "PLX_ERR_UNKNOWN_OP"},
      {PLX_ERR_SHAPE_MISMATCH, "PLX_ERR_SHAPE_MISMATCH"},
      {PLX_ERR_DTYPE_MISMATCH, "PLX_ERR_DTYPE_MISMATCH"},
      {PLX_ERR_NOT_FOUND, "PLX_ERR_NOT_FOUND"},
      {PLX_ERR_OUT_OF_DEVICE_MEMORY, "PLX_ERR_OUT_OF_DEVICE_MEMORY"},
      {PLX_ERR_INVALID_GROUPING, "PLX_ERR_INVALID_GROUPING"},
      {PLX_ERR_IO, "PLX_ERR_IO"},
      {PLX_ERR_BAD_FORMAT, "PLX_ERR_BAD_FORMAT"},
      {PLX_ERR_RUNTIME, "PLX_ERR_RUNTIME"},
      {PLX_ERR_PLUGIN, "PLX_ERR_PLUGIN"},
      {PLX_ERR_TIMEOUT, "PLX_ERR_TIMEOUT"},
      {PLX_ERR_CANCELLED, "PLX_ERR_CANCELLED"},
      {PLX_ERR_UNSUPPORTED, "PLX_ERR_UNSUPPORTED"},
      {PLX_ERR_BUFFER_TOO_SMALL, "PLX_ERR_BUFFER_TOO_SMALL"},
      {PLX_ERR_STILL_RUNNING, "PLX_ERR_STILL_RUNNING"},
      {PLX_ERR_INTERNAL, "PLX_ERR_INTERNAL"},
  };
  for (const auto& [status, name] : names) EXPECT_EQ(plx_status_name(status), name) << status;
  for (plx_status unknown : {-1, 17, 42, 98, 100, INT32_MIN, INT32_MAX}) {
    EXPECT_STREQ(plx_status_name(unknown), "PLX_ERR_UNKNOWN_STATUS") << unknown;
  }
}

TEST(CApiStatus, VersionMatchesHeader) { EXPECT_EQ(plx_version(), static_cast<uint32_t>(PLX_API_VERSION)); }

TEST(CApiStatus, LastErrorIsPerThread) {
  EXPECT_EQ(plx_ir_create(nullptr), PLX_ERR_INVALID_ARGUMENT);
  const std::string main_message = plx_last_error();
  EXPECT_THAT(main_message, HasSubstr("out_ir is NULL"));
  std::string fresh, after;
  std::thread t([&] {
    fresh = plx_last_error();
    EXPECT_EQ(plx_session_create(nullptr, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT);
    after = plx_last_error();
  });
  t.join();
  EXPECT_EQ(fresh, "");
  EXPECT_THAT(after, HasSubstr("plx_session_create"));
  EXPECT_EQ(plx_last_error(), main_message);
}

TEST(CApiStatus, DestroyFunctionsAcceptNull) {
  plx_ir_destroy(nullptr);
  plx_session_destroy(nullptr);
  plx_dataset_destroy(nullptr);
  plx_session_options_init(nullptr);
  SUCCEED();
}

TEST(CApiStatus, OptionsInitSetsDefaults) {
  plx_session_options o;
  std::memset(&o, 0xFF, sizeof o);
  plx_session_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(plx_session_options));
  EXPECT_EQ(o.device_iterations, 1);
  EXPECT_EQ(o.device_memory_bytes, 0);
  EXPECT_EQ(o.threads_per_device, 0);
}

// ---- NULL handles and out-pointers -----------------------------------------------------

TEST_F(CApi, NullArgumentsOfIrFunctions) {
  const int64_t shape[] = {2};
  const float data[] = {1, 2};
  plx_tensor t = kSentinelId;
  plx_stream s = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_create(nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_ir_create", "out_ir is NULL");

  EXPECT_PLX_ERROR(plx_ir_add_variable(nullptr, "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_variable", "ir is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), nullptr, PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_variable", "name is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_variable", "out_tensor is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, nullptr, 1, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "'v'", "shape is NULL but rank is 1");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, shape, 1, nullptr, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_variable", "data is NULL");

  EXPECT_PLX_ERROR(plx_ir_add_constant(nullptr, PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_constant", "ir is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_constant(ir(), PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_constant", "out_tensor is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_constant(ir(), PLX_DTYPE_FLOAT32, shape, 1, nullptr, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_constant", "data is NULL");

  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(nullptr, "s", PLX_DTYPE_FLOAT32, shape, 1, &s, &t), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_h2d_stream", "ir is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), nullptr, PLX_DTYPE_FLOAT32, shape, 1, &s, &t), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_h2d_stream", "name is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "s", PLX_DTYPE_FLOAT32, shape, 1, nullptr, &t), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_h2d_stream", "out_stream is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "s", PLX_DTYPE_FLOAT32, shape, 1, &s, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_h2d_stream", "out_tensor is NULL");

  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(nullptr, "o", a_, &s), PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_d2h_stream",
                   "ir is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(ir(), nullptr, a_, &s), PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_d2h_stream",
                   "name is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(ir(), "o", a_, nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_ir_add_d2h_stream",
                   "out_stream is NULL");

  EXPECT_PLX_ERROR(plx_ir_get_tensor_type(nullptr, a_, nullptr, nullptr, 0, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_get_tensor_type", "ir is NULL");
  EXPECT_EQ(t, kSentinelId);
  EXPECT_EQ(s, kSentinelId);
}

TEST_F(CApi, NullArgumentsOfAddOpAndAutodiff) {
  const plx_tensor ins[] = {a_, a_};
  plx_tensor outs[2] = {kSentinelId, kSentinelId};
  size_t n = kSentinelCount;
  EXPECT_PLX_ERROR(plx_ir_add_op(nullptr, "add", ins, 2, nullptr, 0, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_op", "ir is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), nullptr, ins, 2, nullptr, 0, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_op", "op is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", nullptr, 2, nullptr, 0, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_op", "inputs is NULL");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, nullptr, 1, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_op", "attrs is NULL");
  // "outputs may be NULL when max_outputs is 0": NULL with room for 2 is an error, not a crash.
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, nullptr, 0, nullptr, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "plx_ir_add_op", "outputs is NULL");
  const plx_attr unnamed = plx_attr_int(nullptr, 1);
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 2, &unnamed, 1, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "op 'matmul'", "attribute 0 has a NULL name");
  const plx_attr null_ints = plx_attr_ints("perm", nullptr, 2);
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "transpose", ins, 1, &null_ints, 1, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "attribute 'perm' has NULL ints");
  const plx_attr null_string = plx_attr_string("mode", nullptr);
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, &null_string, 1, outs, 2, &n), PLX_ERR_INVALID_ARGUMENT,
                   "attribute 'mode' has a NULL string");
  EXPECT_EQ(outs[0], kSentinelId);
  EXPECT_EQ(outs[1], kSentinelId);
  EXPECT_EQ(n, kSentinelCount);

  const plx_tensor loss = op1(ir(), "reduce_sum", {y_});
  plx_tensor grad = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_autodiff(nullptr, loss, &w_, 1, &grad), PLX_ERR_INVALID_ARGUMENT, "plx_ir_autodiff",
                   "ir is NULL");
  EXPECT_PLX_ERROR(plx_ir_autodiff(ir(), loss, nullptr, 1, &grad), PLX_ERR_INVALID_ARGUMENT, "plx_ir_autodiff",
                   "wrt is NULL");
  EXPECT_PLX_ERROR(plx_ir_autodiff(ir(), loss, &w_, 1, nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_ir_autodiff",
                   "out_grads is NULL");
  EXPECT_PLX_ERROR(plx_ir_autodiff(ir(), loss, &w_, 0, &grad), PLX_ERR_INVALID_ARGUMENT, "plx_ir_autodiff",
                   "num_wrt is 0");
  EXPECT_EQ(grad, kSentinelId);
}

TEST_F(CApi, NullArgumentsOfSessionFunctions) {
  plx_session* sentinel_session = reinterpret_cast<plx_session*>(uintptr_t{0x1234});
  plx_session* out = sentinel_session;
  const plx_session_options o = options_with(1);
  EXPECT_PLX_ERROR(plx_session_create(nullptr, &o, &out), PLX_ERR_INVALID_ARGUMENT, "plx_session_create", "ir is NULL");
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_session_create",
                   "out_session is NULL");
  EXPECT_EQ(out, sentinel_session);

  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  plx_session* s = session.get();
  float xs[6] = {}, ys[4] = {};
  const std::vector<int64_t> x_shape = {2, 3}, y_shape = {2, 2};
  const plx_host_array in = host(x_, xs, x_shape);
  const plx_host_array out_array = host(ys_, ys, y_shape);
  EXPECT_PLX_ERROR(plx_session_run(nullptr, &in, 1, &out_array, 1), PLX_ERR_INVALID_ARGUMENT, "plx_session_run",
                   "session is NULL");
  EXPECT_PLX_ERROR(plx_session_run(s, nullptr, 1, &out_array, 1), PLX_ERR_INVALID_ARGUMENT, "plx_session_run",
                   "inputs is NULL");
  EXPECT_PLX_ERROR(plx_session_run(s, &in, 1, nullptr, 1), PLX_ERR_INVALID_ARGUMENT, "plx_session_run",
                   "outputs is NULL");
  const plx_host_array null_data = host(x_, nullptr, x_shape);
  EXPECT_PLX_ERROR(plx_session_run(s, &null_data, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "input stream 'x'",
                   "host data pointer is NULL");
  const plx_host_array null_shape = {x_, PLX_DTYPE_FLOAT32, xs, nullptr, 2};
  EXPECT_PLX_ERROR(plx_session_run(s, &null_shape, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "stream 'x'",
                   "shape is NULL but rank is 2");

  int64_t dims[4] = {-1, -1, -1, -1};
  size_t rank = kSentinelCount;
  EXPECT_PLX_ERROR(plx_session_get_host_shape(nullptr, x_, dims, 4, &rank), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_get_host_shape", "session is NULL");
  EXPECT_EQ(rank, kSentinelCount);
  EXPECT_EQ(dims[0], -1);

  float buffer[6] = {};
  EXPECT_PLX_ERROR(plx_session_read_variable(nullptr, a_, buffer, sizeof buffer), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_read_variable", "session is NULL");
  EXPECT_PLX_ERROR(plx_session_read_variable(s, a_, nullptr, sizeof buffer), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_read_variable", "data is NULL");
  EXPECT_PLX_ERROR(plx_session_write_variable(nullptr, a_, buffer, sizeof buffer), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_write_variable", "session is NULL");
  EXPECT_PLX_ERROR(plx_session_write_variable(s, a_, nullptr, sizeof buffer), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_write_variable", "data is NULL");

  size_t count = kSentinelCount;
  EXPECT_PLX_ERROR(plx_session_get_num_devices(nullptr, &count), PLX_ERR_INVALID_ARGUMENT, "plx_session_get_num_devices",
                   "session is NULL");
  EXPECT_PLX_ERROR(plx_session_get_num_devices(s, nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_session_get_num_devices",
                   "out_count is NULL");
  EXPECT_EQ(count, kSentinelCount);

  plx_memory_stats stats{};
  stats.struct_size = sizeof stats;
  EXPECT_PLX_ERROR(plx_session_get_memory_stats(nullptr, 0, &stats), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_get_memory_stats", "session is NULL");
  EXPECT_PLX_ERROR(plx_session_get_memory_stats(s, 0, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_get_memory_stats", "out_stats is NULL");

  char text[8] = "unset";
  size_t size = kSentinelCount;
  EXPECT_PLX_ERROR(plx_session_get_report(nullptr, text, sizeof text, &size), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_get_report", "session is NULL");
  // "buffer may be NULL when capacity is 0": NULL with a capacity is an error, not a crash.
  EXPECT_PLX_ERROR(plx_session_get_report(s, nullptr, 4096, &size), PLX_ERR_INVALID_ARGUMENT, "plx_session_get_report",
                   "buffer is NULL");
  EXPECT_PLX_ERROR(plx_runtime_get_info(nullptr, 4096, &size), PLX_ERR_INVALID_ARGUMENT, "plx_runtime_get_info",
                   "buffer is NULL");
  EXPECT_EQ(size, kSentinelCount);
  EXPECT_STREQ(text, "unset");
}

TEST(CApiDataset, NullArguments) {
  plx_dataset* sentinel = reinterpret_cast<plx_dataset*>(uintptr_t{0x4321});
  plx_dataset* out = sentinel;
  EXPECT_PLX_ERROR(plx_dataset_load_idx(nullptr, "labels", &out), PLX_ERR_INVALID_ARGUMENT, "plx_dataset_load_idx",
                   "images_path is NULL");
  EXPECT_PLX_ERROR(plx_dataset_load_idx("images", nullptr, &out), PLX_ERR_INVALID_ARGUMENT, "plx_dataset_load_idx",
                   "labels_path is NULL");
  EXPECT_PLX_ERROR(plx_dataset_load_idx("images", "labels", nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_dataset_load_idx",
                   "out_dataset is NULL");
  EXPECT_EQ(out, sentinel);
  int64_t n = -7;
  EXPECT_PLX_ERROR(plx_dataset_get_info(nullptr, &n, nullptr, nullptr, 0, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_dataset_get_info", "dataset is NULL");
  EXPECT_EQ(n, -7);
  const void* images = &n;
  EXPECT_PLX_ERROR(plx_dataset_get_data(nullptr, &images, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_dataset_get_data", "dataset is NULL");
  EXPECT_EQ(images, &n);
}

// ---- Ops -------------------------------------------------------------------------------

TEST_F(CApi, UnknownOpIsNamed) {
  const plx_tensor ins[] = {a_};
  plx_tensor out = kSentinelId;
  size_t n = kSentinelCount;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "frobnicate", ins, 1, nullptr, 0, &out, 1, &n), PLX_ERR_UNKNOWN_OP,
                   "unknown op 'frobnicate'");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "", ins, 1, nullptr, 0, &out, 1, &n), PLX_ERR_UNKNOWN_OP, "unknown op ''");
  EXPECT_EQ(out, kSentinelId);
  EXPECT_EQ(n, kSentinelCount);
}

TEST_F(CApi, WrongInputCount) {
  const plx_tensor ins[] = {a_, a_, a_};
  plx_tensor out = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 1, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'matmul' takes 2 inputs, got 1");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 3, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'matmul' takes 2 inputs, got 3");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "relu", ins, 0, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'relu' takes 1 inputs, got 0");
  EXPECT_EQ(out, kSentinelId);
}

TEST_F(CApi, MatmulShapeMismatchNamesOpTypesAndRule) {
  const plx_tensor ins[] = {a_, b_};
  plx_tensor out = kSentinelId;
  size_t n = kSentinelCount;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 2, nullptr, 0, &out, 1, &n), PLX_ERR_SHAPE_MISMATCH, "matmul",
                   "float32[2,3]", "float32[4,5]", "inner dimensions differ", "3 vs 4");
  EXPECT_EQ(out, kSentinelId);
  EXPECT_EQ(n, kSentinelCount);
  const plx_tensor broadcast[] = {a_, w_};  // [2,3] + [3,2]
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", broadcast, 2, nullptr, 0, &out, 1, &n), PLX_ERR_SHAPE_MISMATCH,
                   "op 'add'", "float32[2,3]", "float32[3,2]", "broadcast");
}

TEST_F(CApi, DtypeMismatchNamesOpAndRule) {
  const int32_t ints[] = {1, 2, 3, 4, 5, 6};
  const int64_t shape[] = {2, 3};
  plx_tensor i = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir(), "i", PLX_DTYPE_INT32, shape, 2, ints, sizeof ints, &i));
  const plx_tensor ins[] = {a_, i};
  plx_tensor out = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_DTYPE_MISMATCH, "op 'add'",
                   "float32[2,3]", "int32[2,3]", "same dtype");
  const plx_tensor mm[] = {i, w_};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", mm, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_DTYPE_MISMATCH,
                   "op 'matmul'", "int32[2,3]", "input 0 must be float32");
  EXPECT_EQ(out, kSentinelId);
}

TEST_F(CApi, UnknownAndMistypedAttributes) {
  const plx_tensor ins[] = {a_, w_};
  plx_tensor out = kSentinelId;
  const plx_attr unknown = plx_attr_int("transpose_c", 1);
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 2, &unknown, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'matmul' has no attribute 'transpose_c'", "transpose_a", "transpose_b");
  const plx_attr as_string = plx_attr_string("transpose_a", "yes");
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 2, &as_string, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'matmul'", "attribute 'transpose_a' must be int, got string");
  const plx_attr as_float = plx_attr_float("transpose_b", 1.0);
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 2, &as_float, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "attribute 'transpose_b' must be int, got float");
  plx_attr bad_kind = plx_attr_int("transpose_a", 0);
  bad_kind.kind = 42;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "matmul", ins, 2, &bad_kind, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "attribute 'transpose_a' has kind 42", "PLX_ATTR_");
  const plx_tensor one[] = {a_};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "relu", one, 1, &unknown, 1, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'relu' has no attribute 'transpose_c'", "none");
  EXPECT_EQ(out, kSentinelId);
}

TEST_F(CApi, InPlaceOpOnConstantIsRefused) {
  const plx_tensor ins[] = {c_, a_};
  plx_tensor out = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "scaled_add_", ins, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'scaled_add_'", "in-place", "constant");
  EXPECT_EQ(out, kSentinelId);
  const plx_tensor ok[] = {a_, c_};  // a variable may be updated from a constant
  ASSERT_PLX_OK(plx_ir_add_op(ir(), "scaled_add_", ok, 2, nullptr, 0, &out, 1, nullptr));
  EXPECT_NE(out, kSentinelId);
}

TEST_F(CApi, MaxOutputsTooSmallAddsNothing) {
  const plx_tensor ins[] = {a_, a_};
  const plx_tensor before = op1(ir(), "add", {a_, a_});
  size_t n = kSentinelCount;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, nullptr, 0, nullptr, 0, &n), PLX_ERR_INVALID_ARGUMENT,
                   "op 'add' has 1 outputs but max_outputs is 0");
  EXPECT_EQ(n, 1u) << "num_outputs tells how many outputs the op has";
  const plx_tensor after = op1(ir(), "add", {a_, a_});
  EXPECT_EQ(after, before + 1) << "the refused op added no tensor";
}

TEST_F(CApi, FailedOpLeavesIrUnchanged) {
  const plx_tensor last = op1(ir(), "relu", {a_});
  const plx_tensor bad[] = {a_, b_};
  const plx_tensor unknown[] = {a_};
  plx_tensor out = kSentinelId;
  size_t n = kSentinelCount;
  EXPECT_EQ(plx_ir_add_op(ir(), "matmul", bad, 2, nullptr, 0, &out, 1, &n), PLX_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(plx_ir_add_op(ir(), "nope", unknown, 1, nullptr, 0, &out, 1, &n), PLX_ERR_UNKNOWN_OP);
  const plx_tensor w_ins[] = {a_, b_};  // in-place on a variable, shapes differ: refused after inference
  EXPECT_EQ(plx_ir_add_op(ir(), "scaled_add_", w_ins, 2, nullptr, 0, &out, 1, &n), PLX_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(out, kSentinelId);
  EXPECT_EQ(n, kSentinelCount);

  const plx_tensor next = op1(ir(), "relu", {last});
  EXPECT_EQ(next, last + 1) << "ids continue after failed ops";
  plx_dtype dtype = 0;
  int64_t dims[2] = {};
  size_t rank = 0;
  ASSERT_PLX_OK(plx_ir_get_tensor_type(ir(), next, &dtype, dims, 2, &rank));
  EXPECT_EQ(dtype, PLX_DTYPE_FLOAT32);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 3);

  // The session sees the ops of the fixture (matmul) and the two relus, nothing else.
  SessionPtr s = make_session(ir());
  ASSERT_TRUE(s);
  const nlohmann::json report = nlohmann::json::parse(report_of(s.get()));
  EXPECT_EQ(report.at("num_ops").get<int64_t>(), 3);
}

TEST_F(CApi, FailedAutodiffLeavesIrUnchanged) {
  const plx_tensor loss = op1(ir(), "reduce_sum", {y_});
  plx_tensor grad = kSentinelId;
  // The loss does not depend on a.
  EXPECT_PLX_ERROR(plx_ir_autodiff(ir(), loss, &a_, 1, &grad), PLX_ERR_INVALID_ARGUMENT, "autodiff",
                   "does not depend on 'a'");
  EXPECT_EQ(grad, kSentinelId);
  const plx_tensor next = op1(ir(), "relu", {a_});
  EXPECT_EQ(next, loss + 1);
}

// Found by the C API sequence fuzzer (tests/abi/sequence_fuzz): autodiff built the loss's
// gradient seed as a constant of the loss's shape, holding its bytes in the IR at once: a
// loss of 2^40 elements (a valid IR; only a session needs its memory) asked for 4 TiB
// (std::bad_alloc: PLX_ERR_INTERNAL; an abort under AddressSanitizer). The seed is now a
// scalar expanded on the device; the session refuses the memory with a status.
TEST(CApiAutodiff, AHugeLossIsDifferentiatedWithoutAllocatingIt) {
  IrPtr ir = make_ir();
  const plx_tensor w = variable(ir.get(), "w", {1}, {2.0f});
  const H2d x = h2d(ir.get(), "x", PLX_DTYPE_FLOAT32, {int64_t{1} << 20, int64_t{1} << 20});
  const plx_tensor loss = op1(ir.get(), "mul", {x.tensor, w});  // [2^20, 2^20], not reduced
  plx_tensor grad = 0;
  ASSERT_PLX_OK(plx_ir_autodiff(ir.get(), loss, &w, 1, &grad));
  plx_dtype dtype = 0;
  int64_t shape[PLX_MAX_RANK] = {};
  size_t rank = 0;
  ASSERT_PLX_OK(plx_ir_get_tensor_type(ir.get(), grad, &dtype, shape, PLX_MAX_RANK, &rank));
  EXPECT_EQ(dtype, PLX_DTYPE_FLOAT32);
  ASSERT_EQ(rank, 1u);
  EXPECT_EQ(shape[0], 1);
  plx_session_options o = options_with(1);
  o.device_memory_bytes = size_t{1} << 20;
  plx_session* out = nullptr;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &o, &out), PLX_ERR_OUT_OF_DEVICE_MEMORY, "device 0");
  EXPECT_EQ(out, nullptr);
}

// The gradient of a non-scalar loss is still the gradient of its sum.
TEST(CApiAutodiff, TheGradientOfANonScalarLossIsThatOfItsSum) {
  IrPtr ir = make_ir();
  const plx_tensor w = variable(ir.get(), "w", {3}, {1.0f, 2.0f, 3.0f});
  const plx_tensor loss = op1(ir.get(), "mul", {w, w});  // [3]: d sum(w*w) / dw = 2w
  plx_tensor grad = 0;
  ASSERT_PLX_OK(plx_ir_autodiff(ir.get(), loss, &w, 1, &grad));
  plx_stream gs = d2h(ir.get(), "g", grad);
  SessionPtr session = make_session(ir.get());
  ASSERT_TRUE(session);
  std::vector<float> g(3, 0.0f);
  const int64_t shape[] = {3};
  const plx_host_array out{gs, PLX_DTYPE_FLOAT32, g.data(), shape, 1};
  ASSERT_PLX_OK(plx_session_run(session.get(), nullptr, 0, &out, 1));
  EXPECT_EQ(g, (std::vector<float>{2.0f, 4.0f, 6.0f}));
}

// ---- Ids of the wrong IR, kind or range ------------------------------------------------

TEST_F(CApi, TensorOfAnotherIrIsRefused) {
  IrPtr other = make_ir();
  const plx_tensor foreign = variable(other.get(), "a", {2, 3}, {1, 2, 3, 4, 5, 6});
  const plx_tensor ins[] = {a_, foreign};
  plx_tensor out = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "op 'add' input 1", "belongs to another IR");
  plx_stream s = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(ir(), "f", foreign, &s), PLX_ERR_INVALID_ARGUMENT, "belongs to another IR");
  EXPECT_PLX_ERROR(plx_ir_get_tensor_type(ir(), foreign, nullptr, nullptr, 0, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "belongs to another IR");
  plx_tensor grad = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_autodiff(ir(), foreign, &w_, 1, &grad), PLX_ERR_INVALID_ARGUMENT, "loss",
                   "belongs to another IR");
  EXPECT_EQ(out, kSentinelId);
  EXPECT_EQ(s, kSentinelId);
  EXPECT_EQ(grad, kSentinelId);

  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  float buffer[6] = {9, 9, 9, 9, 9, 9};
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), foreign, buffer, sizeof buffer), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_read_variable", "belongs to another IR");
  EXPECT_PLX_ERROR(plx_session_write_variable(session.get(), foreign, buffer, sizeof buffer), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_write_variable", "belongs to another IR");
  EXPECT_EQ(buffer[0], 9.0f);

  const H2d other_stream = h2d(other.get(), "x", PLX_DTYPE_FLOAT32, {2, 3});
  float xs[6] = {};
  const std::vector<int64_t> shape = {2, 3};
  const plx_host_array in = host(other_stream.stream, xs, shape);
  EXPECT_PLX_ERROR(plx_session_run(session.get(), &in, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "inputs[0]",
                   "belongs to another IR");
}

TEST_F(CApi, IdsThatDoNotExist) {
  const plx_tensor missing_tensor = y_ + 1000;
  const plx_stream missing_stream = ys_ + 1000;
  plx_tensor out = kSentinelId;
  const plx_tensor ins[] = {a_, missing_tensor};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", ins, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_NOT_FOUND,
                   "op 'add' input 1", "does not exist");
  const plx_tensor zero[] = {a_, 0};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", zero, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "id 0 is not a valid id");
  EXPECT_PLX_ERROR(plx_ir_get_tensor_type(ir(), missing_tensor, nullptr, nullptr, 0, nullptr), PLX_ERR_NOT_FOUND,
                   "does not exist");
  plx_stream ghost = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(ir(), "ghost", missing_tensor, &ghost), PLX_ERR_NOT_FOUND, "'ghost'",
                   "does not exist");
  EXPECT_EQ(out, kSentinelId);
  EXPECT_EQ(ghost, kSentinelId);
  ghost = d2h(ir(), "ghost", a_);  // the refused stream took neither the name nor an id
  EXPECT_EQ(ghost, ys_ + 1);

  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  int64_t dims[4] = {-1, -1, -1, -1};
  size_t rank = kSentinelCount;
  EXPECT_PLX_ERROR(plx_session_get_host_shape(session.get(), missing_stream, dims, 4, &rank), PLX_ERR_NOT_FOUND,
                   "stream id", "does not exist");
  EXPECT_EQ(rank, kSentinelCount);
  float xs[6] = {};
  const std::vector<int64_t> shape = {2, 3};
  const plx_host_array in = host(missing_stream, xs, shape);
  EXPECT_PLX_ERROR(plx_session_run(session.get(), &in, 1, nullptr, 0), PLX_ERR_NOT_FOUND, "inputs[0]",
                   "does not exist");
  float buffer[6];
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), missing_tensor, buffer, sizeof buffer), PLX_ERR_NOT_FOUND,
                   "does not exist");
}

TEST_F(CApi, TensorAndStreamIdsAreNotInterchangeable) {
  plx_tensor out = kSentinelId;
  const plx_tensor stream_as_tensor[] = {a_, static_cast<plx_tensor>(x_)};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", stream_as_tensor, 2, nullptr, 0, &out, 1, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "is a stream id, not a tensor id");
  EXPECT_EQ(out, kSentinelId);

  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  float xs[6] = {};
  const std::vector<int64_t> shape = {2, 3};
  const plx_host_array tensor_as_stream = host(static_cast<plx_stream>(xt_), xs, shape);
  EXPECT_PLX_ERROR(plx_session_run(session.get(), &tensor_as_stream, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_run inputs[0]", "is a tensor id, not a stream id");
  size_t rank = kSentinelCount;
  EXPECT_PLX_ERROR(plx_session_get_host_shape(session.get(), static_cast<plx_stream>(a_), nullptr, 0, &rank),
                   PLX_ERR_INVALID_ARGUMENT, "is a tensor id, not a stream id");
  EXPECT_EQ(rank, kSentinelCount);
  float buffer[6];
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), static_cast<plx_tensor>(ys_), buffer, sizeof buffer),
                   PLX_ERR_INVALID_ARGUMENT, "is a stream id, not a tensor id");
}

// A number that no plx_ir_add_* call returned (an index, garbage) is named as such, not
// as an id of another kind or of another IR.
TEST_F(CApi, AnIdNoCallReturnedIsNotAnId) {
  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  float xs[6] = {};
  const std::vector<int64_t> shape = {2, 3};
  for (const uint64_t garbage : {uint64_t{1}, uint64_t{12345}, ~uint64_t{0}}) {
    SCOPED_TRACE(garbage);
    const plx_host_array input = host(static_cast<plx_stream>(garbage), xs, shape);
    EXPECT_PLX_ERROR(plx_session_run(session.get(), &input, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT,
                     "plx_session_run inputs[0]", std::to_string(garbage) + " is not a stream id");
    plx_tensor out = kSentinelId;
    const plx_tensor inputs[] = {a_, static_cast<plx_tensor>(garbage)};
    EXPECT_PLX_ERROR(plx_ir_add_op(ir(), "add", inputs, 2, nullptr, 0, &out, 1, nullptr), PLX_ERR_INVALID_ARGUMENT,
                     std::to_string(garbage) + " is not a tensor id");
    EXPECT_EQ(out, kSentinelId);
  }
}

// ---- Variables, constants and streams --------------------------------------------------

TEST_F(CApi, VariableDataBytesMustMatch) {
  const int64_t shape[] = {2, 3};
  const float data[6] = {};
  plx_tensor t = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, shape, 2, data, 20, &t), PLX_ERR_INVALID_ARGUMENT,
                   "variable 'v'", "host data is 20 bytes, expected 24", "float32[2,3]");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_UINT8, shape, 2, data, 24, &t), PLX_ERR_INVALID_ARGUMENT,
                   "host data is 24 bytes, expected 6", "uint8[2,3]");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, shape, 2, nullptr, 0, &t),
                   PLX_ERR_INVALID_ARGUMENT, "host data is 0 bytes, expected 24");
  EXPECT_PLX_ERROR(plx_ir_add_constant(ir(), PLX_DTYPE_INT32, shape, 2, data, 4, &t), PLX_ERR_INVALID_ARGUMENT,
                   "constant", "host data is 4 bytes, expected 24");
  EXPECT_EQ(t, kSentinelId);
  // The failures added nothing: the name is still free and ids continue.
  const plx_tensor v = variable(ir(), "v", {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(v, y_ + 1);
}

TEST_F(CApi, BadDtypeRankAndDims) {
  const int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const float one[1] = {1};
  const float six[6] = {};
  plx_tensor t = kSentinelId;
  plx_stream s = kSentinelId;
  for (plx_dtype bad : {0, 8, 42, -1}) {
    EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", bad, shape9, 1, one, 4, &t), PLX_ERR_INVALID_ARGUMENT,
                     "variable 'v'", "dtype " + std::to_string(bad) + " is not a PLX_DTYPE_* value");
  }
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "s", 8, shape9, 1, &s, &t), PLX_ERR_INVALID_ARGUMENT, "'s'",
                   "dtype 8 is not a PLX_DTYPE_* value");
  EXPECT_PLX_ERROR(plx_ir_add_constant(ir(), 0, shape9, 1, one, 4, &t), PLX_ERR_INVALID_ARGUMENT,
                   "dtype 0 is not a PLX_DTYPE_* value");

  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, shape9, 9, one, 4, &t), PLX_ERR_INVALID_ARGUMENT,
                   "'v'", "rank 9 exceeds PLX_MAX_RANK (8)");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "s", PLX_DTYPE_FLOAT32, shape9, PLX_MAX_RANK + 1, &s, &t),
                   PLX_ERR_INVALID_ARGUMENT, "'s'", "rank 9 exceeds PLX_MAX_RANK (8)");
  EXPECT_PLX_ERROR(plx_ir_add_constant(ir(), PLX_DTYPE_FLOAT32, shape9, 1000, one, 4, &t), PLX_ERR_INVALID_ARGUMENT,
                   "rank 1000 exceeds PLX_MAX_RANK (8)");

  const int64_t zero_dim[] = {2, 0};
  const int64_t negative_dim[] = {-3, 2};
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, zero_dim, 2, nullptr, 0, &t),
                   PLX_ERR_INVALID_ARGUMENT, "variable 'v'", "dim 1 of shape [2,0] is 0, must be >= 1");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, negative_dim, 2, six, 24, &t),
                   PLX_ERR_INVALID_ARGUMENT, "dim 0 of shape [-3,2] is -3, must be >= 1");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "s", PLX_DTYPE_INT32, zero_dim, 2, &s, &t), PLX_ERR_INVALID_ARGUMENT,
                   "stream 's'", "dim 1 of shape [2,0] is 0");

  // Dims whose product overflows must not wrap around to a small (or zero) size.
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "v", PLX_DTYPE_FLOAT32, huge, 2, nullptr, 0, &t), PLX_ERR_INVALID_ARGUMENT,
                   "'v'", "too many elements");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "s", PLX_DTYPE_FLOAT32, huge, 2, &s, &t), PLX_ERR_INVALID_ARGUMENT,
                   "'s'", "too many elements");
  EXPECT_EQ(t, kSentinelId);
  EXPECT_EQ(s, kSentinelId);

  // Rank 0 is a scalar; its shape may be NULL.
  ASSERT_PLX_OK(plx_ir_add_variable(ir(), "scalar", PLX_DTYPE_FLOAT32, nullptr, 0, one, 4, &t));
  size_t rank = kSentinelCount;
  ASSERT_PLX_OK(plx_ir_get_tensor_type(ir(), t, nullptr, nullptr, 0, &rank));
  EXPECT_EQ(rank, 0u);
}

TEST_F(CApi, NamesMustBeUniqueAndNonEmpty) {
  const float data[6] = {};
  const int64_t shape[] = {2, 3};
  plx_tensor t = kSentinelId;
  plx_stream s = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "a", PLX_DTYPE_FLOAT32, shape, 2, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "'a'", "already exists");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "x", PLX_DTYPE_FLOAT32, shape, 2, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "'x'", "already exists");
  EXPECT_PLX_ERROR(plx_ir_add_h2d_stream(ir(), "a", PLX_DTYPE_FLOAT32, shape, 2, &s, &t), PLX_ERR_INVALID_ARGUMENT,
                   "'a'", "already exists");
  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(ir(), "y", a_, &s), PLX_ERR_INVALID_ARGUMENT, "'y'", "already exists");
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir(), "", PLX_DTYPE_FLOAT32, shape, 2, data, sizeof data, &t),
                   PLX_ERR_INVALID_ARGUMENT, "name must not be empty");
  EXPECT_EQ(t, kSentinelId);
  EXPECT_EQ(s, kSentinelId);
}

TEST_F(CApi, TensorTypeBufferProtocol) {
  plx_dtype dtype = -5;
  int64_t dims[1] = {-1};
  size_t rank = kSentinelCount;
  EXPECT_PLX_ERROR(plx_ir_get_tensor_type(ir(), y_, &dtype, dims, 1, &rank), PLX_ERR_BUFFER_TOO_SMALL, "rank 2",
                   "1 dims");
  EXPECT_EQ(rank, 2u) << "out_rank is still set";
  EXPECT_EQ(dims[0], -1);
  int64_t full[PLX_MAX_RANK];
  ASSERT_PLX_OK(plx_ir_get_tensor_type(ir(), y_, &dtype, full, PLX_MAX_RANK, &rank));
  EXPECT_EQ(dtype, PLX_DTYPE_FLOAT32);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(full[0], 2);
  EXPECT_EQ(full[1], 2);
}

// ---- Sessions --------------------------------------------------------------------------

TEST_F(CApi, SessionOptionsAreChecked) {
  plx_session* sentinel = reinterpret_cast<plx_session*>(uintptr_t{0x1234});
  plx_session* out = sentinel;
  plx_session_options o = options_with(1);
  o.struct_size = offsetof(plx_session_options, threads_per_device) + sizeof(int32_t) - 1;  // short of version 1
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_INVALID_ARGUMENT, "plx_session_create",
                   "struct_size is " + std::to_string(o.struct_size), "plx_session_options_init");
  o.struct_size = 0;
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_INVALID_ARGUMENT, "struct_size is 0");

  o = options_with(0);
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_INVALID_ARGUMENT,
                   "device_iterations is 0, must be >= 1");
  o = options_with(-4);
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_INVALID_ARGUMENT, "device_iterations is -4");
  o = options_with(1);
  o.threads_per_device = -1;
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_INVALID_ARGUMENT, "threads_per_device is -1");
  EXPECT_EQ(out, sentinel);

  SessionPtr defaults;  // NULL options: the defaults
  plx_session* s = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir(), nullptr, &s));
  defaults.reset(s);
  size_t devices = 0;
  ASSERT_PLX_OK(plx_session_get_num_devices(s, &devices));
  EXPECT_EQ(devices, 1u);
}

TEST_F(CApi, DeviceMemoryTooSmallNamesDeviceAndBytes) {
  int64_t needed = 0;
  {
    SessionPtr unlimited = make_session(ir());
    ASSERT_TRUE(unlimited);
    plx_memory_stats stats{};
    stats.struct_size = sizeof stats;
    ASSERT_PLX_OK(plx_session_get_memory_stats(unlimited.get(), 0, &stats));
    needed = stats.arena_bytes;
  }
  ASSERT_GT(needed, 0);
  plx_session_options o = options_with(1);
  o.device_memory_bytes = needed - 1;
  plx_session* sentinel = reinterpret_cast<plx_session*>(uintptr_t{0x1234});
  plx_session* out = sentinel;
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_OUT_OF_DEVICE_MEMORY,
                   "device 0 needs " + std::to_string(needed) + " bytes", std::to_string(needed - 1));
  EXPECT_EQ(out, sentinel);
  o.device_memory_bytes = 16;
  EXPECT_PLX_ERROR(plx_session_create(ir(), &o, &out), PLX_ERR_OUT_OF_DEVICE_MEMORY, "device 0",
                   std::to_string(needed) + " bytes", "is 16");
  o.device_memory_bytes = needed;  // exactly enough
  ASSERT_PLX_OK(plx_session_create(ir(), &o, &out));
  SessionPtr fits(out);
}

TEST_F(CApi, RunChecksHostArrays) {
  SessionPtr session = make_session(ir(), 3);
  ASSERT_TRUE(session);
  plx_session* s = session.get();
  std::vector<float> xs(3 * 6, 1.0f), ys(3 * 4, -7.0f);
  const std::vector<int64_t> x_shape = {3, 2, 3}, y_shape = {3, 2, 2};
  const plx_host_array good_in = host(x_, xs.data(), x_shape);
  const plx_host_array good_out = host(ys_, ys.data(), y_shape);

  EXPECT_PLX_ERROR(plx_session_run(s, nullptr, 0, &good_out, 1), PLX_ERR_INVALID_ARGUMENT,
                   "input stream 'x' has no host array");

  const std::vector<int64_t> step_shape = {2, 3};
  const plx_host_array no_iterations_dim = host(x_, xs.data(), step_shape);
  EXPECT_PLX_ERROR(plx_session_run(s, &no_iterations_dim, 1, &good_out, 1), PLX_ERR_SHAPE_MISMATCH, "input stream 'x'",
                   "host array has shape [2,3], expected [3,2,3]", "device_iterations=3");
  const std::vector<int64_t> wrong_out_shape = {3, 4};
  const plx_host_array bad_out = host(ys_, ys.data(), wrong_out_shape);
  EXPECT_PLX_ERROR(plx_session_run(s, &good_in, 1, &bad_out, 1), PLX_ERR_SHAPE_MISMATCH, "output stream 'y'",
                   "host array has shape [3,4], expected [3,2,2]");

  plx_host_array int_array = good_in;
  int_array.dtype = PLX_DTYPE_INT32;
  EXPECT_PLX_ERROR(plx_session_run(s, &int_array, 1, nullptr, 0), PLX_ERR_DTYPE_MISMATCH, "input stream 'x'",
                   "host array is int32, expected float32");
  plx_host_array bad_dtype = good_in;
  bad_dtype.dtype = 99;
  EXPECT_PLX_ERROR(plx_session_run(s, &bad_dtype, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "stream 'x'",
                   "dtype 99 is not a PLX_DTYPE_* value");
  plx_host_array deep = good_in;
  deep.rank = PLX_MAX_RANK + 1;
  EXPECT_PLX_ERROR(plx_session_run(s, &deep, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "stream 'x'",
                   "exceeds PLX_MAX_RANK");

  const plx_host_array twice[] = {good_in, good_in};
  EXPECT_PLX_ERROR(plx_session_run(s, twice, 2, nullptr, 0), PLX_ERR_INVALID_ARGUMENT,
                   "input stream 'x' is given twice");
  EXPECT_PLX_ERROR(plx_session_run(s, &good_out, 1, nullptr, 0), PLX_ERR_INVALID_ARGUMENT, "stream 'y'",
                   "device-to-host, not an input");
  const plx_host_array ins_as_out[] = {good_in};
  EXPECT_PLX_ERROR(plx_session_run(s, &good_in, 1, ins_as_out, 1), PLX_ERR_INVALID_ARGUMENT, "stream 'x'",
                   "host-to-device, not an output");
  for (float v : ys) ASSERT_EQ(v, -7.0f) << "a refused run writes no output";

  ASSERT_PLX_OK(plx_session_run(s, &good_in, 1, &good_out, 1));  // the session still works
  // x = ones, w = [[1,0],[0,1],[1,1]]: every row of x @ w is [2, 2].
  for (float v : ys) EXPECT_FLOAT_EQ(v, 2.0f);
}

TEST_F(CApi, ReadAndWriteVariableChecks) {
  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  float buffer[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), a_, buffer, 20), PLX_ERR_INVALID_ARGUMENT, "variable 'a'",
                   "host buffer is 20 bytes, expected 24", "float32[2,3]");
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), a_, buffer, 32), PLX_ERR_INVALID_ARGUMENT,
                   "host buffer is 32 bytes, expected 24");
  EXPECT_PLX_ERROR(plx_session_write_variable(session.get(), a_, buffer, 4), PLX_ERR_INVALID_ARGUMENT, "variable 'a'",
                   "host buffer is 4 bytes, expected 24");
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), c_, buffer, 24), PLX_ERR_INVALID_ARGUMENT,
                   "is not a variable");
  EXPECT_PLX_ERROR(plx_session_read_variable(session.get(), y_, buffer, 16), PLX_ERR_INVALID_ARGUMENT,
                   "is not a variable");
  EXPECT_PLX_ERROR(plx_session_write_variable(session.get(), c_, buffer, 24), PLX_ERR_INVALID_ARGUMENT,
                   "is not a variable");
  for (float v : buffer) EXPECT_EQ(v, 9.0f) << "a refused read writes nothing";

  ASSERT_PLX_OK(plx_session_read_variable(session.get(), a_, buffer, 24));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(buffer[i], static_cast<float>(i + 1));
  const float fresh[6] = {6, 5, 4, 3, 2, 1};
  ASSERT_PLX_OK(plx_session_write_variable(session.get(), a_, fresh, sizeof fresh));
  ASSERT_PLX_OK(plx_session_read_variable(session.get(), a_, buffer, 24));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(buffer[i], fresh[i]);
}

TEST_F(CApi, HostShapeBufferProtocol) {
  SessionPtr session = make_session(ir(), 3);
  ASSERT_TRUE(session);
  int64_t dims[2] = {-1, -1};
  size_t rank = kSentinelCount;
  EXPECT_PLX_ERROR(plx_session_get_host_shape(session.get(), x_, dims, 2, &rank), PLX_ERR_BUFFER_TOO_SMALL, "rank 3");
  EXPECT_EQ(rank, 3u);
  EXPECT_EQ(dims[0], -1);
  rank = 0;
  ASSERT_PLX_OK(plx_session_get_host_shape(session.get(), x_, nullptr, 0, &rank));
  EXPECT_EQ(rank, 3u);
}

TEST_F(CApi, MemoryStatsChecks) {
  SessionPtr session = make_session(ir());
  ASSERT_TRUE(session);
  plx_memory_stats stats;
  std::memset(&stats, 0x5A, sizeof stats);
  stats.struct_size = sizeof(size_t) + sizeof(int64_t);
  const plx_memory_stats before = stats;
  EXPECT_PLX_ERROR(plx_session_get_memory_stats(session.get(), 0, &stats), PLX_ERR_INVALID_ARGUMENT,
                   "struct_size is 16");
  stats.struct_size = sizeof stats;
  EXPECT_PLX_ERROR(plx_session_get_memory_stats(session.get(), 1, &stats), PLX_ERR_NOT_FOUND,
                   "device 1 does not exist");
  stats.struct_size = before.struct_size;
  EXPECT_EQ(std::memcmp(&stats, &before, sizeof stats), 0) << "refused calls leave out_stats alone";
}

TEST(CApiRuntime, ReportAndRuntimeInfoBufferProtocol) {
  IrPtr ir = make_ir();
  const plx_tensor a = variable(ir.get(), "a", {2, 2}, {1, 2, 3, 4});
  const plx_tensor m = op1(ir.get(), "matmul", {a, a});
  d2h(ir.get(), "m", m);
  SessionPtr session = make_session(ir.get());
  ASSERT_TRUE(session);

  size_t needed = 0;
  EXPECT_PLX_ERROR(plx_session_get_report(session.get(), nullptr, 0, &needed), PLX_ERR_BUFFER_TOO_SMALL,
                   "buffer has 0");
  ASSERT_GT(needed, 2u);
  std::string small(10, '#');
  size_t size = 0;
  EXPECT_PLX_ERROR(plx_session_get_report(session.get(), small.data(), small.size(), &size), PLX_ERR_BUFFER_TOO_SMALL,
                   "needs " + std::to_string(needed) + " bytes", "buffer has 10");
  EXPECT_EQ(size, needed) << "the size needed is returned";
  EXPECT_EQ(small, std::string(10, '#')) << "a too-small buffer is left alone";
  std::string text(needed, '#');
  size = 0;
  ASSERT_PLX_OK(plx_session_get_report(session.get(), text.data(), text.size(), &size));
  EXPECT_EQ(size, needed);
  EXPECT_EQ(std::strlen(text.c_str()), needed - 1);
  text.resize(needed - 1);
  const nlohmann::json report = nlohmann::json::parse(text);
  EXPECT_EQ(report.at("num_ops").get<int64_t>(), 1);
  ASSERT_EQ(report.at("devices").size(), 1u);
  EXPECT_EQ(report.at("devices")[0].at("variable_bytes").get<int64_t>(), 16);
  EXPECT_TRUE(report.contains("blis"));
  EXPECT_TRUE(report.contains("kernels"));

  needed = 0;
  EXPECT_PLX_ERROR(plx_runtime_get_info(nullptr, 0, &needed), PLX_ERR_BUFFER_TOO_SMALL, "buffer has 0");
  ASSERT_GT(needed, 1u);
  std::string info(needed, '\0');
  ASSERT_PLX_OK(plx_runtime_get_info(info.data(), info.size(), &size));
  info.resize(size - 1);
  EXPECT_THAT(info, HasSubstr("BLIS"));
  EXPECT_THAT(info, HasSubstr("Plexus API " + std::to_string(PLX_API_VERSION)));
}

// ---- End to end ------------------------------------------------------------------------

// x[2] + y[2] and m[2,3] @ w[3,2] with device_iterations = 3: host arrays [3] + S, one
// slice per step; y is updated in place each step (y += x), and a d2h stream added before
// the update sees the old value.
TEST(CApiEndToEnd, DeviceIterationsSliceHostArrays) {
  IrPtr ir = make_ir();
  const H2d x = h2d(ir.get(), "x", PLX_DTYPE_FLOAT32, {2});
  const H2d m = h2d(ir.get(), "m", PLX_DTYPE_FLOAT32, {2, 3});
  const std::vector<float> y0 = {10, 20};
  const std::vector<float> w0 = {1, 2, 3, 4, 5, 6};
  const plx_tensor y = variable(ir.get(), "y", {2}, y0);
  const plx_tensor w = variable(ir.get(), "w", {3, 2}, w0);
  const plx_tensor sum = op1(ir.get(), "add", {x.tensor, y});
  const plx_stream sum_out = d2h(ir.get(), "sum", sum);
  const plx_stream y_out = d2h(ir.get(), "y_before", y);
  const plx_tensor product = op1(ir.get(), "matmul", {m.tensor, w});
  const plx_stream product_out = d2h(ir.get(), "product", product);
  op1(ir.get(), "scaled_add_", {y, x.tensor});

  constexpr int kSteps = 3;
  SessionPtr session = make_session(ir.get(), kSteps);
  ASSERT_TRUE(session);

  auto host_shape = [&](plx_stream s) {
    int64_t dims[PLX_MAX_RANK + 1];
    size_t rank = 0;
    EXPECT_EQ(plx_session_get_host_shape(session.get(), s, dims, PLX_MAX_RANK + 1, &rank), PLX_OK);
    return std::vector<int64_t>(dims, dims + rank);
  };
  EXPECT_EQ(host_shape(x.stream), (std::vector<int64_t>{kSteps, 2}));
  EXPECT_EQ(host_shape(m.stream), (std::vector<int64_t>{kSteps, 2, 3}));
  EXPECT_EQ(host_shape(sum_out), (std::vector<int64_t>{kSteps, 2}));
  EXPECT_EQ(host_shape(product_out), (std::vector<int64_t>{kSteps, 2, 2}));

  std::vector<float> xs = {1, 2, 3, 4, 5, 6};  // step s: x = [2s+1, 2s+2]
  std::vector<float> ms(kSteps * 6);
  for (size_t i = 0; i < ms.size(); ++i) ms[i] = static_cast<float>(i % 7) - 2.0f;
  std::vector<float> sums(kSteps * 2, -1), ys(kSteps * 2, -1), products(kSteps * 4, -1);
  // host() borrows the shape vectors: they outlive the run.
  const std::vector<int64_t> xsh = {kSteps, 2}, msh = {kSteps, 2, 3}, s2 = {kSteps, 2}, s22 = {kSteps, 2, 2};
  const std::vector<plx_host_array> inputs = {host(x.stream, xs.data(), xsh), host(m.stream, ms.data(), msh)};
  const std::vector<plx_host_array> outs = {host(sum_out, sums.data(), s2), host(y_out, ys.data(), s2),
                                            host(product_out, products.data(), s22)};
  ASSERT_PLX_OK(plx_session_run(session.get(), inputs.data(), inputs.size(), outs.data(), outs.size()));

  std::vector<float> expect_y = y0;
  for (int s = 0; s < kSteps; ++s) {
    for (int i = 0; i < 2; ++i) {
      EXPECT_FLOAT_EQ(ys[2 * s + i], expect_y[i]) << "step " << s;
      EXPECT_FLOAT_EQ(sums[2 * s + i], xs[2 * s + i] + expect_y[i]) << "step " << s;
    }
    for (int r = 0; r < 2; ++r) {
      for (int c = 0; c < 2; ++c) {
        float dot = 0;
        for (int k = 0; k < 3; ++k) dot += ms[6 * s + 3 * r + k] * w0[2 * k + c];
        EXPECT_FLOAT_EQ(products[4 * s + 2 * r + c], dot) << "step " << s;
      }
    }
    for (int i = 0; i < 2; ++i) expect_y[i] += xs[2 * s + i];
  }
  std::vector<float> y_now(2);
  ASSERT_PLX_OK(plx_session_read_variable(session.get(), y, y_now.data(), 8));
  EXPECT_FLOAT_EQ(y_now[0], 10 + 1 + 3 + 5);
  EXPECT_FLOAT_EQ(y_now[1], 20 + 2 + 4 + 6);

  // Variables stay resident between runs: a second run continues from there.
  ASSERT_PLX_OK(plx_session_run(session.get(), inputs.data(), inputs.size(), nullptr, 0));
  ASSERT_PLX_OK(plx_session_read_variable(session.get(), y, y_now.data(), 8));
  EXPECT_FLOAT_EQ(y_now[0], 10 + 2 * 9);
  EXPECT_FLOAT_EQ(y_now[1], 20 + 2 * 12);
}

TEST(CApiEndToEnd, OneIterationLeavesOutTheLeadingDim) {
  IrPtr ir = make_ir();
  const H2d x = h2d(ir.get(), "x", PLX_DTYPE_FLOAT32, {2});
  const plx_tensor y = variable(ir.get(), "y", {2}, {0.5f, -0.5f});
  const plx_stream out = d2h(ir.get(), "out", op1(ir.get(), "relu", {op1(ir.get(), "add", {x.tensor, y})}));
  SessionPtr session = make_session(ir.get(), 1);
  ASSERT_TRUE(session);
  int64_t dims[PLX_MAX_RANK];
  size_t rank = 0;
  ASSERT_PLX_OK(plx_session_get_host_shape(session.get(), x.stream, dims, PLX_MAX_RANK, &rank));
  ASSERT_EQ(rank, 1u);
  EXPECT_EQ(dims[0], 2);
  float xs[2] = {1, -1}, result[2] = {-9, -9};
  const std::vector<int64_t> shape = {2};
  const plx_host_array in = host(x.stream, xs, shape);
  const plx_host_array o = host(out, result, shape);
  ASSERT_PLX_OK(plx_session_run(session.get(), &in, 1, &o, 1));
  EXPECT_FLOAT_EQ(result[0], 1.5f);
  EXPECT_FLOAT_EQ(result[1], 0.0f);
}

TEST(CApiEndToEnd, AutodiffOfMatmul) {
  // loss = sum(m @ w): dloss/dw = m^T @ ones.
  IrPtr ir = make_ir();
  const H2d m = h2d(ir.get(), "m", PLX_DTYPE_FLOAT32, {2, 3});
  const plx_tensor w = variable(ir.get(), "w", {3, 2}, {1, 2, 3, 4, 5, 6});
  const plx_tensor loss = op1(ir.get(), "reduce_sum", {op1(ir.get(), "matmul", {m.tensor, w})});
  plx_tensor grad = 0;
  ASSERT_PLX_OK(plx_ir_autodiff(ir.get(), loss, &w, 1, &grad));
  const plx_stream g = d2h(ir.get(), "grad", grad);
  SessionPtr session = make_session(ir.get());
  ASSERT_TRUE(session);
  float ms[6] = {1, 2, 3, 4, 5, 6}, gs[6] = {};
  const std::vector<int64_t> msh = {2, 3}, gsh = {3, 2};
  const plx_host_array in = host(m.stream, ms, msh);
  const plx_host_array out = host(g, gs, gsh);
  ASSERT_PLX_OK(plx_session_run(session.get(), &in, 1, &out, 1));
  for (int k = 0; k < 3; ++k) {
    for (int c = 0; c < 2; ++c) EXPECT_FLOAT_EQ(gs[2 * k + c], ms[k] + ms[3 + k]) << k << "," << c;
  }
}

TEST(CApiEndToEnd, MemoryStatsCountVariableBytesExactly) {
  IrPtr ir = make_ir();
  const H2d x = h2d(ir.get(), "x", PLX_DTYPE_FLOAT32, {4, 3});
  const plx_tensor w = variable(ir.get(), "w", {3, 5}, std::vector<float>(15, 0.5f));
  const plx_tensor b = variable(ir.get(), "b", {5}, std::vector<float>(5, 1.0f));
  const int32_t steps[3] = {1, 2, 3};
  const int64_t three[] = {3};
  plx_tensor counter = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "counter", PLX_DTYPE_INT32, three, 1, steps, sizeof steps, &counter));
  const uint8_t flags[7] = {};
  const int64_t seven[] = {7};
  plx_tensor mask = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "mask", PLX_DTYPE_UINT8, seven, 1, flags, sizeof flags, &mask));
  const plx_tensor h = op1(ir.get(), "relu", {op1(ir.get(), "add", {op1(ir.get(), "matmul", {x.tensor, w}), b})});
  const plx_stream out = d2h(ir.get(), "h", h);
  const int64_t variable_bytes = (15 + 5) * 4 + 3 * 4 + 7;

  SessionPtr session = make_session(ir.get());
  ASSERT_TRUE(session);
  plx_memory_stats stats{};
  stats.struct_size = sizeof stats;
  ASSERT_PLX_OK(plx_session_get_memory_stats(session.get(), 0, &stats));
  EXPECT_EQ(stats.variable_bytes, variable_bytes);
  EXPECT_EQ(stats.current_bytes, variable_bytes) << "between runs only the variables are live";
  EXPECT_GE(stats.peak_bytes, variable_bytes);
  EXPECT_GE(stats.planned_peak_bytes, variable_bytes + 4 * 3 * 4) << "the stream's buffer is live in a step";
  EXPECT_GE(stats.arena_bytes, stats.planned_peak_bytes);

  std::vector<float> xs(12, 1.0f), hs(20, -1.0f);
  const std::vector<int64_t> xsh = {4, 3}, hsh = {4, 5};
  const plx_host_array in = host(x.stream, xs.data(), xsh);
  const plx_host_array o = host(out, hs.data(), hsh);
  ASSERT_PLX_OK(plx_session_run(session.get(), &in, 1, &o, 1));
  for (float v : hs) EXPECT_FLOAT_EQ(v, 2.5f);
  ASSERT_PLX_OK(plx_session_get_memory_stats(session.get(), 0, &stats));
  EXPECT_EQ(stats.variable_bytes, variable_bytes);
  EXPECT_EQ(stats.current_bytes, variable_bytes);
  EXPECT_EQ(stats.peak_bytes, stats.planned_peak_bytes) << "the measured peak of a run is the planned one";
  EXPECT_GE(stats.peak_bytes, variable_bytes);
}

// ---- Datasets --------------------------------------------------------------------------

TEST_F(CApiDatasetFiles, LoadsImagesAndLabels) {
  std::vector<uint8_t> pixels(3 * 2 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 10);
  const std::string images = write_idx("images", {3, 2, 2}, pixels);
  const std::string labels = write_idx("labels", {3}, {7, 1, 9});
  plx_dataset* raw = nullptr;
  ASSERT_PLX_OK(plx_dataset_load_idx(images.c_str(), labels.c_str(), &raw));
  DatasetPtr ds(raw);
  int64_t n = 0;
  plx_dtype dtype = 0;
  int64_t dims[PLX_MAX_RANK];
  size_t rank = 0;
  ASSERT_PLX_OK(plx_dataset_get_info(raw, &n, &dtype, dims, PLX_MAX_RANK, &rank));
  EXPECT_EQ(n, 3);
  EXPECT_EQ(dtype, PLX_DTYPE_UINT8);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 2);
  int64_t one_dim[1] = {-1};
  rank = kSentinelCount;
  EXPECT_PLX_ERROR(plx_dataset_get_info(raw, nullptr, nullptr, one_dim, 1, &rank), PLX_ERR_BUFFER_TOO_SMALL, "rank 2");
  EXPECT_EQ(rank, 2u);
  EXPECT_EQ(one_dim[0], -1);

  const void* image_data = nullptr;
  const void* label_data = nullptr;
  plx_dtype label_dtype = 0;
  ASSERT_PLX_OK(plx_dataset_get_data(raw, &image_data, &label_data, &label_dtype));
  EXPECT_EQ(label_dtype, PLX_DTYPE_UINT8);
  ASSERT_NE(image_data, nullptr);
  ASSERT_NE(label_data, nullptr);
  EXPECT_EQ(std::memcmp(image_data, pixels.data(), pixels.size()), 0);
  const uint8_t expected_labels[3] = {7, 1, 9};
  EXPECT_EQ(std::memcmp(label_data, expected_labels, 3), 0);
}

TEST_F(CApiDatasetFiles, ErrorsNameTheFiles) {
  const std::string images = write_idx("images", {3, 2, 2}, std::vector<uint8_t>(12));
  const std::string labels = write_idx("labels", {4}, {1, 2, 3, 4});
  const std::string missing = (dir_ / "no-such-file").string();
  plx_dataset* sentinel = reinterpret_cast<plx_dataset*>(uintptr_t{0x4321});
  plx_dataset* out = sentinel;
  EXPECT_PLX_ERROR(plx_dataset_load_idx(missing.c_str(), labels.c_str(), &out), PLX_ERR_IO, missing, "cannot open");
  EXPECT_PLX_ERROR(plx_dataset_load_idx(images.c_str(), labels.c_str(), &out), PLX_ERR_BAD_FORMAT, images, labels,
                   "3 samples", "4 labels");
  const std::string truncated = write_idx("truncated", {3, 2, 2}, std::vector<uint8_t>(11));
  EXPECT_PLX_ERROR(plx_dataset_load_idx(truncated.c_str(), labels.c_str(), &out), PLX_ERR_BAD_FORMAT, truncated,
                   "truncated");
  EXPECT_EQ(out, sentinel);
}

}  // namespace
