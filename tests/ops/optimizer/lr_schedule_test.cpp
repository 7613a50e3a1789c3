// Learning-rate schedule (core/ops/optimizer/lr_schedule.cpp): lr_schedule(step; base_lr,
// warmup_steps, total_steps, min_lr) -> float32 [], linear warm-up (s + 1) / warmup *
// base_lr, then cosine decay to min_lr at total_steps, min_lr afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// The float32 result vs a value in double: relative 1e-6 (float32 rounding is 6e-8).
constexpr Tolerance kLrTolerance{1e-12, 1e-6};

ir::Attributes schedule(double base_lr, int64_t warmup, int64_t total, double min_lr) {
  return make_attrs({{"base_lr", base_lr}, {"warmup_steps", warmup}, {"total_steps", total}, {"min_lr", min_lr}});
}

// build-nanogpt's get_lr(it), in double.
double reference_lr(double it, double max_lr, double warmup, double max_steps, double min_lr) {
  if (it < warmup) return max_lr * (it + 1) / warmup;
  if (it > max_steps) return min_lr;
  const double decay_ratio = (it - warmup) / (max_steps - warmup);
  return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * decay_ratio)) * (max_lr - min_lr);
}

TEST(LrSchedule, ValuesAtTheKeyPoints) {
  // base_lr 1e-3, warm-up 10, total 110, min_lr 1e-4; by hand:
  const struct {
    double step, lr;
    const char* what;
  } cases[] = {
      {0, 1e-4, "first step: base_lr / warmup"},
      {4, 5e-4, "warm-up (4 + 1) / 10"},
      {9, 1e-3, "last warm-up step reaches base_lr"},
      {10, 1e-3, "decay starts at base_lr (ratio 0)"},
      {35, 1e-4 + 0.5 * (1.0 + std::sqrt(0.5)) * 9e-4, "ratio 0.25: coeff (1 + cos(pi/4)) / 2"},
      {60, 5.5e-4, "ratio 0.5: halfway between base_lr and min_lr"},
      {110, 1e-4, "total_steps: min_lr"},
      {111, 1e-4, "after total_steps: min_lr"},
      {1e6, 1e-4, "long after: min_lr"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const Value lr = run_op1("lr_schedule", {f32({}, {c.step})}, schedule(1e-3, 10, 110, 1e-4));
    expect_close(lr, f32({}, {c.lr}), kLrTolerance, "lr at step " + std::to_string(c.step));
  }
}

TEST(LrSchedule, MatchesTheReferenceAtEveryStep) {
  // Every step of a short schedule, with a [1] step tensor, no warm-up and min_lr 0 too.
  const struct {
    double base_lr;
    int64_t warmup, total;
    double min_lr;
  } cases[] = {{6e-4, 7, 40, 6e-5}, {0.1, 0, 20, 0.0}, {1.0, 3, 4, 0.5}};
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "warmup " << c.warmup << " total " << c.total);
    for (int64_t s = 0; s <= c.total + 2; ++s) {
      const Value lr = run_op1("lr_schedule", {f32({1}, {static_cast<double>(s)})},
                               schedule(c.base_lr, c.warmup, c.total, c.min_lr));
      const double expected = reference_lr(static_cast<double>(s), c.base_lr, static_cast<double>(c.warmup),
                                           static_cast<double>(c.total), c.min_lr);
      expect_close(lr, f32({}, {expected}), kLrTolerance, "lr at step " + std::to_string(s));
    }
  }
}

