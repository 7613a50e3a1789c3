// Optimizers (core/ops/optimizer/optimizers.cpp): scaled_add_(x, y; a=1, b=1): x <- a*x + b*y in
// place (output 0 is x's storage), so a variable x keeps the update across runs;
// adamw_(w, grad, m, v, step, [lr]; lr, beta1, beta2, eps, weight_decay): PyTorch's AdamW step,
// w, m, v and step updated in place; sgd_momentum_(w, grad, momentum_buffer, step, [lr];
// lr, momentum, dampening, weight_decay, nesterov): PyTorch's SGD step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

session::SessionOptions options(int64_t device_iterations = 1) {
  session::SessionOptions o;
  o.device_iterations = device_iterations;
  o.threads_per_device = 1;
  return o;
}

Value read(const session::Session& session, ir::TensorId variable) {
  const ir::TensorInfo& t = session.graph().tensor(variable);
  std::vector<std::byte> bytes(t.bytes());
  session.read_variable(variable, bytes);
  return from_bytes(t.dtype, t.shape, bytes);
}

// x after `runs` updates with a fixed y, in double.
Value reference(const Value& x0, const Value& y, double a, double b, int runs) {
  Value x = x0;
  for (int r = 0; r < runs; ++r) {
    for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = a * x.data[i] + b * y.data[i];
  }
  return x;
}

struct Coefficients {
  const char* name;
  ir::Attributes attrs;
  double a, b;
};

TEST(ScaledAdd, UpdatesTheVariableInPlaceOverTwoRuns) {
  const Coefficients cases[] = {
      {"defaults a=1 b=1", {}, 1.0, 1.0},
      {"SGD a=1 b=-0.1", make_attrs({{"b", -0.1}}), 1.0, -0.1},
      {"a=0.9 b=0.5", make_attrs({{"a", 0.9}, {"b", 0.5}}), 0.9, 0.5},
      {"a=-2 b=0", make_attrs({{"a", -2.0}, {"b", 0.0}}), -2.0, 0.0},
      {"integer attributes a=2 b=3", make_attrs({{"a", int64_t{2}}, {"b", int64_t{3}}}), 2.0, 3.0},
  };
  for (const Coefficients& c : cases) {
    SCOPED_TRACE(c.name);
    const Value x0 = random_f32({3, 5}, 1), y = random_f32({3, 5}, 2);
    ir::Graph g;
    const std::vector<ir::TensorId> ids = add_inputs(g, {x0, y});
    const ir::TensorId out = g.add_op("scaled_add_", ids, c.attrs).front();
    EXPECT_EQ(g.storage_root(out), ids[0]) << "output 0 must be x's storage";
    session::Session session(g, options());
    expect_equal(read(session, ids[0]), x0, "before any run");
    session.run({}, {});
    expect_close(read(session, ids[0]), reference(x0, y, c.a, c.b, 1), kForwardTolerance, "after run 1");
    session.run({}, {});
    expect_close(read(session, ids[0]), reference(x0, y, c.a, c.b, 2), kForwardTolerance, "after run 2");
    expect_equal(read(session, ids[1]), y, "y is not modified");
  }
}

TEST(ScaledAdd, IsAFloatProductThenAFloatSumBitForBit) {
  // The library builds its elementwise loops for AVX-512 and AVX2 too (vector_clones.h); a
  // compiler contracting a x + b y into FMAs there (GCC's C++ default, -ffp-contract=fast)
  // would round once where the baseline rounds twice, and the bits would depend on the CPU.
  const Value x = random_f32({4099}, 61), y = random_f32({4099}, 62);
  for (const float a : {1.0f, 0.9f}) {
    SCOPED_TRACE("a = " + std::to_string(a));
    const float b = -0.3f;
    Value expected = x;
    for (size_t i = 0; i < expected.data.size(); ++i) {
      volatile float product = b * static_cast<float>(y.data[i]);  // volatile: rounded to float here
      volatile float scaled = a * static_cast<float>(x.data[i]);
      expected.data[i] = a == 1.0f ? static_cast<float>(x.data[i]) + product : scaled + product;
    }
    expect_equal(run_op1("scaled_add_", {x, y}, make_attrs({{"a", double{a}}, {"b", double{b}}})), expected, "x");
  }
}

