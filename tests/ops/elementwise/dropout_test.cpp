// dropout (core/ops/elementwise/dropout.cpp): inverted dropout in training programs (autodiff ran),
// identity otherwise; the mask is a splitmix64 hash of (seed, micro-batch counter, replica,
// key = the op's output tensor id, element), re-implemented here from the documented rule
// so the tests check the exact masks, and dropout_grad draws the same mask again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/ir/autodiff.h"
#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

// --- the documented mask, the test's own implementation -------------------------------

uint64_t splitmix_finaliser(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;

std::vector<bool> mask(size_t n, double p, int64_t seed, int64_t micro_batch, int64_t replica, int64_t key) {
  auto mix = [](uint64_t z) { return splitmix_finaliser(z + kGamma); };
  uint64_t state = mix(
      mix(mix(mix(static_cast<uint64_t>(seed)) ^ static_cast<uint64_t>(micro_batch)) ^ static_cast<uint64_t>(replica)) ^
      static_cast<uint64_t>(key));
  std::vector<bool> keep;
  for (size_t i = 0; i < n; ++i) {
    state += kGamma;  // splitmix64: advance, then finalise
    keep.push_back(static_cast<double>(splitmix_finaliser(state) >> 40) / 16777216.0 >= p);
  }
  return keep;
}

// x * mask / (1 - p), in double.
Reference dropout_reference(double p, int64_t seed, int64_t micro_batch, int64_t replica, int64_t key) {
  return [=](const std::vector<Value>& in) {
    const std::vector<bool> keep = mask(in[0].data.size(), p, seed, micro_batch, replica, key);
    Value y = in[0];
    for (size_t i = 0; i < y.data.size(); ++i) y.data[i] = keep[i] ? y.data[i] / (1.0 - p) : 0.0;
    return y;
  };
}

ir::Attributes dropout_attrs(double p, int64_t seed) { return make_attrs({{"p", p}, {"seed", seed}}); }

// A training program: x (variable 0, so the dropout output is tensor 1, its key), y =
// dropout(x), loss = sum(y * w), autodiff for x, y and dx streamed out.
struct TrainingGraph {
  ir::Graph g;
  ir::TensorId key = -1;
  ir::StreamId y = -1, dx = -1;
};

TrainingGraph training_graph(const Value& x, const ir::Attributes& attrs, const Value& w, int64_t replicas) {
  TrainingGraph t;
  t.g.set_replication_factor(replicas);
  const ir::TensorId in = add_inputs(t.g, {x}).front();
  t.key = t.g.add_op("dropout", {in}, attrs).front();
  const ir::TensorId wt = t.g.add_constant(ir::DType::Float32, w.shape, to_bytes(w));
  const ir::TensorId loss = t.g.add_op("reduce_sum", {t.g.add_op("mul", {t.key, wt}, {}).front()}, {}).front();
  const ir::TensorId dx = ir::autodiff(t.g, loss, std::vector<ir::TensorId>{in}).front();
  t.y = t.g.add_d2h_stream("y", t.key);
  t.dx = t.g.add_d2h_stream("dx", dx);
  return t;
}

// `runs` runs of one session; per run, y and dx with `lead` dims before x's shape (the
// replicas, or the iterations and micro-batches).
struct TrainingRuns {
  std::vector<std::vector<float>> y, dx;
  ir::TensorId key = -1;
};

TrainingRuns run_training(const Value& x, const ir::Attributes& attrs, const Value& w, int runs, int64_t replicas = 1,
                          const session::SessionOptions& options = {}, const ir::Shape& lead = {}) {
  const TrainingGraph t = training_graph(x, attrs, w, replicas);
  session::SessionOptions o = options;
  o.threads_per_device = 1;
  session::Session session(t.g, o);
  ir::Shape host = lead;
  if (replicas > 1) host.insert(host.begin(), replicas);
  host.insert(host.end(), x.shape.begin(), x.shape.end());
  TrainingRuns result;
  result.key = t.key;
  for (int r = 0; r < runs; ++r) {
    std::vector<float> yh(static_cast<size_t>(ir::numel(host))), dh(yh.size());
    const runtime::HostArray outs[] = {{t.y, yh.data(), ir::DType::Float32, host},
                                       {t.dx, dh.data(), ir::DType::Float32, host}};
    session.run({}, outs);
    result.y.push_back(yh);
    result.dx.push_back(dh);
  }
  return result;
}

Value as_value(const std::vector<float>& v, const ir::Shape& shape, size_t offset = 0) {
  const size_t n = static_cast<size_t>(ir::numel(shape));
  return Value{
      ir::DType::Float32, shape,
      std::vector<double>(v.begin() + static_cast<int64_t>(offset), v.begin() + static_cast<int64_t>(offset + n))};
}

// --- tests -------------------------------------------------------------------------------

// In expect_gradients' graph the input is variable 0 and the dropout output tensor 1 (the
// key), the first run is micro-batch 0 of replica 0.
TEST(Dropout, ForwardAndGradientMatchTheDocumentedMask) {
  for (const double p : {0.1, 0.5, 0.8}) {
    SCOPED_TRACE(p);
    expect_gradients("dropout", {random_f32({7, 9}, 1)}, dropout_attrs(p, 42), dropout_reference(p, 42, 0, 0, 1));
  }
  EXPECT_EQ(run_training(random_f32({2}, 1), dropout_attrs(0.5, 0), random_f32({2}, 2), 1).key, 1)
      << "the key the references assume";
}

TEST(Dropout, KeepsAboutOneMinusPAndScalesByItsInverse) {
  const int64_t n = 20000;
  const Value x = f32({n}, std::vector<double>(static_cast<size_t>(n), 1.0));
  for (const double p : {0.0, 0.25, 0.9}) {
    SCOPED_TRACE(p);
    const TrainingRuns r = run_training(x, dropout_attrs(p, 7), x, 1);
    int64_t kept = 0;
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    for (size_t i = 0; i < r.y[0].size(); ++i) {
      ASSERT_TRUE(r.y[0][i] == 0.0f || r.y[0][i] == scale) << "element " << i << ": " << r.y[0][i];
      EXPECT_EQ(r.dx[0][i], r.y[0][i]) << "dx = w * mask / (1 - p) with w = 1";
      kept += r.y[0][i] != 0.0f;
    }
    // Binomial: standard deviation sqrt(p (1 - p) / n) <= 0.0036; 5 of them.
    EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(n), 1.0 - p, 0.018);
  }
}

