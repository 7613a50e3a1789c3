// identity(x) (core/ops/identity.cpp): a copy of x of any dtype, bit for bit, in a buffer
// of its own; its gradient is dy.
#include <gtest/gtest.h>

#include <limits>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

TEST(Identity, CopiesEveryDtype) {
  const Value x = f32({2, 3}, {-0.0, 2.5e-3, 1e-40, 3.5, -7.25, std::numeric_limits<double>::infinity()});
  expect_equal(run_op1("identity", {x}), x, "float32");
  const Value i = i32({4}, {INT32_MIN, -1, 0, INT32_MAX});
  expect_equal(run_op1("identity", {i}), i, "int32");
  const Value u = u8({3}, {0, 128, 255});
  expect_equal(run_op1("identity", {u}), u, "uint8");
}

TEST(Identity, PassesTheGradientThrough) {
  expect_gradients("identity", {random_f32({3, 4}, 11)}, {}, [](const std::vector<Value>& in) { return in[0]; });
}

}  // namespace
}  // namespace plexus::ops::test
