// batch_matmul (core/ops/matmul/batch_matmul.cpp): Y[batch..., M, N] = op(A) op(B) per batch entry,
// batch dims broadcast by numpy rules (numpy.matmul), one operand of rank >= 3, op =
// transpose of the last two dims when transpose_a / transpose_b is 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

ir::Attributes transposes(bool ta, bool tb) {
  return make_attrs({{"transpose_a", int64_t{ta}}, {"transpose_b", int64_t{tb}}});
}

ir::Shape leading(const ir::Shape& s) { return ir::Shape(s.begin(), s.end() - 2); }

// For each entry of the broadcast batch shape, the index of the operand's own matrix.
std::vector<double> matrix_of_entry(const ir::Shape& operand_batch, const ir::Shape& batch) {
  Value index{ir::DType::Float32, operand_batch, std::vector<double>(static_cast<size_t>(ir::numel(operand_batch)))};
  std::iota(index.data.begin(), index.data.end(), 0.0);
  return broadcast_to(index, batch);
}

// Double-precision numpy.matmul(op(A), op(B)); op transposes the last two dims.
Reference batch_matmul_reference(bool ta, bool tb) {
  return [ta, tb](const std::vector<Value>& in) {
    const Value &a = in[0], &b = in[1];
    const size_t ra = a.shape.size(), rb = b.shape.size();
    const int64_t a0 = a.shape[ra - 2], a1 = a.shape[ra - 1], b0 = b.shape[rb - 2], b1 = b.shape[rb - 1];
    const int64_t m = ta ? a1 : a0, k = ta ? a0 : a1, n = tb ? b0 : b1;
    ir::Shape shape = broadcast_shape(leading(a.shape), leading(b.shape));
    const std::vector<double> ma = matrix_of_entry(leading(a.shape), shape),
                              mb = matrix_of_entry(leading(b.shape), shape);
    shape.push_back(m);
    shape.push_back(n);
    Value y{ir::DType::Float32, shape, {}};
    for (size_t e = 0; e < ma.size(); ++e) {
      const double* pa = a.data.data() + static_cast<int64_t>(ma[e]) * m * k;
      const double* pb = b.data.data() + static_cast<int64_t>(mb[e]) * k * n;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0.0;
          for (int64_t p = 0; p < k; ++p)
            sum += (ta ? pa[p * m + i] : pa[i * k + p]) * (tb ? pb[j * k + p] : pb[p * n + j]);
          y.data.push_back(sum);
        }
      }
    }
    return y;
  };
}

// op(A)'s shape [..., M, K] as stored: the last two dims swapped when transposed.
ir::Shape stored(ir::Shape logical, bool transposed) {
  if (transposed) std::swap(logical[logical.size() - 2], logical[logical.size() - 1]);
  return logical;
}

// (op(A) shape, op(B) shape), then transpose_a, transpose_b.
using Shapes = std::pair<ir::Shape, ir::Shape>;
using BatchMatmulCase = std::tuple<Shapes, bool, bool>;

class BatchMatmulShapes : public ::testing::TestWithParam<BatchMatmulCase> {};

TEST_P(BatchMatmulShapes, ForwardAndGradientsMatchDoubleReference) {
  const auto& [shapes, ta, tb] = GetParam();
  const Value a = random_f32(stored(shapes.first, ta), 1), b = random_f32(stored(shapes.second, tb), 2);
  expect_gradients("batch_matmul", {a, b}, transposes(ta, tb), batch_matmul_reference(ta, tb));
}

std::string case_name(const ::testing::TestParamInfo<BatchMatmulCase>& info) {
  const auto& [shapes, ta, tb] = info.param;
  auto dims = [](const ir::Shape& s) {
    std::string out;
    for (int64_t d : s) out += (out.empty() ? "" : "x") + std::to_string(d);
    return out;
  };
  return dims(shapes.first) + "_by_" + dims(shapes.second) + (ta ? "_At" : "_A") + (tb ? "_Bt" : "_B");
}

