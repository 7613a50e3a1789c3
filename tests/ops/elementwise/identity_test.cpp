// identity(x) and detach(x) (core/ops/elementwise/identity.cpp): a copy of x of any dtype, bit for bit,
// in a buffer of its own; identity's gradient is dy, detach's none (stop-gradient).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/ir/autodiff.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

TEST(Identity, IdentityAndDetachCopyEveryDtype) {
  for (const std::string op : {"identity", "detach"}) {
    const Value x = f32({2, 3}, {-0.0, 2.5e-3, 1e-40, 3.5, -7.25, std::numeric_limits<double>::infinity()});
    expect_equal(run_op1(op, {x}), x, op + ", float32");
    const Value i = i32({4}, {INT32_MIN, -1, 0, INT32_MAX});
    expect_equal(run_op1(op, {i}), i, op + ", int32");
    const Value u = u8({3}, {0, 128, 255});
    expect_equal(run_op1(op, {u}), u, op + ", uint8");
  }
}

TEST(Identity, PassesTheGradientThrough) {
  expect_gradients("identity", {random_f32({3, 4}, 11)}, {}, [](const std::vector<Value>& in) { return in[0]; });
}

// d/dx sum(x * detach(x)) = detach(x) = x: only the undetached path contributes (identity
// in detach's place gives 2x).
TEST(Detach, StopsTheGradientOfItsPath) {
  const Value v = random_f32({3, 4}, 12);
  for (const std::string op : {"detach", "identity"}) {
    ir::Graph g;
    const ir::TensorId x = add_inputs(g, {v}).front();
    const ir::TensorId d = g.add_op(op, {x}, {}).front();
    const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("mul", {x, d}, {}).front()}, {}).front();
    const ir::TensorId dx = ir::autodiff(g, loss, std::vector<ir::TensorId>{x}).front();
    const Value expected = map_unary(v, [&](double e) { return op == "detach" ? e : 2 * e; });
    expect_equal(evaluate(g, {dx}).front(), expected, "d sum(x * " + op + "(x)) / dx");
  }
}

TEST(Detach, AGradientWhoseEveryPathIsDetachedIsRefusedNamingTheTensor) {
  ir::Graph g;
  const ir::TensorId x = add_inputs(g, {random_f32({2}, 13)}).front();
  const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("detach", {x}, {}).front()}, {}).front();
  try {
    ir::autodiff(g, loss, std::vector<ir::TensorId>{x});
    FAIL() << "autodiff through detach alone succeeded";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("does not depend on 'in0'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace plexus::ops::test
