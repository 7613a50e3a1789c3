// Losses (core/ops/losses.cpp):
//   softmax_cross_entropy(logits f32 [N,C], labels i32 [N]) -> f32 [], the mean over rows of
//   logsumexp(logits[n]) - logits[n, labels[n]]; and its gradient op
//   softmax_cross_entropy_grad(logits, labels, dloss []) = (softmax - onehot) * dloss / N.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// log(sum(exp(row))) in double, shifted by the max so it cannot overflow.
double logsumexp(const double* row, int64_t c) {
  const double m = *std::max_element(row, row + c);
  double sum = 0.0;
  for (int64_t j = 0; j < c; ++j) sum += std::exp(row[j] - m);
  return m + std::log(sum);
}

Value loss_reference(const std::vector<Value>& in) {
  const Value &logits = in[0], &labels = in[1];
  const int64_t n = logits.shape[0], c = logits.shape[1];
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double* row = logits.data.data() + i * c;
    total += logsumexp(row, c) - row[static_cast<int64_t>(labels.data[static_cast<size_t>(i)])];
  }
  return Value{ir::DType::Float32, {}, {total / static_cast<double>(n)}};
}

Value loss_grad_reference(const std::vector<Value>& in) {
  const Value &logits = in[0], &labels = in[1], &dloss = in[2];
  const int64_t n = logits.shape[0], c = logits.shape[1];
  Value dx{ir::DType::Float32, logits.shape, std::vector<double>(logits.data.size())};
  for (int64_t i = 0; i < n; ++i) {
    const double* row = logits.data.data() + i * c;
    const double lse = logsumexp(row, c);
    for (int64_t j = 0; j < c; ++j) {
      const double onehot = j == static_cast<int64_t>(labels.data[static_cast<size_t>(i)]) ? 1.0 : 0.0;
      dx.data[static_cast<size_t>(i * c + j)] =
          (std::exp(row[j] - lse) - onehot) * dloss.data[0] / static_cast<double>(n);
    }
  }
  return dx;
}

Value random_labels(int64_t n, int64_t c, uint32_t seed) {
  std::vector<double> v = random_values(n, 0.0, static_cast<double>(c), seed);
  for (double& e : v) e = std::floor(e);
  return i32({n}, v);
}

TEST(SoftmaxCrossEntropy, UniformLogitsGiveLogC) {
  const Value y = run_op1("softmax_cross_entropy", {f32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}), i32({2}, {0, 3})});
  expect_close(y, f32({}, {std::log(4.0)}), kForwardTolerance, "uniform logits");
}

TEST(SoftmaxCrossEntropy, ForwardAndGradientMatchDoubleReference) {
  for (const int64_t n : {1, 4, 7}) {
    for (const int64_t c : {1, 2, 3, 10}) {
      SCOPED_TRACE(testing::Message() << "N=" << n << " C=" << c);
      const auto seed = static_cast<uint32_t>(100 * n + c);
      const Value logits = random_f32({n, c}, seed, -3.0, 3.0);
      expect_gradients("softmax_cross_entropy", {logits, random_labels(n, c, seed + 1)}, {}, loss_reference);
    }
  }
}

TEST(SoftmaxCrossEntropy, LargeLogitsAreStable) {
  // exp(1000) overflows float and double: the kernel must shift by the row max. The loss is
  // O(1) while the logits are O(1000), so it must be accurate relative to the loss, not to
  // the logits, whose float32 spacing is 6e-5: float32 resolves an O(1) loss to 1e-7, and
  // exp/log/sum over 4 classes add a few ulps, so 2e-6 is a 10x margin, while rounding at
  // the logits' scale is off by up to 3e-5. 20 draws per offset, so that cannot pass by luck.
  GradCheckOptions tight;
  tight.forward = Tolerance{2e-6, 2e-6};
  for (const double offset : {1000.0, -1000.0, 80.0}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      SCOPED_TRACE(testing::Message() << "offset " << offset << " seed " << seed);
      std::vector<double> v = random_values(12, -2.0, 2.0, seed);
      for (double& e : v) e += offset;
      const Value logits = f32({3, 4}, v), labels = random_labels(3, 4, seed + 100);
      if (seed < 3) {
        expect_gradients("softmax_cross_entropy", {logits, labels}, {}, loss_reference, tight);
      } else {
        expect_forward("softmax_cross_entropy", {logits, labels}, {}, loss_reference, tight.forward);
      }
    }
  }
}

