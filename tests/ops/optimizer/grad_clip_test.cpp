// Gradient clipping by global norm (core/ops/optimizer/grad_clip.cpp): global_sq_norm(g0..gk) -> the
// sum of squares, clip_scale_(g0..gk, total_sq_norm; max_norm, eps) scales every g in place
// by min(1, max_norm / (sqrt(total) + eps)), clip_by_global_norm_(g0..gk; max_norm, eps)
// both in one op, returning the norm (PyTorch's clip_grad_norm_).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// A norm or a sum of squares of float32 values accumulated in double and rounded to
// float32 once: relative 1e-6 covers the rounding (6e-8) with a wide margin.
constexpr Tolerance kNormTolerance{1e-12, 1e-6};

double sum_of_squares(const std::vector<Value>& grads) {
  double sum = 0.0;
  for (const Value& g : grads) {
    for (double v : g.data) sum += v * v;
  }
  return sum;
}

// PyTorch's clip_grad_norm_ in double: every g times min(1, max_norm / (norm + eps)).
std::vector<Value> clipped(const std::vector<Value>& grads, double max_norm, double eps = 1e-6) {
  const double coef = std::min(1.0, max_norm / (std::sqrt(sum_of_squares(grads)) + eps));
  std::vector<Value> out;
  for (const Value& g : grads) out.push_back(map_unary(g, [coef](double v) { return v * coef; }));
  return out;
}

// Gradients of several shapes, a scalar among them, of about unit magnitude.
std::vector<Value> some_gradients(double scale) {
  std::vector<Value> grads = {random_f32({4, 3}, 1, -scale, scale), random_f32({}, 2, -scale, scale),
                              random_f32({7}, 3, -scale, scale), random_f32({2, 2, 2}, 4, -scale, scale)};
  return grads;
}

void expect_all_close(const std::vector<Value>& actual, const std::vector<Value>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    expect_close(actual[i], expected[i], kForwardTolerance, what + " g" + std::to_string(i));
  }
}

TEST(GlobalSqNorm, SumsTheSquaresOfEveryInput) {
  for (const double scale : {1e-3, 1.0, 300.0}) {
    SCOPED_TRACE(scale);
    const std::vector<Value> grads = some_gradients(scale);
    const Value sq = run_op1("global_sq_norm", grads);
    expect_close(sq, f32({}, {sum_of_squares(grads)}), kNormTolerance, "sum of squares");
  }
  // By hand: 3^2 + 4^2 + (1 + 4 + 4) = 34.
  expect_close(run_op1("global_sq_norm", {f32({}, {3}), f32({1}, {4}), f32({3}, {1, -2, 2})}), f32({}, {34}),
               kNormTolerance, "by hand");
}

TEST(ClipByGlobalNorm, BelowTheThresholdLeavesTheGradients) {
  // norm ~1.1 < max_norm 5: coefficient min(1, 5 / 1.1) = 1, the gradients unchanged bit for bit.
  const std::vector<Value> grads = some_gradients(0.3);
  const std::vector<Value> out = run_op("clip_by_global_norm_", grads, make_attrs({{"max_norm", 5.0}}));
  ASSERT_EQ(out.size(), grads.size() + 1);
  expect_close(out[0], f32({}, {std::sqrt(sum_of_squares(grads))}), kNormTolerance, "norm");
  for (size_t i = 0; i < grads.size(); ++i) expect_equal(out[i + 1], grads[i], "g" + std::to_string(i));
}

TEST(ClipByGlobalNorm, AboveTheThresholdScalesToMaxNorm) {
  for (const double max_norm : {1.0, 0.25}) {
    SCOPED_TRACE(max_norm);
    const std::vector<Value> grads = some_gradients(1.0);  // norm ~3.3
    const std::vector<Value> out = run_op("clip_by_global_norm_", grads, make_attrs({{"max_norm", max_norm}}));
    expect_close(out[0], f32({}, {std::sqrt(sum_of_squares(grads))}), kNormTolerance, "norm before clipping");
    const std::vector<Value> scaled(out.begin() + 1, out.end());
    expect_all_close(scaled, clipped(grads, max_norm), "clipped");
    EXPECT_NEAR(std::sqrt(sum_of_squares(scaled)), max_norm, 1e-5) << "the clipped norm is max_norm";
  }
}

