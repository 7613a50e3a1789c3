// matmul (core/ops/matmul/matmul.cpp): Y = op(A) op(B), float32 rank 2, op = transpose when
// transpose_a / transpose_b is 1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

ir::Attributes transposes(bool ta, bool tb) {
  return make_attrs({{"transpose_a", int64_t{ta}}, {"transpose_b", int64_t{tb}}});
}

// Double-precision op(A) op(B); A is [M,K] or [K,M] (ta), B is [K,N] or [N,K] (tb).
Reference matmul_reference(bool ta, bool tb) {
  return [ta, tb](const std::vector<Value>& in) {
    const Value &a = in[0], &b = in[1];
    const int64_t m = ta ? a.shape[1] : a.shape[0], k = ta ? a.shape[0] : a.shape[1];
    const int64_t n = tb ? b.shape[0] : b.shape[1];
    Value y{ir::DType::Float32, {m, n}, std::vector<double>(static_cast<size_t>(m * n), 0.0)};
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          const double av = ta ? a.data[static_cast<size_t>(p * m + i)] : a.data[static_cast<size_t>(i * k + p)];
          const double bv = tb ? b.data[static_cast<size_t>(j * k + p)] : b.data[static_cast<size_t>(p * n + j)];
          sum += av * bv;
        }
        y.data[static_cast<size_t>(i * n + j)] = sum;
      }
    }
    return y;
  };
}

TEST(Matmul, SmallProductIsExact) {
  const Value y = run_op1("matmul", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8})}, {});
  expect_equal(y, f32({2, 2}, {19, 22, 43, 50}), "[[1,2],[3,4]] @ [[5,6],[7,8]]");
}

TEST(Matmul, DefaultAttributesDoNotTranspose) {
  const Value a = random_f32({3, 4}, 1), b = random_f32({4, 2}, 2);
  expect_forward("matmul", {a, b}, {}, matmul_reference(false, false));
}

// (M, K, N, transpose_a, transpose_b): 1xK rows, K = 1, a scalar-like 1x1x1, odd sizes
// that are no multiple of any BLIS micro-kernel tile, and K up to 64.
using MatmulCase = std::tuple<std::tuple<int64_t, int64_t, int64_t>, bool, bool>;

class MatmulShapes : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulShapes, ForwardAndGradientsMatchDoubleReference) {
  const auto [mkn, ta, tb] = GetParam();
  const auto [m, k, n] = mkn;
  const ir::Shape a_shape = ta ? ir::Shape{k, m} : ir::Shape{m, k};
  const ir::Shape b_shape = tb ? ir::Shape{n, k} : ir::Shape{k, n};
  const auto seed = static_cast<uint32_t>(m * 10000 + k * 100 + n);
  const Value a = random_f32(a_shape, seed), b = random_f32(b_shape, seed + 1);
  expect_gradients("matmul", {a, b}, transposes(ta, tb), matmul_reference(ta, tb));
}

std::string matmul_case_name(const ::testing::TestParamInfo<MatmulCase>& info) {
  const auto& [mkn, ta, tb] = info.param;
  const auto& [m, k, n] = mkn;
  return std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) + (ta ? "_At" : "_A") +
         (tb ? "_Bt" : "_B");
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, MatmulShapes,
                         ::testing::Combine(::testing::Values(std::make_tuple(int64_t{1}, int64_t{7}, int64_t{5}),
                                                              std::make_tuple(int64_t{1}, int64_t{1}, int64_t{1}),
                                                              std::make_tuple(int64_t{5}, int64_t{1}, int64_t{4}),
                                                              std::make_tuple(int64_t{3}, int64_t{4}, int64_t{5}),
                                                              std::make_tuple(int64_t{6}, int64_t{9}, int64_t{1}),
                                                              std::make_tuple(int64_t{17}, int64_t{33}, int64_t{9}),
                                                              std::make_tuple(int64_t{8}, int64_t{64}, int64_t{12})),
                                            ::testing::Bool(), ::testing::Bool()),
                         matmul_case_name);