TEST(SoftmaxCrossEntropyGrad, ForwardMatchesReferenceForAnyDloss) {
  for (const double dloss : {1.0, 2.5, -0.5}) {
    SCOPED_TRACE(testing::Message() << "dloss " << dloss);
    const Value logits = random_f32({5, 6}, 10, -4.0, 4.0);
    expect_forward("softmax_cross_entropy_grad", {logits, random_labels(5, 6, 11), f32({}, {dloss})}, {},
                   loss_grad_reference);
  }
}

TEST(SoftmaxCrossEntropy, LabelOutOfRangeIsARunErrorNamingTheRow) {
  struct Case {
    double bad_label;
    int64_t row;
  };
  for (const Case c : {Case{3, 2}, Case{-1, 0}, Case{1000000, 1}}) {
    SCOPED_TRACE(testing::Message() << "label " << c.bad_label << " at row " << c.row);
    std::vector<double> labels{0, 1, 2};
    labels[static_cast<size_t>(c.row)] = c.bad_label;
    const std::string rule = "label " + std::to_string(static_cast<int64_t>(c.bad_label)) + " at row " +
                             std::to_string(c.row) + " is outside [0, 3)";
    const Value logits = random_f32({3, 3}, 12);

    const OpError e = op_error("softmax_cross_entropy", {logits, i32({3}, labels)});
    EXPECT_EQ(e.stage, Stage::Run);
    EXPECT_EQ(e.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(e.message, HasSubstr("op 'softmax_cross_entropy#0'"));
    EXPECT_THAT(e.message, HasSubstr(rule));

    const OpError g = op_error("softmax_cross_entropy_grad", {logits, i32({3}, labels), f32({}, {1})});
    EXPECT_EQ(g.stage, Stage::Run);
    EXPECT_EQ(g.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(g.message, HasSubstr("op 'softmax_cross_entropy_grad#0'"));
    EXPECT_THAT(g.message, HasSubstr(rule));
  }
}

TEST(SoftmaxCrossEntropy, ShapesAreChecked) {
  const Value labels = i32({3}, {0, 1, 2});
  for (const std::vector<Value>& inputs :
       {std::vector<Value>{random_f32({3, 4}, 1), i32({4}, {0, 1, 2, 3})},
        std::vector<Value>{random_f32({3, 4, 1}, 1), labels}, std::vector<Value>{random_f32({3}, 1), labels},
        std::vector<Value>{random_f32({3, 4}, 1), i32({3, 1}, {0, 1, 2})}}) {
    SCOPED_TRACE(::testing::PrintToString(inputs[0].shape) + " " + ::testing::PrintToString(inputs[1].shape));
    const OpError e = op_error("softmax_cross_entropy", inputs);
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("op 'softmax_cross_entropy'"));
    EXPECT_THAT(e.message, HasSubstr("logits must be [N,C] and labels [N]"));
  }
}

TEST(SoftmaxCrossEntropy, DtypesAreChecked) {
  const OpError e = op_error("softmax_cross_entropy", {random_f32({3, 4}, 1), f32({3}, {0, 1, 2})});
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'softmax_cross_entropy'"));
  EXPECT_THAT(e.message, HasSubstr("input 1 must be int32"));
  const OpError f = op_error("softmax_cross_entropy", {i32({1, 2}, {0, 1}), i32({1}, {0})});
  EXPECT_EQ(f.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(f.message, HasSubstr("op 'softmax_cross_entropy'"));
  EXPECT_THAT(f.message, HasSubstr("input 0 must be float32"));
}

TEST(SoftmaxCrossEntropyGrad, DlossMustBeAFloatScalar) {
  const Value logits = random_f32({2, 3}, 1), labels = i32({2}, {0, 2});
  const OpError e = op_error("softmax_cross_entropy_grad", {logits, labels, f32({1}, {1})});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'softmax_cross_entropy_grad'"));
  EXPECT_THAT(e.message, HasSubstr("dloss must be a scalar"));
  const OpError f = op_error("softmax_cross_entropy_grad", {logits, labels, i32({}, {1})});
  EXPECT_EQ(f.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(f.message, HasSubstr("op 'softmax_cross_entropy_grad'"));
  EXPECT_THAT(f.message, HasSubstr("input 2 must be float32"));
}

}  // namespace
}  // namespace plexus::ops::test