TEST(ClipByGlobalNorm, ByHand) {
  // g0 = [3], g1 = [0, 4]: norm 5, max_norm 1, eps 1e-6: coefficient 1 / 5.000001
  // = 0.19999996, so [0.59999988], [0, 0.79999984]. eps 0.5: 1 / 5.5 -> [0.5454545], [0, 0.7272727].
  std::vector<Value> out = run_op("clip_by_global_norm_", {f32({1}, {3}), f32({2}, {0, 4})}, {});
  expect_close(out[0], f32({}, {5}), kNormTolerance, "norm");
  expect_close(out[1], f32({1}, {0.59999988}), Tolerance{1e-7, 0}, "g0");
  expect_close(out[2], f32({2}, {0, 0.79999984}), Tolerance{1e-7, 0}, "g1");
  out = run_op("clip_by_global_norm_", {f32({1}, {3}), f32({2}, {0, 4})}, make_attrs({{"eps", 0.5}}));
  expect_close(out[1], f32({1}, {0.54545454}), Tolerance{1e-7, 0}, "g0, eps 0.5");
  expect_close(out[2], f32({2}, {0, 0.72727272}), Tolerance{1e-7, 0}, "g1, eps 0.5");
}

TEST(ClipScale, TheTwoOpFormMatchesTheReference) {
  // global_sq_norm then clip_scale_ on variables, below and above the threshold.
  for (const double max_norm : {10.0, 0.5}) {
    SCOPED_TRACE(max_norm);
    const std::vector<Value> grads = some_gradients(1.0);
    ir::Graph g;
    std::vector<ir::TensorId> ids = add_inputs(g, grads);
    const ir::TensorId sq = g.add_op("global_sq_norm", ids, {}).front();
    ids.push_back(sq);
    const std::vector<ir::TensorId> outs = g.add_op("clip_scale_", ids, make_attrs({{"max_norm", max_norm}}));
    ASSERT_EQ(outs.size(), grads.size());
    ids.pop_back();
    for (size_t i = 0; i < grads.size(); ++i) EXPECT_EQ(g.storage_root(outs[i]), ids[i]) << "output " << i;
    expect_all_close(evaluate(g, outs), clipped(grads, max_norm), "clipped");
  }
}

TEST(ClipScale, ACollectiveBetweenTheHalvesClipsReplicaShardedGradients) {
  // R = 2: a replica-sharded gradient of full shape [5] (shards of 3, one padding zero)
  // and a replicated one of shape [3]. The shards' sums of squares are all-reduced, the
  // replicated gradient's added once, so both replicas clip by the norm of all 8 values.
  const Value full = f32({5}, {0.5, -1.0, 0.25, 2.0, -0.75}), replicated = f32({3}, {1.5, -0.5, 1.0});
  ir::Graph g;
  g.set_replication_factor(2);
  const ir::TensorId w = g.add_replica_sharded_variable("w", ir::DType::Float32, {5}, to_bytes(full), std::nullopt,
                                                        ir::RetrievalMode::OnePerGroup, 0);
  const ir::TensorId b = add_inputs(g, {replicated}).front();
  const ir::TensorId shards = g.add_op("replicated_all_reduce", {g.add_op("global_sq_norm", {w}, {}).front()}, {}).front();
  const ir::TensorId total = g.add_op("add", {shards, g.add_op("global_sq_norm", {b}, {}).front()}, {}).front();
  g.add_op("clip_scale_", {w, b, total}, make_attrs({{"max_norm", 1.0}}));
  session::Session session(g, {});
  session.run({}, {});
  const std::vector<Value> expected = clipped({full, replicated}, 1.0);  // norm sqrt(10.0625)
  for (const auto& [id, want, what] : {std::tuple{w, expected[0], "w"}, std::tuple{b, expected[1], "b"}}) {
    const ir::Shape shape = session.variable_shape(id);
    std::vector<std::byte> bytes(static_cast<size_t>(ir::numel(shape)) * sizeof(float));
    session.read_variable(id, bytes);
    expect_close(from_bytes(ir::DType::Float32, shape, bytes), want, kForwardTolerance, what);
  }
}