TEST(ScaledAdd, StreamedIncrementsAccumulateAcrossStepsAndRuns) {
  // y comes from a host stream; with device_iterations = 2 each run applies two updates.
  const Value x0 = random_f32({4}, 3);
  ir::Graph g;
  const ir::TensorId x = add_inputs(g, {x0}).front();
  const ir::StreamId in = g.add_h2d_stream("y", ir::DType::Float32, {4});
  const ir::TensorId out =
      g.add_op("scaled_add_", {x, g.stream(in).tensor}, make_attrs({{"a", 0.5}, {"b", 2.0}})).front();
  const ir::StreamId fetched = g.add_d2h_stream("x_out", out);
  session::Session session(g, options(2));

  Value expected = x0;
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(testing::Message() << "run " << run);
    const Value ys = random_f32({2, 4}, 10 + static_cast<uint32_t>(run));
    std::vector<std::byte> host_y = to_bytes(ys), host_out(2 * 4 * sizeof(float));
    const runtime::HostArray inputs[] = {{in, host_y.data(), ir::DType::Float32, {2, 4}}};
    const runtime::HostArray outputs[] = {{fetched, host_out.data(), ir::DType::Float32, {2, 4}}};
    session.run(inputs, outputs);
    Value per_step{ir::DType::Float32, {2, 4}, {}};
    for (int step = 0; step < 2; ++step) {
      for (size_t i = 0; i < 4; ++i) expected.data[i] = 0.5 * expected.data[i] + 2.0 * ys.data[4 * step + i];
      per_step.data.insert(per_step.data.end(), expected.data.begin(), expected.data.end());
    }
    expect_close(from_bytes(ir::DType::Float32, {2, 4}, host_out), per_step, kForwardTolerance, "x after each step");
    expect_close(read(session, x), expected, kForwardTolerance, "variable after the run");
  }
}

TEST(ScaledAdd, StartsFromAWrittenValue) {
  const Value x0 = random_f32({2, 2}, 4), y = random_f32({2, 2}, 5), written = random_f32({2, 2}, 6);
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {x0, y});
  g.add_op("scaled_add_", ids, make_attrs({{"a", 0.25}, {"b", -1.0}}));
  session::Session session(g, options());
  session.write_variable(ids[0], to_bytes(written));
  session.run({}, {});
  expect_close(read(session, ids[0]), reference(written, y, 0.25, -1.0, 1), kForwardTolerance, "after run");
}

TEST(ScaledAdd, ConstantTargetIsRejected) {
  ir::Graph g;
  const Value x0 = random_f32({2}, 1);
  const ir::TensorId c = g.add_constant(ir::DType::Float32, {2}, to_bytes(x0));
  const ir::TensorId y = add_inputs(g, {x0}).front();
  try {
    g.add_op("scaled_add_", {c, y}, {});
    ADD_FAILURE() << "scaled_add_ on a constant was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("op 'scaled_add_'"));
    EXPECT_THAT(e.what(), HasSubstr("an in-place op cannot modify the constant"));
  }
}

TEST(ScaledAdd, ShapesMustMatch) {
  // No broadcasting: y must have x's shape.
  const OpError e = op_error("scaled_add_", {random_f32({2, 3}, 1), random_f32({3}, 2)});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'scaled_add_'"));
  EXPECT_THAT(e.message, HasSubstr("x and y must have the same shape"));
}

TEST(ScaledAdd, OnlyFloat32) {
  const OpError e = op_error("scaled_add_", {i32({2}, {1, 2}), i32({2}, {1, 2})});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'scaled_add_'"));
  EXPECT_THAT(e.message, HasSubstr("input 0 must be float32"));
}

TEST(ScaledAdd, AttributesMustBeNumbers) {
  const OpError e =
      op_error("scaled_add_", {random_f32({2}, 1), random_f32({2}, 2)}, make_attrs({{"a", std::string("fast")}}));
  EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("op 'scaled_add_': attribute 'a' must be"));
}

// --- adamw_ ---------------------------------------------------------------------------

struct AdamWHyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;

  ir::Attributes attrs() const {
    return make_attrs({{"lr", lr}, {"beta1", beta1}, {"beta2", beta2}, {"eps", eps}, {"weight_decay", weight_decay}});
  }
};

// The optimizer state in double: PyTorch's AdamW (torch/optim/adamw.py, _single_tensor_adamw,
// amsgrad off), written from its formulas.
struct AdamWState {
  Value w, m, v;
  double step = 0.0;

  void update(const Value& g, const AdamWHyper& h) {
    step += 1.0;
    const double bias1 = 1.0 - std::pow(h.beta1, step), bias2 = 1.0 - std::pow(h.beta2, step);
    for (size_t i = 0; i < w.data.size(); ++i) {
      const double gi = g.data[i];
      w.data[i] *= 1.0 - h.lr * h.weight_decay;
      m.data[i] = h.beta1 * m.data[i] + (1.0 - h.beta1) * gi;
      v.data[i] = h.beta2 * v.data[i] + (1.0 - h.beta2) * gi * gi;
      const double m_hat = m.data[i] / bias1, v_hat = v.data[i] / bias2;
      w.data[i] -= h.lr * m_hat / (std::sqrt(v_hat) + h.eps);
    }
  }
};

Value zeros(const ir::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return f32(shape, std::vector<double>(static_cast<size_t>(n), 0.0));
}

