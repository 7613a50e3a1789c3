// Losses (core/ops/reduction/losses.cpp):
//   softmax_cross_entropy(logits f32 [N,C], labels i32 [N]) -> f32 [], the mean over rows of
//   logsumexp(logits[n]) - logits[n, labels[n]]; and its gradient op
//   softmax_cross_entropy_grad(logits, labels, dloss []) = (softmax - onehot) * dloss / N.
//   Generally logits [..., C] with labels of the leading shape (every leading index a row),
//   and rows labelled ignore_index (default -100) left out of the mean (PyTorch's
//   F.cross_entropy(..., ignore_index=)); every row ignored gives 0 (PyTorch: NaN).
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

// Rows of logits [..., C], flattened: count and classes.
struct Rows {
  int64_t count, c;
};
Rows rows_of(const Value& logits) {
  const int64_t c = logits.shape.back();
  return {static_cast<int64_t>(logits.data.size()) / c, c};
}

// The loss with rows labelled `ignore_index` left out; 0 when every row is.
Reference cross_entropy_reference(int64_t ignore_index) {
  return [ignore_index](const std::vector<Value>& in) {
    const Value &logits = in[0], &labels = in[1];
    const Rows rows = rows_of(logits);
    double total = 0.0;
    int64_t counted = 0;
    for (int64_t i = 0; i < rows.count; ++i) {
      const auto label = static_cast<int64_t>(labels.data[static_cast<size_t>(i)]);
      if (label == ignore_index) continue;
      const double* row = logits.data.data() + i * rows.c;
      total += logsumexp(row, rows.c) - row[label];
      ++counted;
    }
    return Value{ir::DType::Float32, {}, {counted == 0 ? 0.0 : total / static_cast<double>(counted)}};
  };
}

Reference cross_entropy_grad_reference(int64_t ignore_index) {
  return [ignore_index](const std::vector<Value>& in) {
    const Value &logits = in[0], &labels = in[1], &dloss = in[2];
    const Rows rows = rows_of(logits);
    int64_t counted = 0;
    for (double label : labels.data) counted += static_cast<int64_t>(label) == ignore_index ? 0 : 1;
    Value dx{ir::DType::Float32, logits.shape, std::vector<double>(logits.data.size())};
    for (int64_t i = 0; i < rows.count; ++i) {
      const auto label = static_cast<int64_t>(labels.data[static_cast<size_t>(i)]);
      if (label == ignore_index) continue;
      const double* row = logits.data.data() + i * rows.c;
      const double lse = logsumexp(row, rows.c);
      for (int64_t j = 0; j < rows.c; ++j) {
        dx.data[static_cast<size_t>(i * rows.c + j)] =
            (std::exp(row[j] - lse) - (j == label ? 1.0 : 0.0)) * dloss.data[0] / static_cast<double>(counted);
      }
    }
    return dx;
  };
}

constexpr int64_t kDefaultIgnoreIndex = -100;

Value loss_reference(const std::vector<Value>& in) { return cross_entropy_reference(kDefaultIgnoreIndex)(in); }

Value loss_grad_reference(const std::vector<Value>& in) {
  return cross_entropy_grad_reference(kDefaultIgnoreIndex)(in);
}

// Labels of `shape` in [0, c).
Value random_labels(const ir::Shape& shape, int64_t c, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v = random_values(n, 0.0, static_cast<double>(c), seed);
  for (double& e : v) e = std::floor(e);
  return i32(shape, v);
}

Value random_labels(int64_t n, int64_t c, uint32_t seed) { return random_labels(ir::Shape{n}, c, seed); }