TEST(Dropout, IsTheIdentityOutsideTraining) {
  const Value x = random_f32({3, 5}, 1);
  expect_equal(run_op1("dropout", {x}, dropout_attrs(0.5, 1)), x, "inference program");
}

TEST(Dropout, EachRunDrawsTheMaskOfItsMicroBatchReproducibly) {
  const Value x = random_f32({64}, 1, -1.0, 1.0, 0.01), w = random_f32({64}, 2);
  const TrainingRuns a = run_training(x, dropout_attrs(0.5, 3), w, 3);
  const TrainingRuns b = run_training(x, dropout_attrs(0.5, 3), w, 1);
  EXPECT_EQ(a.y[0], b.y[0]) << "a new session starts from micro-batch 0 again";
  for (int64_t run = 0; run < 3; ++run) {
    SCOPED_TRACE(run);
    const Value expected = dropout_reference(0.5, 3, run, 0, a.key)({x});
    expect_close(as_value(a.y[static_cast<size_t>(run)], x.shape), expected, kForwardTolerance, "y");
    const Value dx = dropout_reference(0.5, 3, run, 0, a.key)({w});
    expect_close(as_value(a.dx[static_cast<size_t>(run)], x.shape), dx, kForwardTolerance, "dx");
  }
  EXPECT_NE(a.y[0], a.y[1]);
}

// Device iterations 2 and gradient accumulation 2: run k's micro-batch m of iteration i is
// micro-batch 4k + 2i + m, in the forward and the backward pass alike.
TEST(Dropout, MicroBatchesOfEveryIterationDrawTheirOwnMasks) {
  const Value x = random_f32({16}, 1, -1.0, 1.0, 0.01), w = random_f32({16}, 2);
  session::SessionOptions options;
  options.device_iterations = 2;
  options.gradient_accumulation = 2;
  const TrainingRuns r = run_training(x, dropout_attrs(0.5, 9), w, 2, 1, options, {2, 2});
  for (int64_t run = 0; run < 2; ++run) {
    for (int64_t mb = 0; mb < 4; ++mb) {
      SCOPED_TRACE(testing::Message() << "run " << run << " micro-batch " << mb);
      const int64_t counter = run * 4 + mb;
      const auto offset = static_cast<size_t>(mb * 16);
      expect_close(as_value(r.y[static_cast<size_t>(run)], x.shape, offset),
                   dropout_reference(0.5, 9, counter, 0, r.key)({x}), kForwardTolerance, "y");
      expect_close(as_value(r.dx[static_cast<size_t>(run)], x.shape, offset),
                   dropout_reference(0.5, 9, counter, 0, r.key)({w}), kForwardTolerance, "dx");
    }
  }
}

TEST(Dropout, ReplicasAndSeedsDrawDifferentMasks) {
  const Value x = random_f32({64}, 1, -1.0, 1.0, 0.01), w = random_f32({64}, 2);
  const TrainingRuns r = run_training(x, dropout_attrs(0.5, 3), w, 1, 2);
  for (int64_t replica = 0; replica < 2; ++replica) {
    SCOPED_TRACE(replica);
    const size_t offset = static_cast<size_t>(replica * 64);
    expect_close(as_value(r.y[0], x.shape, offset), dropout_reference(0.5, 3, 0, replica, r.key)({x}),
                 kForwardTolerance, "y");
    expect_close(as_value(r.dx[0], x.shape, offset), dropout_reference(0.5, 3, 0, replica, r.key)({w}),
                 kForwardTolerance, "dx");
  }
  EXPECT_NE(mask(64, 0.5, 3, 0, 0, r.key), mask(64, 0.5, 3, 0, 1, r.key));
  EXPECT_NE(run_training(x, dropout_attrs(0.5, 4), w, 1).y[0], run_training(x, dropout_attrs(0.5, 3), w, 1).y[0]);
}

TEST(DropoutGrad, DrawsTheMaskOfItsKey) {
  // Outside training both ops are the identity; dropout_grad's mask is checked through
  // autodiff above. Here: its attributes are checked like dropout's.
  const Value dy = random_f32({4}, 1);
  expect_equal(run_op1("dropout_grad", {dy}, make_attrs({{"p", 0.5}, {"seed", int64_t{1}}, {"key", int64_t{1}}})), dy,
               "inference program");
  const OpError e = expect_build_error("dropout_grad", {dy}, make_attrs({{"p", 0.5}}), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("key"));
}

TEST(Dropout, PAndDtypeAreChecked) {
  for (const double p : {1.0, -0.1, 2.0}) {
    SCOPED_TRACE(p);
    const OpError e =
        expect_build_error("dropout", {random_f32({2}, 1)}, dropout_attrs(p, 0), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.message, HasSubstr("must be in [0, 1)"));
  }
  const OpError d = expect_build_error("dropout", {i32({2}, {1, 2})}, {}, ir::ErrorCode::DTypeMismatch);
  EXPECT_THAT(d.message, HasSubstr("input 0 must be float32"));
}

}  // namespace
}  // namespace plexus::ops::test
