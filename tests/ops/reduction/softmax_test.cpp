// Softmax along an axis (core/ops/reduction/softmax.cpp): softmax and log_softmax (torch.softmax,
// torch.log_softmax with dim=axis), and the gradient ops softmax_grad(y, dy) =
// y * (dy - sum(dy * y)) and log_softmax_grad(y, dy) = dy - exp(y) * sum(dy).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using Line = std::vector<double>;
// Maps the lines along one axis of the inputs (all of one shape) to the output's line.
using LineFn = std::function<Line(const std::vector<Line>&)>;

// The test's own walk over the lines along `axis` (negative counts from the end).
Value map_lines(const std::vector<Value>& in, int64_t axis, const LineFn& fn) {
  const ir::Shape& shape = in[0].shape;
  const auto a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < a; ++d) outer *= shape[d];
  for (size_t d = a + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t len = shape[a];
  Value out{ir::DType::Float32, shape, std::vector<double>(in[0].data.size())};
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return static_cast<size_t>((o * len + k) * inner + i); };
      std::vector<Line> lines(in.size(), Line(static_cast<size_t>(len)));
      for (size_t v = 0; v < in.size(); ++v) {
        for (int64_t k = 0; k < len; ++k) lines[v][static_cast<size_t>(k)] = in[v].data[at(k)];
      }
      const Line result = fn(lines);
      for (int64_t k = 0; k < len; ++k) out.data[at(k)] = result[static_cast<size_t>(k)];
    }
  }
  return out;
}

double logsumexp(const Line& x) {
  const double m = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (double v : x) sum += std::exp(v - m);
  return m + std::log(sum);
}

Line log_softmax_line(const std::vector<Line>& in) {
  const double lse = logsumexp(in[0]);
  Line y = in[0];
  for (double& v : y) v -= lse;
  return y;
}

Line softmax_line(const std::vector<Line>& in) {
  Line y = log_softmax_line(in);
  for (double& v : y) v = std::exp(v);
  return y;
}

// (y, dy) -> y * (dy - sum(dy * y))
Line softmax_grad_line(const std::vector<Line>& in) {
  const Line &y = in[0], &dy = in[1];
  double s = 0.0;
  for (size_t k = 0; k < y.size(); ++k) s += dy[k] * y[k];
  Line dx(y.size());
  for (size_t k = 0; k < y.size(); ++k) dx[k] = y[k] * (dy[k] - s);
  return dx;
}

// (y, dy) -> dy - exp(y) * sum(dy)
Line log_softmax_grad_line(const std::vector<Line>& in) {
  const Line &y = in[0], &dy = in[1];
  double s = 0.0;
  for (double v : dy) s += v;
  Line dx(y.size());
  for (size_t k = 0; k < y.size(); ++k) dx[k] = dy[k] - std::exp(y[k]) * s;
  return dx;
}

Reference along(int64_t axis, LineFn fn) {
  return [axis, fn](const std::vector<Value>& in) { return map_lines(in, axis, fn); };
}

ir::Attributes axis_attr(int64_t axis) { return make_attrs({{"axis", axis}}); }

struct Variant {
  const char* op;
  const char* grad_op;
  LineFn forward;
  LineFn grad;
};
const Variant kVariants[] = {{"softmax", "softmax_grad", softmax_line, softmax_grad_line},
                             {"log_softmax", "log_softmax_grad", log_softmax_line, log_softmax_grad_line}};

TEST(Softmax, ForwardAndGradientAlongEveryAxis) {
  const Value x = random_f32({2, 3, 4}, 31, -3.0, 3.0);
  for (const Variant& v : kVariants) {
    for (const int64_t axis : {-1, 0, 1, 2, -2, -3}) {
      SCOPED_TRACE(testing::Message() << v.op << " axis " << axis);
      expect_gradients(v.op, {x}, axis_attr(axis), along(axis, v.forward));
    }
  }
}

TEST(Softmax, DefaultAxisIsTheLast) {
  const Value x = random_f32({3, 5}, 32, -2.0, 2.0);
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.op);
    expect_forward(v.op, {x}, {}, along(-1, v.forward));
  }
}

TEST(Softmax, RankOneAndLengthOneAxes) {
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.op);
    expect_gradients(v.op, {random_f32({7}, 33, -2.0, 2.0)}, {}, along(0, v.forward));
    // A line of one element: softmax 1, log_softmax 0, and a zero gradient.
    expect_gradients(v.op, {random_f32({3, 1}, 34)}, {}, along(-1, v.forward));
  }
}