// Variables w, grad, m, v, step and one adamw_ op; returns their ids (in that order).
std::vector<ir::TensorId> adamw_graph(ir::Graph& g, const AdamWState& s, const Value& grad, const AdamWHyper& h,
                                      const ir::Shape& step_shape = {1}) {
  const std::vector<ir::TensorId> ids = add_inputs(g, {s.w, grad, s.m, s.v, f32(step_shape, {s.step})});
  const std::vector<ir::TensorId> outs = g.add_op("adamw_", ids, h.attrs());
  EXPECT_EQ(outs.size(), 4u);
  return ids;
}

void expect_state(const session::Session& session, const std::vector<ir::TensorId>& ids, const AdamWState& s,
                  const std::string& when) {
  expect_close(read(session, ids[0]), s.w, kForwardTolerance, "w " + when);
  expect_close(read(session, ids[2]), s.m, kForwardTolerance, "m " + when);
  expect_close(read(session, ids[3]), s.v, kForwardTolerance, "v " + when);
  const Value step = read(session, ids[4]);
  ASSERT_EQ(step.data.size(), 1u);
  EXPECT_EQ(step.data[0], s.step) << "step " << when;
}

TEST(AdamW, MatchesPyTorchFormulasOverSeveralSteps) {
  struct Case {
    const char* name;
    AdamWHyper h;
  };
  const Case cases[] = {
      {"PyTorch defaults", {}},
      {"lr 0.01, betas (0.8, 0.99), eps 1e-6, weight_decay 0.1", {0.01, 0.8, 0.99, 1e-6, 0.1}},
      {"no weight decay, large lr", {0.5, 0.9, 0.999, 1e-8, 0.0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const ir::Shape shape{3, 5};
    AdamWState s{random_f32(shape, 1), zeros(shape), zeros(shape), 0.0};
    ir::Graph g;
    const std::vector<ir::TensorId> ids = adamw_graph(g, s, zeros(shape), c.h);
    session::Session session(g, options());
    for (uint32_t run = 1; run <= 6; ++run) {
      // A new gradient each run, of varying scale, as training would produce.
      const Value grad = random_f32(shape, 100 + run, -std::pow(3.0, run - 3.0), std::pow(3.0, run - 3.0));
      session.write_variable(ids[1], to_bytes(grad));
      session.run({}, {});
      s.update(grad, c.h);
      expect_state(session, ids, s, "after run " + std::to_string(run));
    }
    expect_equal(read(session, ids[1]), random_f32(shape, 106, -27.0, 27.0), "grad is not modified");
  }
}

TEST(AdamW, FirstStepIsLrTimesTheSignOfTheGradient) {
  // By hand: at t = 1 the bias corrections make m_hat = g and v_hat = g^2, so each weight
  // moves by lr * g / (|g| + eps) after the decay w * (1 - lr*wd). Without them the step
  // would be lr * (1-beta1) g / (sqrt(1-beta2) |g|), 3.16 times larger at the defaults.
  // w = [1, -2, 0.5, 0], g = [0.5, -4, -1e-3, 2], defaults (lr 1e-3, wd 0.01, eps 1e-8):
  //   w * (1 - 1e-5)   = [0.99999, -1.99998, 0.499995, 0]
  //   lr g/(|g|+eps)   = [1e-3 * 0.99999998, -1e-3 * 0.9999999975, -1e-3 * 0.99999, 1e-3 * 0.999999995]
  const Value grad = f32({4}, {0.5, -4.0, -1e-3, 2.0});
  ir::Graph g;
  const std::vector<ir::TensorId> ids =
      add_inputs(g, {f32({4}, {1.0, -2.0, 0.5, 0.0}), grad, zeros({4}), zeros({4}), f32({1}, {0})});
  g.add_op("adamw_", ids, {});
  session::Session session(g, options());
  session.run({}, {});
  expect_close(read(session, ids[0]), f32({4}, {0.99899000002, -1.9989800000025, 0.5009949900001, -0.000999999995}),
               Tolerance{1e-6, 1e-6}, "w after one step");
  expect_close(read(session, ids[2]), f32({4}, {0.05, -0.4, -1e-4, 0.2}), Tolerance{1e-9, 1e-6}, "m = 0.1 g");
  expect_close(read(session, ids[3]), f32({4}, {2.5e-4, 1.6e-2, 1e-9, 4e-3}), Tolerance{1e-12, 1e-6}, "v = 0.001 g^2");
  expect_equal(read(session, ids[4]), f32({1}, {1}), "step");
}

TEST(AdamW, AgreesWithValuesComputedIndependently) {
  // Three steps with lr 0.01, betas (0.8, 0.99), eps 1e-6, weight_decay 0.1. Expected values
  // computed in double by a separate Python script of PyTorch's formulas (bias-corrected
  // m_hat, v_hat); step 1 of w[0] by hand: 0.5 * 0.999 - 0.01 * 0.1 / (0.1 + 1e-6) = 0.489500099999.
  const AdamWHyper h{0.01, 0.8, 0.99, 1e-6, 0.1};
  const Value grads[] = {f32({5}, {0.1, -0.2, 0.3, 1e-3, -4.0}), f32({5}, {-0.5, 0.25, 0.3, 0.0, 2.0}),
                         f32({5}, {0.05, 0.05, -1.0, -1e-3, 0.5})};
  const Value expected_w[] = {
      f32({5}, {0.489500099999, -0.98900004999975, 1.9880000333332222, -0.00999000999000999, 0.2597499975000006}),
      f32({5}, {0.49546712705529916, -0.9902184535887412, 1.9760120666331111, -0.01627234467237972,
                0.26160161731401793}),
      f32({5}, {0.4989348040419058, -0.9919056604033666, 1.9777334689252244, -0.014451297277905338,
                0.2620684971757255})};
  const Value expected_m = f32({5}, {-0.0572, 0.0244, -0.1136, -7.2e-05, -0.092});
  const Value expected_v = f32({5}, {0.00259801, 0.00103579, 0.01177309, 1.9801e-08, 0.198916});
  AdamWState s{f32({5}, {0.5, -1.0, 2.0, 0.0, 0.25}), zeros({5}), zeros({5}), 0.0};
  ir::Graph g;
  const std::vector<ir::TensorId> ids = adamw_graph(g, s, grads[0], h, {});
  session::Session session(g, options());
  for (size_t k = 0; k < 3; ++k) {
    session.write_variable(ids[1], to_bytes(grads[k]));
    session.run({}, {});
    expect_close(read(session, ids[0]), expected_w[k], Tolerance{1e-6, 1e-6}, "w after step " + std::to_string(k + 1));
  }
  expect_close(read(session, ids[2]), expected_m, Tolerance{1e-8, 1e-6}, "m after 3 steps");
  expect_close(read(session, ids[3]), expected_v, Tolerance{1e-10, 1e-6}, "v after 3 steps");
  expect_equal(read(session, ids[4]), f32({}, {3}), "step after 3 steps");
}

TEST(AdamW, ResumesFromAStepCountAndState) {
  // Bias corrections use t = 11 when step holds 10 (a resumed run).
  const ir::Shape shape{4, 3};
  const AdamWHyper h{2e-3, 0.9, 0.999, 1e-8, 0.05};
  AdamWState s{random_f32(shape, 7), random_f32(shape, 8, -0.1, 0.1), random_f32(shape, 9, 0.0, 0.01), 10.0};
  const Value grad = random_f32(shape, 10);
  ir::Graph g;
  const std::vector<ir::TensorId> ids = adamw_graph(g, s, grad, h);
  session::Session session(g, options());
  session.run({}, {});
  s.update(grad, h);
  expect_state(session, ids, s, "after one run");
}

TEST(AdamW, EveryStepOfARunUpdatesOnce) {
  // grad streamed from the host, device_iterations 3: three updates per run, and the
  // updated w streamed back after each.
  const ir::Shape shape{6};
  const AdamWHyper h{0.05, 0.9, 0.999, 1e-8, 0.01};
  AdamWState s{random_f32(shape, 11), zeros(shape), zeros(shape), 0.0};
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {s.w, s.m, s.v, f32({1}, {0})});
  const ir::StreamId in = g.add_h2d_stream("grad", ir::DType::Float32, shape);
  const std::vector<ir::TensorId> outs = g.add_op("adamw_", {ids[0], g.stream(in).tensor, ids[1], ids[2], ids[3]}, h.attrs());
  const ir::StreamId fetched = g.add_d2h_stream("w_out", outs[0]);
  session::Session session(g, options(3));
  for (uint32_t run = 0; run < 2; ++run) {
    SCOPED_TRACE(testing::Message() << "run " << run);
    const Value grads = random_f32({3, 6}, 20 + run);
    std::vector<std::byte> host_g = to_bytes(grads), host_w(3 * 6 * sizeof(float));
    const runtime::HostArray inputs[] = {{in, host_g.data(), ir::DType::Float32, {3, 6}}};
    const runtime::HostArray outputs[] = {{fetched, host_w.data(), ir::DType::Float32, {3, 6}}};
    session.run(inputs, outputs);
    Value per_step{ir::DType::Float32, {3, 6}, {}};
    for (size_t step = 0; step < 3; ++step) {
      s.update(Value{ir::DType::Float32, shape, std::vector<double>(grads.data.begin() + 6 * step,
                                                                     grads.data.begin() + 6 * (step + 1))},
               h);
      per_step.data.insert(per_step.data.end(), s.w.data.begin(), s.w.data.end());
    }
    expect_close(from_bytes(ir::DType::Float32, {3, 6}, host_w), per_step, kForwardTolerance, "w after each step");
    expect_close(read(session, ids[0]), s.w, kForwardTolerance, "w after the run");
    EXPECT_EQ(read(session, ids[3]).data[0], s.step);
  }
}

TEST(AdamW, OutputsAreTheInputsUpdatedInPlace) {
  ir::Graph g;
  const Value w = random_f32({2, 2}, 1);
  const std::vector<ir::TensorId> ids = add_inputs(g, {w, w, zeros({2, 2}), zeros({2, 2}), f32({1}, {0})});
  const std::vector<ir::TensorId> outs = g.add_op("adamw_", ids, {});
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_EQ(g.storage_root(outs[0]), ids[0]);
  EXPECT_EQ(g.storage_root(outs[1]), ids[2]);
  EXPECT_EQ(g.storage_root(outs[2]), ids[3]);
  EXPECT_EQ(g.storage_root(outs[3]), ids[4]);
  EXPECT_FALSE(g.op(static_cast<ir::OpId>(g.num_ops() - 1)).schema->grad) << "adamw_ is not differentiable";
}

TEST(AdamW, ShapeErrorsNameTheArgument) {
  const Value a = random_f32({2, 3}, 1), other = random_f32({3, 2}, 2), step = f32({1}, {0});
  const struct {
    std::vector<Value> inputs;
    const char* rule;
  } cases[] = {
      {{a, other, a, a, step}, "grad [3,2] must have w's shape [2,3]"},
      {{a, a, other, a, step}, "m [3,2] must have w's shape [2,3]"},
      {{a, a, a, other, step}, "v [3,2] must have w's shape [2,3]"},
      {{a, a, a, a, f32({2}, {0, 0})}, "step [2] must be a float32 [] or [1] tensor (the update count)"},
      {{a, a, a, a, f32({1, 1}, {0})}, "step [1,1] must be a float32 [] or [1] tensor"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rule);
    const OpError e = expect_build_error("adamw_", c.inputs, {}, ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
}

TEST(AdamW, OnlyFloat32) {
  const Value a = random_f32({2}, 1);
  OpError e = expect_build_error("adamw_", {a, a, a, a, i32({1}, {0})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 4 (step) must be float32"));
  e = expect_build_error("adamw_", {a, i32({2}, {0, 1}), a, a, f32({1}, {0})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 1 (grad) must be float32"));
}

TEST(AdamW, UpdatedTensorsMustBeDistinct) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids =
      add_inputs(g, {random_f32({3}, 1), random_f32({3}, 2), zeros({3}), f32({1}, {0})});
  try {
    g.add_op("adamw_", {ids[0], ids[1], ids[2], ids[2], ids[3]}, {});  // m and v are one tensor
    ADD_FAILURE() << "adamw_ with m == v was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("op 'adamw_'"));
    EXPECT_THAT(e.what(),
                HasSubstr("m and v share storage: w, m, v and step are updated in place and must be distinct tensors"));
  }
}

TEST(AdamW, ConstantStateIsRejected) {
  ir::Graph g;
  const Value a = random_f32({2}, 1);
  const std::vector<ir::TensorId> ids = add_inputs(g, {a, a, a, a});
  const ir::TensorId step = g.add_constant(ir::DType::Float32, {1}, to_bytes(f32({1}, {0})));
  try {
    g.add_op("adamw_", {ids[0], ids[1], ids[2], ids[3], step}, {});
    ADD_FAILURE() << "adamw_ on a constant step was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("an in-place op cannot modify the constant"));
  }
}

TEST(AdamW, HyperParameterErrorsNameTheAttribute) {
  const Value a = random_f32({2}, 1), step = f32({1}, {0});
  const struct {
    const char* name;
    double value;
    const char* rule;
  } cases[] = {
      {"beta1", 1.0, "beta1 is 1, must be in [0, 1)"},       {"beta1", -0.1, "beta1 is -0.1, must be in [0, 1)"},
      {"beta2", 1.5, "beta2 is 1.5, must be in [0, 1)"},     {"lr", -0.1, "lr is -0.1, must be >= 0"},
      {"eps", -1e-8, "eps is -1e-08, must be >= 0"},         {"weight_decay", -0.01, "weight_decay is -0.01, must be >= 0"},
      {"beta2", std::nan(""), "beta2 is nan, must be in [0, 1)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rule);
    const OpError e =
        expect_build_error("adamw_", {a, a, a, a, step}, make_attrs({{c.name, c.value}}), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
}

TEST(AdamW, LearningRateTensorOverridesTheAttributeEachRun) {
  // A 6th input lr (a variable rewritten between runs, as a schedule would) replaces the lr
  // attribute, which is set to a different value to show it is ignored; both [] and [1].
  for (const ir::Shape& lr_shape : {ir::Shape{}, ir::Shape{1}}) {
    SCOPED_TRACE(ir::shape_string(lr_shape));
    const ir::Shape shape{2, 3};
    AdamWHyper h{0.5, 0.9, 0.999, 1e-8, 0.1};
    AdamWState s{random_f32(shape, 31), zeros(shape), zeros(shape), 0.0};
    ir::Graph g;
    std::vector<ir::TensorId> ids = add_inputs(g, {s.w, zeros(shape), s.m, s.v, f32({1}, {0}), f32(lr_shape, {0})});
    ASSERT_EQ(g.add_op("adamw_", ids, h.attrs()).size(), 4u);
    session::Session session(g, options());
    const double rates[] = {1e-3, 4e-3, 2.5e-4};
    for (uint32_t run = 0; run < 3; ++run) {
      const Value grad = random_f32(shape, 40 + run), lr = f32(lr_shape, {rates[run]});
      session.write_variable(ids[1], to_bytes(grad));
      session.write_variable(ids[5], to_bytes(lr));
      session.run({}, {});
      h.lr = lr.data[0];  // the float32 value the kernel reads
      s.update(grad, h);
      expect_state(session, ids, s, "after run " + std::to_string(run));
    }
    expect_equal(read(session, ids[5]), f32(lr_shape, {rates[2]}), "lr is not modified");
  }
}

TEST(AdamW, LearningRateTensorMustBeAFloat32Scalar) {
  const Value a = random_f32({2}, 1), step = f32({1}, {0});
  OpError e = expect_build_error("adamw_", {a, a, a, a, step, f32({2}, {1e-3, 1e-3})}, {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("lr [2] must be a float32 [] or [1] tensor (the learning rate, overriding attribute 'lr')"));
  e = expect_build_error("adamw_", {a, a, a, a, step, i32({}, {1})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 5 (lr) must be float32"));
}

// --- sgd_momentum_ --------------------------------------------------------------------

struct SgdHyper {
  double lr = 0.01, momentum = 0.9, dampening = 0.0, weight_decay = 0.0;
  int64_t nesterov = 0;

  ir::Attributes attrs() const {
    return make_attrs({{"lr", lr},
                       {"momentum", momentum},
                       {"dampening", dampening},
                       {"weight_decay", weight_decay},
                       {"nesterov", nesterov}});
  }
};

// PyTorch's SGD in double, written from torch/optim/sgd.py (_single_tensor_sgd, maximize
// off): the buffer is a copy of the first step's gradient (momentum_buffer is None then).
struct SgdState {
  Value w, buf;
  double step = 0.0;

  void update(const Value& grad, const SgdHyper& h) {
    for (size_t i = 0; i < w.data.size(); ++i) {
      double g = grad.data[i] + h.weight_decay * w.data[i];
      if (h.momentum != 0.0) {
        buf.data[i] = step == 0.0 ? g : h.momentum * buf.data[i] + (1.0 - h.dampening) * g;
        g = h.nesterov ? g + h.momentum * buf.data[i] : buf.data[i];
      }
      w.data[i] -= h.lr * g;
    }
    step += 1.0;
  }
};

// Variables w, grad, momentum_buffer, step (and lr when given) and one sgd_momentum_ op.
std::vector<ir::TensorId> sgd_graph(ir::Graph& g, const SgdState& s, const Value& grad, const SgdHyper& h,
                                    const std::vector<Value>& lr = {}) {
  std::vector<Value> inputs = {s.w, grad, s.buf, f32({}, {s.step})};
  inputs.insert(inputs.end(), lr.begin(), lr.end());
  const std::vector<ir::TensorId> ids = add_inputs(g, inputs);
  EXPECT_EQ(g.add_op("sgd_momentum_", ids, h.attrs()).size(), 3u);
  return ids;
}

void expect_sgd_state(const session::Session& session, const std::vector<ir::TensorId>& ids, const SgdState& s,
                      const std::string& when) {
  expect_close(read(session, ids[0]), s.w, kForwardTolerance, "w " + when);
  expect_close(read(session, ids[2]), s.buf, kForwardTolerance, "momentum_buffer " + when);
  EXPECT_EQ(read(session, ids[3]).data.at(0), s.step) << "step " << when;
}

TEST(SgdMomentum, MatchesPyTorchOverSeveralSteps) {
  const struct {
    const char* name;
    SgdHyper h;
  } cases[] = {
      {"defaults: lr 0.01, momentum 0.9", {}},
      {"momentum 0.8, dampening 0.5, weight_decay 0.01, lr 0.1", {0.1, 0.8, 0.5, 0.01, 0}},
      {"nesterov, momentum 0.9, weight_decay 0.1, lr 0.05", {0.05, 0.9, 0.0, 0.1, 1}},
      {"momentum 0: plain SGD with weight decay", {0.2, 0.0, 0.0, 0.05, 0}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const ir::Shape shape{3, 4};
    // A buffer of garbage: the first step must overwrite it (or, with momentum 0, keep it).
    SgdState s{random_f32(shape, 1), random_f32(shape, 2), 0.0};
    ir::Graph g;
    const std::vector<ir::TensorId> ids = sgd_graph(g, s, zeros(shape), c.h);
    session::Session session(g, options());
    for (uint32_t run = 1; run <= 5; ++run) {
      const Value grad = random_f32(shape, 100 + run, -2.0, 2.0);
      session.write_variable(ids[1], to_bytes(grad));
      session.run({}, {});
      s.update(grad, c.h);
      expect_sgd_state(session, ids, s, "after run " + std::to_string(run));
    }
    expect_equal(read(session, ids[1]), random_f32(shape, 105, -2.0, 2.0), "grad is not modified");
  }
}

TEST(SgdMomentum, FirstStepCopiesTheGradientIntoTheBuffer) {
  // By hand, lr 0.1, momentum 0.9, dampening 0.5, w = [1, -2], g = [0.5, 1] twice:
  //   step 1: buf = g = [0.5, 1] (a zero-initialised buffer would give 0.5 g = [0.25, 0.5]),
  //           w = [1 - 0.05, -2 - 0.1] = [0.95, -2.1]
  //   step 2: buf = 0.9 buf + 0.5 g = [0.7, 1.4], w = [0.95 - 0.07, -2.1 - 0.14] = [0.88, -2.24]
  ir::Graph g;
  const std::vector<ir::TensorId> ids =
      add_inputs(g, {f32({2}, {1.0, -2.0}), f32({2}, {0.5, 1.0}), zeros({2}), f32({1}, {0})});
  g.add_op("sgd_momentum_", ids, make_attrs({{"lr", 0.1}, {"momentum", 0.9}, {"dampening", 0.5}}));
  session::Session session(g, options());
  session.run({}, {});
  expect_close(read(session, ids[2]), f32({2}, {0.5, 1.0}), Tolerance{1e-7, 1e-6}, "buf after step 1");
  expect_close(read(session, ids[0]), f32({2}, {0.95, -2.1}), Tolerance{1e-7, 1e-6}, "w after step 1");
  session.run({}, {});
  expect_close(read(session, ids[2]), f32({2}, {0.7, 1.4}), Tolerance{1e-7, 1e-6}, "buf after step 2");
  expect_close(read(session, ids[0]), f32({2}, {0.88, -2.24}), Tolerance{1e-7, 1e-6}, "w after step 2");
  expect_equal(read(session, ids[3]), f32({1}, {2}), "step");
}

TEST(SgdMomentum, ResumesFromAStepCountAndBuffer) {
  // step 7 and a saved buffer: the buffer is decayed, not replaced.
  const ir::Shape shape{5};
  const SgdHyper h{0.03, 0.9, 0.1, 0.02, 0};
  SgdState s{random_f32(shape, 3), random_f32(shape, 4), 7.0};
  const Value grad = random_f32(shape, 5);
  ir::Graph g;
  const std::vector<ir::TensorId> ids = sgd_graph(g, s, grad, h);
  session::Session session(g, options());
  session.run({}, {});
  s.update(grad, h);
  expect_sgd_state(session, ids, s, "after one run");
}

TEST(SgdMomentum, LearningRateTensorOverridesTheAttributeEachRun) {
  const ir::Shape shape{4};
  SgdHyper h{5.0, 0.9, 0.0, 0.0, 1};  // lr attribute 5: ignored
  SgdState s{random_f32(shape, 6), zeros(shape), 0.0};
  ir::Graph g;
  const std::vector<ir::TensorId> ids = sgd_graph(g, s, zeros(shape), h, {f32({1}, {0})});
  session::Session session(g, options());
  const double rates[] = {0.1, 0.05, 0.2};
  for (uint32_t run = 0; run < 3; ++run) {
    const Value grad = random_f32(shape, 50 + run), lr = f32({1}, {rates[run]});
    session.write_variable(ids[1], to_bytes(grad));
    session.write_variable(ids[4], to_bytes(lr));
    session.run({}, {});
    h.lr = lr.data[0];
    s.update(grad, h);
    expect_sgd_state(session, ids, s, "after run " + std::to_string(run));
  }
}

TEST(SgdMomentum, OffloadedStateGivesTheSameUpdates) {
  // momentum_buffer and step are optimizer state: offload_optimizer_state keeps them in host
  // memory and loads them around the op, with the same numbers.
  const ir::Shape shape{6};
  const SgdHyper h{0.05, 0.9, 0.0, 0.01, 1};
  SgdState s{random_f32(shape, 8), zeros(shape), 0.0};
  ir::Graph g;
  const std::vector<ir::TensorId> ids = sgd_graph(g, s, zeros(shape), h);
  session::SessionOptions offloaded = options();
  offloaded.offload_optimizer_state = true;
  session::Session session(g, offloaded);
  EXPECT_EQ(session.variable_storage(ids[2]).remote_bytes, 6 * sizeof(float)) << "momentum_buffer on the host";
  EXPECT_EQ(session.variable_storage(ids[2]).device_bytes, 0u);
  EXPECT_EQ(session.variable_storage(ids[3]).remote_bytes, sizeof(float)) << "step on the host";
  EXPECT_EQ(session.variable_storage(ids[0]).remote_bytes, 0u) << "w stays on the device";
  for (uint32_t run = 1; run <= 3; ++run) {
    const Value grad = random_f32(shape, 60 + run);
    session.write_variable(ids[1], to_bytes(grad));
    session.run({}, {});
    s.update(grad, h);
    expect_sgd_state(session, ids, s, "after run " + std::to_string(run));
  }
}

TEST(SgdMomentum, OutputsAreTheInputsUpdatedInPlace) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {random_f32({3}, 1), random_f32({3}, 2), zeros({3}), f32({}, {0})});
  const std::vector<ir::TensorId> outs = g.add_op("sgd_momentum_", ids, {});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(g.storage_root(outs[0]), ids[0]);
  EXPECT_EQ(g.storage_root(outs[1]), ids[2]);
  EXPECT_EQ(g.storage_root(outs[2]), ids[3]);
  EXPECT_FALSE(g.op(static_cast<ir::OpId>(g.num_ops() - 1)).schema->grad) << "sgd_momentum_ is not differentiable";
}

TEST(SgdMomentum, ShapeAndDTypeErrorsNameTheArgument) {
  const Value a = random_f32({2, 3}, 1), other = random_f32({3, 2}, 2), step = f32({}, {0});
  const struct {
    std::vector<Value> inputs;
    ir::ErrorCode code;
    const char* rule;
  } cases[] = {
      {{a, other, a, step}, ir::ErrorCode::ShapeMismatch, "grad [3,2] must have w's shape [2,3]"},
      {{a, a, other, step}, ir::ErrorCode::ShapeMismatch, "momentum_buffer [3,2] must have w's shape [2,3]"},
      {{a, a, a, f32({2}, {0, 0})}, ir::ErrorCode::ShapeMismatch,
       "step [2] must be a float32 [] or [1] tensor (the update count)"},
      {{a, a, a, step, f32({1, 1}, {0.1})}, ir::ErrorCode::ShapeMismatch,
       "lr [1,1] must be a float32 [] or [1] tensor (the learning rate, overriding attribute 'lr')"},
      {{a, a, a, i32({}, {0})}, ir::ErrorCode::DTypeMismatch, "input 3 (step) must be float32"},
      {{a, a, a, step, i32({}, {0})}, ir::ErrorCode::DTypeMismatch, "input 4 (lr) must be float32"},
      {{i32({2}, {0, 1}), i32({2}, {0, 1}), i32({2}, {0, 1}), step}, ir::ErrorCode::DTypeMismatch,
       "input 0 (w) must be float32"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rule);
    const OpError e = expect_build_error("sgd_momentum_", c.inputs, {}, c.code);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
}

TEST(SgdMomentum, HyperParameterErrorsNameTheRule) {
  const Value a = random_f32({2}, 1), step = f32({}, {0});
  const struct {
    ir::Attributes attrs;
    const char* rule;
  } cases[] = {
      {make_attrs({{"nesterov", int64_t{1}}, {"dampening", 0.1}}),
       "nesterov momentum requires momentum > 0 and dampening == 0 (as torch.optim.SGD), got momentum 0.9 and "
       "dampening 0.1"},
      {make_attrs({{"nesterov", int64_t{1}}, {"momentum", 0.0}}),
       "nesterov momentum requires momentum > 0 and dampening == 0"},
      {make_attrs({{"nesterov", int64_t{2}}}), "nesterov is 2, must be 0 or 1"},
      {make_attrs({{"lr", -0.1}}), "lr is -0.1, must be >= 0"},
      {make_attrs({{"momentum", -0.9}}), "momentum is -0.9, must be >= 0"},
      {make_attrs({{"weight_decay", -1e-4}}), "weight_decay is -0.0001, must be >= 0"},
      {make_attrs({{"dampening", std::nan("")}}), "dampening is nan, must be finite"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rule);
    const OpError e = expect_build_error("sgd_momentum_", {a, a, a, step}, c.attrs, ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr(c.rule));
  }
}

TEST(SgdMomentum, UpdatedTensorsMustBeDistinct) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {random_f32({3}, 1), random_f32({3}, 2), f32({}, {0})});
  try {
    g.add_op("sgd_momentum_", {ids[0], ids[1], ids[0], ids[2]}, {});  // the buffer is w
    ADD_FAILURE() << "sgd_momentum_ with momentum_buffer == w was accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("op 'sgd_momentum_'"));
    EXPECT_THAT(e.what(), HasSubstr("w and momentum_buffer share storage: w, momentum_buffer and step are updated "
                                    "in place and must be distinct tensors"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