TEST(ClipScale, AConstantNormIsNotUpdated) {
  // Only the gradients are in-place targets: total_sq_norm may be a constant.
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {f32({2}, {3, 4})});
  const ir::TensorId c = g.add_constant(ir::DType::Float32, {}, to_bytes(f32({}, {100})));
  const std::vector<ir::TensorId> outs = g.add_op("clip_scale_", {ids[0], c}, {});
  expect_all_close(evaluate(g, outs), {f32({2}, {3 / 10.000001, 4 / 10.000001})}, "scaled by 1 / (10 + 1e-6)");
}

TEST(GradClip, InputErrorsNameTheGradient) {
  const Value a = random_f32({2}, 1), bad = i32({2}, {1, 2});
  OpError e = expect_build_error("global_sq_norm", {a, bad}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 1 (g1) must be float32"));
  e = expect_build_error("clip_by_global_norm_", {a, a, bad}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 2 (g2) must be float32"));
  e = expect_build_error("clip_scale_", {a, f32({2}, {1, 1})}, {}, ir::ErrorCode::ShapeMismatch);
  EXPECT_THAT(e.message,
              HasSubstr("total_sq_norm [2] must be a float32 [] or [1] tensor (the sum of the squares of every gradient)"));
  e = expect_build_error("clip_scale_", {a, i32({}, {1})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(e.message, HasSubstr("input 1 (total_sq_norm) must be float32"));
  for (const char* op : {"clip_scale_", "clip_by_global_norm_"}) {
    SCOPED_TRACE(op);
    e = expect_build_error(op, {a, f32({}, {1})}, make_attrs({{"max_norm", -1.0}}), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("max_norm is -1, must be >= 0"));
    e = expect_build_error(op, {a, f32({}, {1})}, make_attrs({{"eps", std::nan("")}}), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("eps is nan, must be >= 0"));
  }
}

TEST(GradClip, ScaledGradientsMustBeDistinctNonConstants) {
  ir::Graph g;
  const std::vector<ir::TensorId> ids = add_inputs(g, {random_f32({2}, 1), random_f32({2}, 2)});
  const ir::TensorId c = g.add_constant(ir::DType::Float32, {2}, to_bytes(random_f32({2}, 3)));
  const ir::TensorId sq = g.add_op("global_sq_norm", {ids[0], ids[1], ids[0]}, {}).front();  // reading twice is fine
  const struct {
    const char* op;
    std::vector<ir::TensorId> inputs;
    const char* rule;
  } cases[] = {
      {"clip_by_global_norm_", {ids[0], ids[1], ids[0]},
       "g0 and g2 share storage: the gradients are scaled in place and must be distinct tensors"},
      {"clip_scale_", {ids[1], ids[1], sq}, "g0 and g1 share storage"},
      {"clip_by_global_norm_", {ids[0], c}, "an in-place op cannot modify the constant"},
      {"clip_scale_", {c, sq}, "an in-place op cannot modify the constant"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.rule);
    try {
      g.add_op(k.op, k.inputs, {});
      ADD_FAILURE() << k.op << " was accepted";
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
      EXPECT_THAT(e.what(), HasSubstr("op '" + std::string(k.op) + "'"));
      EXPECT_THAT(e.what(), HasSubstr(k.rule));
    }
  }
}

TEST(GradClip, AtMost1024Gradients) {
  ir::Graph g;
  const ir::TensorId x = add_inputs(g, {random_f32({1}, 1)}).front();
  try {
    g.add_op("global_sq_norm", std::vector<ir::TensorId>(1025, x), {});
    ADD_FAILURE() << "1025 inputs were accepted";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("op 'global_sq_norm' takes 1 to 1024 inputs, got 1025"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