TEST(LrSchedule, DrivesTheOptimizerFromTheStepItIncrements) {
  // lr_schedule before sgd_momentum_ (momentum 0) on the optimizer's own step: each update
  // uses the rate of the step count before it, 8 updates in 2 runs of 4, no recompiling.
  const ir::Attributes attrs = schedule(0.4, 2, 6, 0.1);
  ir::Graph g;
  const Value w0 = f32({2}, {1.0, -1.0}), grad = f32({2}, {0.5, 2.0});
  const std::vector<ir::TensorId> ids = add_inputs(g, {w0, grad, f32({2}, {0, 0}), f32({}, {0})});
  const ir::TensorId lr = g.add_op("lr_schedule", {ids[3]}, attrs).front();
  g.add_op("sgd_momentum_", {ids[0], ids[1], ids[2], ids[3], lr}, make_attrs({{"momentum", 0.0}}));
  const ir::StreamId fetched = g.add_d2h_stream("lr", lr);
  session::SessionOptions options;
  options.device_iterations = 4;
  options.threads_per_device = 1;
  session::Session session(g, options);
  double lr_sum = 0.0;
  for (int run = 0; run < 2; ++run) {
    std::vector<std::byte> host(4 * sizeof(float));
    const runtime::HostArray outputs[] = {{fetched, host.data(), ir::DType::Float32, {4}}};
    session.run({}, outputs);
    Value expected{ir::DType::Float32, {4}, {}};
    for (int k = 0; k < 4; ++k) {
      expected.data.push_back(reference_lr(4.0 * run + k, 0.4, 2, 6, 0.1));
      lr_sum += static_cast<float>(expected.data.back());
    }
    expect_close(from_bytes(ir::DType::Float32, {4}, host), expected, kLrTolerance, "lr of each step");
  }
  const ir::TensorInfo& w = session.graph().tensor(ids[0]);
  std::vector<std::byte> bytes(w.bytes());
  session.read_variable(ids[0], bytes);
  expect_close(from_bytes(w.dtype, w.shape, bytes), f32({2}, {1.0 - lr_sum * 0.5, -1.0 - lr_sum * 2.0}),
               kForwardTolerance, "w after 8 updates, w0 - sum(lr) * grad");
}

TEST(LrSchedule, InputAndAttributeErrors) {
  const Value step = f32({}, {0});
  const struct {
    Value input;
    ir::Attributes attrs;
    ir::ErrorCode code;
    const char* rule;
  } cases[] = {
      {f32({2}, {0, 1}), schedule(1e-3, 1, 2, 0), ir::ErrorCode::ShapeMismatch,
       "step [2] must be a float32 [] or [1] tensor (the update count before this step's update)"},
      {i32({}, {0}), schedule(1e-3, 1, 2, 0), ir::ErrorCode::DTypeMismatch, "input 0 (step) must be float32"},
      {step, schedule(1e-3, -1, 2, 0), ir::ErrorCode::InvalidArgument, "warmup_steps is -1, must be >= 0"},
      {step, schedule(1e-3, 5, 5, 0), ir::ErrorCode::InvalidArgument,
       "total_steps is 5, must be greater than warmup_steps (5)"},
      {step, schedule(-1e-3, 1, 2, 0), ir::ErrorCode::InvalidArgument, "base_lr is -0.001, must be finite and >= 0"},
      {step, schedule(1e-3, 1, 2, 2e-3), ir::ErrorCode::InvalidArgument,
       "min_lr is 0.002, must be in [0, base_lr] = [0, 0.001]"},
      {step, schedule(1e-3, 1, 2, -1e-5), ir::ErrorCode::InvalidArgument, "min_lr is -1e-05, must be in [0, base_lr]"},
      {step, make_attrs({{"warmup_steps", int64_t{1}}}), ir::ErrorCode::InvalidArgument, "total_steps"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rule);
    const OpError e = expect_build_error("lr_schedule", {c.input}, c.attrs, c.code);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
}

TEST(LrSchedule, NegativeOrNanStepIsARunError) {
  for (const double bad : {-1.0, std::nan("")}) {
    SCOPED_TRACE(bad);
    const OpError e = op_error("lr_schedule", {f32({}, {bad})}, schedule(1e-3, 1, 2, 0));
    EXPECT_EQ(e.stage, Stage::Run);
    EXPECT_EQ(e.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(e.message, HasSubstr("op 'lr_schedule#0': step is " + std::string(std::isnan(bad) ? "nan" : "-1") +
                                     ", must be >= 0 (the number of updates so far)"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