TEST(Softmax, LargeValuesAreStable) {
  // exp(1000) overflows float and double: the kernel must subtract the line's max. The
  // inputs are float32 near +-1000 (spacing 6e-5) but x - max is exact, so the outputs are
  // as accurate as for O(1) inputs: a few float32 roundings of O(1) values, 1e-6 absolute
  // is a margin of > 5x; rounding at the inputs' scale first would be off by up to 3e-5.
  const Tolerance tight{1e-6, 1e-6};
  for (const double offset : {1000.0, -1000.0, 90.0}) {
    for (uint32_t seed = 0; seed < 10; ++seed) {
      SCOPED_TRACE(testing::Message() << "offset " << offset << " seed " << seed);
      std::vector<double> values = random_values(12, -3.0, 3.0, seed);
      for (double& e : values) e += offset;
      const Value x = f32({4, 3}, values);
      for (const Variant& v : kVariants) {
        expect_forward(v.op, {x}, axis_attr(seed % 2 == 0 ? -1 : 0), along(seed % 2 == 0 ? -1 : 0, v.forward), tight);
      }
    }
  }
}

TEST(Softmax, OutputsByHand) {
  // softmax([0, ln 3]) = [1/4, 3/4]; -inf gets probability 0 (log-probability -inf).
  const double inf = std::numeric_limits<double>::infinity();
  expect_close(run_op1("softmax", {f32({2, 2}, {0, std::log(3.0), 5, -inf})}), f32({2, 2}, {0.25, 0.75, 1, 0}),
               Tolerance{1e-7, 1e-6}, "softmax");
  expect_close(run_op1("log_softmax", {f32({2, 2}, {0, std::log(3.0), 5, -inf})}),
               f32({2, 2}, {std::log(0.25), std::log(0.75), 0, -inf}), Tolerance{1e-7, 1e-6}, "log_softmax");
}

TEST(SoftmaxGrad, ForwardMatchesReferenceAlongAnyAxis) {
  for (const Variant& v : kVariants) {
    for (const int64_t axis : {-1, 1, 0}) {
      SCOPED_TRACE(testing::Message() << v.grad_op << " axis " << axis);
      const Value y = run_op1(v.op, {random_f32({3, 4, 2}, 35, -2.0, 2.0)}, axis_attr(axis));
      expect_forward(v.grad_op, {y, random_f32({3, 4, 2}, 36)}, axis_attr(axis), along(axis, v.grad));
    }
  }
}

TEST(Softmax, RejectsNonFloat) {
  for (const char* op : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(op);
    const OpError e = expect_build_error(op, {i32({2, 2}, {1, 2, 3, 4})}, {}, ir::ErrorCode::DTypeMismatch);
    EXPECT_THAT(e.message, ::testing::HasSubstr("input 0 must be float32"));
  }
  for (const char* op : {"softmax_grad", "log_softmax_grad"}) {
    SCOPED_TRACE(op);
    const OpError e =
        expect_build_error(op, {random_f32({2}, 1), i32({2}, {1, 2})}, {}, ir::ErrorCode::DTypeMismatch);
    EXPECT_THAT(e.message, ::testing::HasSubstr("input 1 must be float32"));
  }
}

TEST(Softmax, AxisOutOfRangeIsRejected) {
  for (const char* op : {"softmax", "log_softmax"}) {
    for (const int64_t axis : {3, -4, 100}) {
      SCOPED_TRACE(testing::Message() << op << " axis " << axis);
      const OpError e = expect_build_error(op, {random_f32({2, 3, 4}, 1)}, axis_attr(axis),
                                           ir::ErrorCode::InvalidArgument);
      EXPECT_THAT(e.message, ::testing::HasSubstr("axis " + std::to_string(axis) + " is out of range for rank 3"));
    }
    SCOPED_TRACE(testing::Message() << op << " on a scalar");
    const OpError e = expect_build_error(op, {f32({}, {1})}, {}, ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, ::testing::HasSubstr("axis -1 is out of range for rank 0"));
  }
  const OpError e = expect_build_error("softmax_grad", {random_f32({2, 3}, 1), random_f32({2, 3}, 2)},
                                       axis_attr(2), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, ::testing::HasSubstr("axis 2 is out of range for rank 2"));
}

TEST(SoftmaxGrad, YAndDyMustHaveOneShape) {
  for (const char* op : {"softmax_grad", "log_softmax_grad"}) {
    SCOPED_TRACE(op);
    const OpError e = expect_build_error(op, {random_f32({2, 3}, 1), random_f32({3, 2}, 2)}, {},
                                         ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, ::testing::HasSubstr("y and dy must have the same shape"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