// A shape large enough for BLIS's packed, blocked path. K = 320 accumulates more terms than
// kForwardTolerance budgets for: the worst-case float32 error is ~K * 6e-8 ~ 2e-5, so the
// absolute tolerance is 1e-4 here.
TEST(Matmul, LargerShapeMatchesDoubleReference) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      const int64_t m = 40, k = 320, n = 72;
      const Value a = random_f32(ta ? ir::Shape{k, m} : ir::Shape{m, k}, 31);
      const Value b = random_f32(tb ? ir::Shape{n, k} : ir::Shape{k, n}, 32);
      expect_forward("matmul", {a, b}, transposes(ta, tb), matmul_reference(ta, tb), Tolerance{1e-4, 1e-5});
    }
  }
}

// The same allowed two threads, two GEMM panels (the sessions' default on the 2-core machines).
TEST(Matmul, TwoThreadsMatchDoubleReference) {
  const int64_t m = 64, k = 48, n = 96;
  const Value a = random_f32({m, k}, 33), b = random_f32({n, k}, 34);
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {a, b});
  const ir::TensorId y = g.add_op("matmul", ids, transposes(false, true)).front();
  const ir::StreamId out = g.add_d2h_stream("y", y);
  session::SessionOptions options;
  options.threads_per_device = 2;
  session::Session session(g, options);
  std::vector<std::byte> host(static_cast<size_t>(m * n) * sizeof(float));
  const runtime::HostArray outputs[] = {{out, host.data(), ir::DType::Float32, {m, n}}};
  session.run({}, outputs);
  expect_close(from_bytes(ir::DType::Float32, {m, n}, host), matmul_reference(false, true)({a, b}), kForwardTolerance,
               "matmul with 2 threads");
}

TEST(Matmul, InnerDimensionMismatchNamesBothDims) {
  // op(A) is [2,3] and op(B) is [4,5] in every transpose combination.
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      const Value a = random_f32(ta ? ir::Shape{3, 2} : ir::Shape{2, 3}, 1);
      const Value b = random_f32(tb ? ir::Shape{5, 4} : ir::Shape{4, 5}, 2);
      const OpError e = op_error("matmul", {a, b}, transposes(ta, tb));
      EXPECT_EQ(e.stage, Stage::Build);
      EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
      EXPECT_THAT(e.message, HasSubstr("op 'matmul'"));
      EXPECT_THAT(e.message, HasSubstr("inner dimensions differ (3 vs 4)"));
    }
  }
}

TEST(Matmul, MessageGivesInputTypes) {
  const OpError e = op_error("matmul", {random_f32({2, 3}, 1), random_f32({4, 5}, 2)}, {});
  EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'matmul' with inputs (float32[2,3], float32[4,5]): inner dimensions differ"));
}

TEST(Matmul, RanksOtherThanTwoAreRejected) {
  for (const ir::Shape& a_shape : {ir::Shape{2, 3, 4}, ir::Shape{4}, ir::Shape{}}) {
    SCOPED_TRACE(testing::Message() << "rank " << a_shape.size());
    const OpError e = op_error("matmul", {random_f32(a_shape, 1), random_f32({4, 2}, 2)}, {});
    EXPECT_EQ(e.stage, Stage::Build);
    EXPECT_EQ(e.code, ir::ErrorCode::ShapeMismatch);
    EXPECT_THAT(e.message, HasSubstr("op 'matmul'"));
    EXPECT_THAT(e.message, HasSubstr("both inputs must have rank 2"));
  }
}

TEST(Matmul, Int32IsRejected) {
  const OpError e = op_error("matmul", {random_f32({2, 2}, 1), i32({2, 2}, {1, 2, 3, 4})}, {});
  EXPECT_EQ(e.stage, Stage::Build);
  EXPECT_EQ(e.code, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("op 'matmul'"));
  EXPECT_THAT(e.message, HasSubstr("input 1 must be float32"));
}

TEST(Matmul, UnknownAttributeIsRejected) {
  const OpError e =
      op_error("matmul", {random_f32({2, 2}, 1), random_f32({2, 2}, 2)}, make_attrs({{"transpose_c", int64_t{1}}}));
  EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("op 'matmul' has no attribute 'transpose_c'"));
}

TEST(Matmul, WrongInputCountIsRejected) {
  const OpError e = op_error("matmul", {random_f32({2, 2}, 1)}, {});
  EXPECT_EQ(e.code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("op 'matmul' takes 2 inputs, got 1"));
}

}  // namespace
}  // namespace plexus::ops::test
