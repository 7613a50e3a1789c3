// Optimizers (core/ops/optimizers.cpp): scaled_add_(x, y; a=1, b=1): x <- a*x + b*y in
// place (output 0 is x's storage), so a variable x keeps the update across runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/runtime/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

runtime::SessionOptions options(int64_t device_iterations = 1) {
  runtime::SessionOptions o;
  o.device_iterations = device_iterations;
  o.threads_per_device = 1;
  return o;
}

Value read(const runtime::Session& session, ir::TensorId variable) {
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
    runtime::Session session(g, options());
    expect_equal(read(session, ids[0]), x0, "before any run");
    session.run({}, {});
    expect_close(read(session, ids[0]), reference(x0, y, c.a, c.b, 1), kForwardTolerance, "after run 1");
    session.run({}, {});
    expect_close(read(session, ids[0]), reference(x0, y, c.a, c.b, 2), kForwardTolerance, "after run 2");
    expect_equal(read(session, ids[1]), y, "y is not modified");
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
  runtime::Session session(g, options(2));

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
  runtime::Session session(g, options());
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

}  // namespace
}  // namespace plexus::ops::test
