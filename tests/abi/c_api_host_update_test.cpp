// The weight update on the host through the C API only (PLX_API_VERSION 9; seed 002):
// weight_update_on_host in plx_session_options, its default, callers built against an
// older plx_session_options, and training equal to the graph's own all-reduce.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

// R = 2; x [2] per replica; w [2] = {1, 2}; loss = sum(x * w); SGD w -= 0.1 * grad, the
// gradient mean-reduced over the replicas by the graph (`all_reduce`) or by no one.
struct LinearIr {
  IrPtr ir = make_ir();
  plx_stream x = 0;
  plx_tensor w = 0;
  explicit LinearIr(bool all_reduce) {
    EXPECT_EQ(plx_ir_set_replication_factor(ir.get(), 2), PLX_OK) << plx_last_error();
    const int64_t shape[] = {2};
    const float init[] = {1.0f, 2.0f};
    plx_tensor xt = 0;
    EXPECT_EQ(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &x, &xt), PLX_OK) << plx_last_error();
    EXPECT_EQ(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, shape, 1, init, sizeof init, &w), PLX_OK)
        << plx_last_error();
    const plx_tensor xw_in[] = {xt, w};
    plx_tensor xw = 0, loss = 0, grad = 0, unused = 0;
    EXPECT_EQ(plx_ir_add_op(ir.get(), "mul", xw_in, 2, nullptr, 0, &xw, 1, nullptr), PLX_OK) << plx_last_error();
    EXPECT_EQ(plx_ir_add_op(ir.get(), "reduce_sum", &xw, 1, nullptr, 0, &loss, 1, nullptr), PLX_OK) << plx_last_error();
    EXPECT_EQ(plx_ir_autodiff(ir.get(), loss, &w, 1, &grad), PLX_OK) << plx_last_error();
    if (all_reduce) {
      const plx_attr mean = plx_attr_string("op", "mean");
      EXPECT_EQ(plx_ir_add_op(ir.get(), "replicated_all_reduce", &grad, 1, &mean, 1, &grad, 1, nullptr), PLX_OK)
          << plx_last_error();
    }
    const plx_attr lr = plx_attr_float("b", -0.1);
    const plx_tensor update_in[] = {w, grad};
    EXPECT_EQ(plx_ir_add_op(ir.get(), "scaled_add_", update_in, 2, &lr, 1, &unused, 1, nullptr), PLX_OK)
        << plx_last_error();
  }
};

plx_session_options host_update_options(int32_t on) {
  plx_session_options o;
  plx_session_options_init(&o);
  o.collectives_plugin = "local";
  o.device_iterations = 2;
  o.weight_update_on_host = on;
  return o;
}

// Two steps: x is {1, 2} and {2, 4} (replicas 0 and 1), then {2, 2} and {3, 4}; returns w.
std::vector<float> train(const LinearIr& m, const plx_session_options& o, std::string* report = nullptr) {
  plx_session* raw = nullptr;
  EXPECT_EQ(plx_session_create(m.ir.get(), &o, &raw), PLX_OK) << plx_last_error();
  if (raw == nullptr) return {};
  const SessionPtr s(raw);
  if (report != nullptr) {
    size_t size = 0;
    EXPECT_EQ(plx_session_get_report(s.get(), nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
    report->assign(size, '\0');
    EXPECT_EQ(plx_session_get_report(s.get(), report->data(), report->size(), &size), PLX_OK) << plx_last_error();
    report->resize(size == 0 ? 0 : size - 1);
  }
  const float x[] = {1, 2, 2, 4, 2, 2, 3, 4};
  const int64_t shape[] = {2, 2, 2};  // [device_iterations, R] + [2]
  const plx_host_array in{m.x, PLX_DTYPE_FLOAT32, const_cast<float*>(x), shape, 3};
  EXPECT_EQ(plx_session_run(s.get(), &in, 1, nullptr, 0), PLX_OK) << plx_last_error();
  std::vector<float> w(2);
  EXPECT_EQ(plx_session_read_variable(s.get(), m.w, w.data(), w.size() * sizeof(float)), PLX_OK) << plx_last_error();
  return w;
}

TEST(CApiHostUpdate, OffByDefaultAndForOlderCallers) {
  plx_session_options o;
  o.weight_update_on_host = 7;
  plx_session_options_init(&o);
  EXPECT_EQ(o.weight_update_on_host, 0);
  EXPECT_GE(plx_version(), 9u);  // the option came in version 9

  // A version 8 caller: the field is beyond its struct and never read. Without the option
  // and without an all-reduce, replica 0 trains on its own gradient.
  const LinearIr m(/*all_reduce=*/false);
  plx_session_options old = host_update_options(1);
  old.struct_size = offsetof(plx_session_options, weight_update_on_host);
  std::string report;
  const std::vector<float> w = train(m, old, &report);
  EXPECT_FALSE(nlohmann::json::parse(report).at("weight_update_on_host").get<bool>());
  ASSERT_EQ(w.size(), 2u);
  EXPECT_FLOAT_EQ(w[0], 0.7f);  // 1 - 0.1 (1 + 2)
  EXPECT_FLOAT_EQ(w[1], 1.6f);  // 2 - 0.1 (2 + 2)
  const std::vector<float> off = train(m, host_update_options(0));
  EXPECT_EQ(w, off);
}

TEST(CApiHostUpdate, TrainsLikeTheGraphsAllReduce) {
  const LinearIr device(/*all_reduce=*/true), host(/*all_reduce=*/false);
  std::string report;
  const std::vector<float> on = train(host, host_update_options(1), &report);
  EXPECT_TRUE(nlohmann::json::parse(report).at("weight_update_on_host").get<bool>());
  const std::vector<float> graph = train(device, host_update_options(0));
  ASSERT_EQ(on.size(), 2u);
  EXPECT_EQ(on, graph);
  EXPECT_FLOAT_EQ(on[0], 0.6f);  // 1 - 0.1 (1.5 + 2.5): the means over the replicas
  EXPECT_FLOAT_EQ(on[1], 1.4f);  // 2 - 0.1 (3 + 3)
}

TEST(CApiHostUpdate, AGraphWithoutAWeightUpdateIsRefused) {
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 2));
  const int64_t shape[] = {2};
  const float init[] = {1.0f, 2.0f};
  plx_stream xs = 0, gs = 0;
  plx_tensor x = 0, w = 0, xw = 0, loss = 0, grad = 0;
  ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &xs, &x));
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, shape, 1, init, sizeof init, &w));
  const plx_tensor in[] = {x, w};
  ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "mul", in, 2, nullptr, 0, &xw, 1, nullptr));
  ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "reduce_sum", &xw, 1, nullptr, 0, &loss, 1, nullptr));
  ASSERT_PLX_OK(plx_ir_autodiff(ir.get(), loss, &w, 1, &grad));
  ASSERT_PLX_OK(plx_ir_add_d2h_stream(ir.get(), "grad", grad, &gs));
  const plx_session_options o = host_update_options(1);
  plx_session* s = nullptr;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "weight_update_on_host",
                   "no weight update");
  EXPECT_EQ(s, nullptr);
}

}  // namespace