INSTANTIATE_TEST_SUITE_P(
    Broadcasts, BatchMatmulShapes,
    ::testing::Combine(::testing::Values(Shapes{{2, 3, 4}, {2, 4, 5}},        // same batch
                                         Shapes{{3, 4}, {2, 4, 5}},           // a: one matrix for every entry
                                         Shapes{{2, 3, 4}, {4, 5}},           // b: one matrix (one GEMM unless A^T)
                                         Shapes{{2, 3, 1, 4}, {1, 1, 4, 3}},  // b [1,1,K,N]: also one matrix
                                         Shapes{{2, 1, 3, 4}, {3, 4, 2}},     // batch [2,1] x [3] -> [2,3]
                                         Shapes{{1, 3, 4}, {2, 4, 5}},        // a's batch dim of 1 broadcast
                                         Shapes{{2, 2, 1, 7}, {2, 7, 1}},     // M = N = 1, batch [2,2] x [2]
                                         Shapes{{3, 5, 1}, {1, 6}}),          // K = 1
                       ::testing::Bool(), ::testing::Bool()),
    case_name);

// A transformer's attention shapes: [B, H, T, Dh] x [B, H, T, Dh]^T, then x [B, H, T, Dh];
// sampled gradient check to keep the reference's cost down.
TEST(BatchMatmul, AttentionShapes) {
  const Value q = random_f32({2, 3, 8, 16}, 3), k = random_f32({2, 3, 8, 16}, 4), v = random_f32({2, 3, 8, 16}, 5);
  GradCheckOptions options;
  options.sample = 40;
  expect_gradients("batch_matmul", {q, k}, transposes(false, true), batch_matmul_reference(false, true), options);
  expect_gradients("batch_matmul", {random_f32({2, 3, 8, 8}, 6), v}, {}, batch_matmul_reference(false, false), options);
}

TEST(BatchMatmul, OneMatrixOnTheRightRunsAsOneGemm) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids =
      add_inputs(g, {random_f32({4, 3, 6}, 1), random_f32({1, 6, 5}, 2), random_f32({2, 1, 6, 5}, 3)});
  g.add_op("batch_matmul", {ids[0], ids[1]}, {});
  g.add_op("batch_matmul", {ids[0], ids[2]}, {});
  session::SessionOptions options;
  options.threads_per_device = 1;
  const session::Session session(g, options);
  ASSERT_EQ(session.notes().size(), 2u);
  EXPECT_THAT(session.notes()[0], HasSubstr("batch_matmul#0: sgemm 12x6x5 -> "));
  EXPECT_THAT(session.notes()[1], HasSubstr("batch_matmul#1: sgemm 3x6x5 (x8) -> "));
}

TEST(BatchMatmul, TwoMatricesAreRejected) {
  const OpError e = expect_build_error("batch_matmul", {random_f32({2, 3}, 1), random_f32({3, 4}, 2)}, {},
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("one input must have rank >= 3 (a product of two matrices is matmul)"));
}

TEST(BatchMatmul, RanksBelowTwoAreRejected) {
  for (const ir::Shape& a_shape : {ir::Shape{3}, ir::Shape{}}) {
    SCOPED_TRACE(testing::Message() << "rank " << a_shape.size());
    const OpError e = expect_build_error("batch_matmul", {random_f32(a_shape, 1), random_f32({2, 3, 4}, 2)}, {},
                                         ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("both inputs must have rank >= 2"));
  }
}

TEST(BatchMatmul, InnerDimensionMismatchNamesBothDims) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      const OpError e = expect_build_error("batch_matmul",
                                           {random_f32(stored({2, 2, 3}, ta), 1), random_f32(stored({2, 4, 5}, tb), 2)},
                                           transposes(ta, tb), ir::ErrorCode::ShapeMismatch);
      EXPECT_THAT(e.message, HasSubstr("inner dimensions differ (3 vs 4)"));
    }
  }
}

TEST(BatchMatmul, IncompatibleBatchDimsAreRejected) {
  const OpError e = expect_build_error("batch_matmul", {random_f32({2, 3, 4}, 1), random_f32({3, 4, 5}, 2)}, {},
                                       ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("batch dims [2] and [3] are not broadcast-compatible"));
}

TEST(BatchMatmul, Int32IsRejected) {
  const OpError e = expect_build_error("batch_matmul", {i32({1, 2, 2}, {1, 2, 3, 4}), random_f32({2, 2}, 1)}, {},
                                       ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 0 must be float32"));
}

}  // namespace
}  // namespace plexus::ops::test