// `labels` with the elements at `rows` set to `value`.
Value with_labels(Value labels, std::initializer_list<size_t> rows, double value) {
  for (size_t r : rows) labels.data[r] = value;
  return labels;
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

// --- logits [..., C] and ignore_index ------------------------------------------------

TEST(SoftmaxCrossEntropy, EveryLeadingIndexIsARow) {
  for (const ir::Shape& shape : {ir::Shape{2, 3, 4}, ir::Shape{2, 2, 2, 3}, ir::Shape{1, 5, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    const ir::Shape lead(shape.begin(), shape.end() - 1);
    const Value logits = random_f32(shape, 50, -3.0, 3.0);
    expect_gradients("softmax_cross_entropy", {logits, random_labels(lead, shape.back(), 51)}, {}, loss_reference);
  }
}

TEST(SoftmaxCrossEntropy, RankThreeEqualsTheFlattenedRows) {
  // [N,T,C] with labels [N,T] is the loss of the [N*T, C] rows: same values, same gradient.
  const Value logits = random_f32({2, 3, 4}, 52, -2.0, 2.0), labels = random_labels({2, 3}, 4, 53);
  const Value flat_logits{logits.dtype, {6, 4}, logits.data}, flat_labels{labels.dtype, {6}, labels.data};
  expect_close(run_op1("softmax_cross_entropy", {logits, labels}),
               run_op1("softmax_cross_entropy", {flat_logits, flat_labels}), Tolerance{1e-7, 1e-7}, "[2,3,4] vs [6,4]");
  const Value dloss = f32({}, {1.5});
  const Value g = run_op1("softmax_cross_entropy_grad", {logits, labels, dloss});
  const Value flat_g = run_op1("softmax_cross_entropy_grad", {flat_logits, flat_labels, dloss});
  expect_equal(Value{g.dtype, {6, 4}, g.data}, flat_g, "gradient [2,3,4] vs [6,4]");
}

TEST(SoftmaxCrossEntropy, IgnoredRowsLeaveTheMean) {
  const Value logits = random_f32({2, 4, 5}, 54, -3.0, 3.0);
  const Value labels = with_labels(random_labels({2, 4}, 5, 55), {1, 4, 5}, -100);
  expect_gradients("softmax_cross_entropy", {logits, labels}, {}, loss_reference);
  // The mean is over the 5 rows kept, as PyTorch's: the loss of those rows alone.
  std::vector<double> kept_logits, kept_labels;
  for (const size_t row : {0, 2, 3, 6, 7}) {
    kept_logits.insert(kept_logits.end(), logits.data.begin() + static_cast<int64_t>(row * 5),
                       logits.data.begin() + static_cast<int64_t>(row * 5 + 5));
    kept_labels.push_back(labels.data[row]);
  }
  expect_close(run_op1("softmax_cross_entropy", {logits, labels}),
               run_op1("softmax_cross_entropy", {f32({5, 5}, kept_logits), i32({5}, kept_labels)}),
               Tolerance{1e-7, 1e-7}, "ignored rows vs the kept rows alone");
}

TEST(SoftmaxCrossEntropy, IgnoreIndexAttribute) {
  // Any value, a class included (PyTorch ignores those rows too); -100 is then a bad label.
  for (const int64_t ignore : {int64_t{2}, int64_t{-1}, int64_t{1000}}) {
    SCOPED_TRACE(testing::Message() << "ignore_index " << ignore);
    const Value logits = random_f32({6, 3}, 56, -2.0, 2.0);
    const Value labels = with_labels(i32({6}, {0, 2, 1, 2, 0, 1}), {0, 3}, static_cast<double>(ignore));
    const ir::Attributes attrs = make_attrs({{"ignore_index", ignore}});
    expect_gradients("softmax_cross_entropy", {logits, labels}, attrs, cross_entropy_reference(ignore));
    expect_forward("softmax_cross_entropy_grad", {logits, labels, f32({}, {-0.75})}, attrs,
                   cross_entropy_grad_reference(ignore));
    const OpError e = op_error("softmax_cross_entropy", {logits, with_labels(labels, {5}, -100)}, attrs);
    EXPECT_EQ(e.stage, Stage::Run);
    EXPECT_EQ(e.code, ir::ErrorCode::Runtime);
    EXPECT_THAT(e.message, HasSubstr("label -100 at row 5 is outside [0, 3) and is not ignore_index (" +
                                     std::to_string(ignore) + ")"));
  }
}

TEST(SoftmaxCrossEntropy, EveryRowIgnoredGivesZero) {
  // PyTorch returns NaN (0 / 0); Plexus returns 0 and a zero gradient (docs/ops.md).
  const Value logits = random_f32({2, 3, 4}, 57), labels = i32({2, 3}, {-100, -100, -100, -100, -100, -100});
  expect_equal(run_op1("softmax_cross_entropy", {logits, labels}), f32({}, {0}), "loss");
  expect_equal(run_op1("softmax_cross_entropy_grad", {logits, labels, f32({}, {1})}),
               f32({2, 3, 4}, std::vector<double>(24, 0.0)), "gradient");
}

TEST(SoftmaxCrossEntropyGrad, IgnoredRowsGetZeroGradient) {
  const Value logits = random_f32({3, 2, 4}, 58, -3.0, 3.0);
  const Value labels = with_labels(random_labels({3, 2}, 4, 59), {0, 5}, -100);
  const Value g = run_op1("softmax_cross_entropy_grad", {logits, labels, f32({}, {2.5})});
  expect_close(g, cross_entropy_grad_reference(-100)({logits, labels, f32({}, {2.5})}), kForwardTolerance, "gradient");
  for (const size_t row : {0, 5}) {
    for (size_t j = 0; j < 4; ++j) EXPECT_EQ(g.data[row * 4 + j], 0.0) << "row " << row;
  }
}

TEST(SoftmaxCrossEntropy, LabelsMustHaveTheLeadingShape) {
  const Value logits = random_f32({2, 3, 4}, 1);
  for (const Value& labels : {i32({2}, {0, 1}), i32({3, 2}, {0, 1, 2, 3, 0, 1}), i32({2, 3, 1}, {0, 1, 2, 3, 0, 1}),
                              i32({6}, {0, 1, 2, 3, 0, 1})}) {
    SCOPED_TRACE(::testing::PrintToString(labels.shape));
    for (const char* op : {"softmax_cross_entropy", "softmax_cross_entropy_grad"}) {
      std::vector<Value> in{logits, labels};
      if (std::string(op) == "softmax_cross_entropy_grad") in.push_back(f32({}, {1}));
      const OpError e = expect_build_error(op, in, {}, ir::ErrorCode::ShapeMismatch);
      EXPECT_THAT(e.message, HasSubstr("logits [..., C] of rank >= 2 and labels int32 of logits' shape without its "
                                       "last dim"));
    }
  }
}

}  // namespace
}  // namespace plexus::ops::test
