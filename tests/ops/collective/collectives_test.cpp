// Collective ops (core/ops/collective/collectives.cpp) between replicas, through the local
// collectives plugin: forward results against a double reference over all replicas, for
// several groupings, and per-replica finite-difference gradient checks of the gradient
// rules docs/design.md fixes (autodiff never inserts a collective: the gradient is the
// derivative of replica r's loss with respect to replica r's input, the other replicas'
// inputs held fixed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/ir/autodiff.h"
#include "core/ir/replica_grouping.h"
#include "core/session/session.h"
#include "tests/ops/op_test_util.h"

namespace plexus::ops::test {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kR = 4;

struct Grouping {
  int64_t group_size, stride;
};

ir::Attributes grouping_attrs(Grouping g, std::vector<std::pair<std::string, ir::AttrValue>> more = {}) {
  ir::Attributes a;
  a.set("group_size", g.group_size);
  a.set("stride", g.stride);
  for (auto& [name, value] : more) a.set(name, value);
  return a;
}

// Double reference of one collective over all replicas: inputs[r] -> outputs[r].
using MultiReference = std::function<std::vector<std::vector<double>>(const std::vector<std::vector<double>>&)>;

// Runs `type` on kR replicas, replica r's input from row r of `inputs` (shape `shape`),
// and returns each replica's output, plus the per-replica gradient of
// loss_r = sum(y_r * weights) with respect to x_r when `with_grad`.
struct ReplicatedRun {
  std::vector<std::vector<double>> outputs, grads;
  ir::Shape out_shape;
};

ReplicatedRun run_replicated(const std::string& type, const ir::Shape& shape, const std::vector<std::vector<double>>& inputs,
                             const ir::Attributes& attrs, const std::vector<double>* weights) {
  ir::Graph g;
  g.set_replication_factor(kR);
  const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, shape);
  const ir::TensorId x = g.stream(xs).tensor;
  const ir::TensorId y = g.add_op(type, {x}, attrs).front();
  ReplicatedRun result;
  result.out_shape = g.tensor(y).shape;
  const ir::StreamId ys = g.add_d2h_stream("y", y);
  ir::StreamId gs = -1;
  if (weights) {
    std::vector<float> w(weights->begin(), weights->end());
    std::vector<std::byte> bytes(w.size() * sizeof(float));
    std::memcpy(bytes.data(), w.data(), bytes.size());
    const ir::TensorId wt = g.add_constant(ir::DType::Float32, result.out_shape, bytes);
    const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("mul", {y, wt}, {}).front()}, {}).front();
    gs = g.add_d2h_stream("dx", ir::autodiff(g, loss, std::vector<ir::TensorId>{x}).front());
  }
  session::Session session(g, {});
  const int64_t n = ir::numel(shape), m = ir::numel(result.out_shape);
  std::vector<float> x_host, y_host(static_cast<size_t>(kR * m)), g_host(static_cast<size_t>(kR * n));
  for (const auto& row : inputs) x_host.insert(x_host.end(), row.begin(), row.end());
  ir::Shape in_host = shape, out_host = result.out_shape;
  in_host.insert(in_host.begin(), kR);
  out_host.insert(out_host.begin(), kR);
  const runtime::HostArray in{xs, x_host.data(), ir::DType::Float32, in_host};
  std::vector<runtime::HostArray> outs{{ys, y_host.data(), ir::DType::Float32, out_host}};
  if (weights) outs.push_back({gs, g_host.data(), ir::DType::Float32, in_host});
  session.run(std::span(&in, 1), outs);
  for (int64_t r = 0; r < kR; ++r) {
    result.outputs.emplace_back(y_host.begin() + r * m, y_host.begin() + (r + 1) * m);
    result.grads.emplace_back(g_host.begin() + r * n, g_host.begin() + (r + 1) * n);
  }
  return result;
}

std::vector<std::vector<double>> random_inputs(int64_t n, uint32_t seed) {
  std::vector<std::vector<double>> in;
  for (int64_t r = 0; r < kR; ++r) {
    std::vector<double> v = random_values(n, -1.0, 1.0, seed + static_cast<uint32_t>(r));
    for (double& e : v) e = static_cast<double>(static_cast<float>(e));
    in.push_back(v);
  }
  return in;
}

// Checks outputs against the reference, then replica r's gradient against central
// differences of sum(reference(x)[r] * w) in x[r].
void expect_replicated(const std::string& type, const ir::Shape& shape, Grouping grouping, const ir::Attributes& attrs,
                       const MultiReference& reference, bool check_gradient) {
  const auto inputs = random_inputs(ir::numel(shape), 7);
  const auto expected = reference(inputs);
  std::vector<double> weights = random_values(static_cast<int64_t>(expected[0].size()), -1.0, 1.0, 99);
  for (double& w : weights) w = static_cast<double>(static_cast<float>(w));
  const ReplicatedRun run = run_replicated(type, shape, inputs, attrs, check_gradient ? &weights : nullptr);
  const std::string what = type + " group_size " + std::to_string(grouping.group_size) + " stride " +
                           std::to_string(grouping.stride);
  for (int64_t r = 0; r < kR; ++r) {
    ASSERT_EQ(run.outputs[static_cast<size_t>(r)].size(), expected[static_cast<size_t>(r)].size()) << what;
    for (size_t i = 0; i < expected[static_cast<size_t>(r)].size(); ++i) {
      EXPECT_NEAR(run.outputs[static_cast<size_t>(r)][i], expected[static_cast<size_t>(r)][i], 1e-5)
          << what << " replica " << r << " element " << i;
    }
  }
  if (!check_gradient) return;
  for (int64_t r = 0; r < kR; ++r) {
    for (size_t i = 0; i < inputs[0].size(); ++i) {
      auto loss = [&](double delta) {
        auto moved = inputs;
        moved[static_cast<size_t>(r)][i] += delta;
        const auto y = reference(moved)[static_cast<size_t>(r)];
        double l = 0;
        for (size_t k = 0; k < y.size(); ++k) l += y[k] * weights[k];
        return l;
      };
      const double numeric = (loss(kFiniteDifferenceEps) - loss(-kFiniteDifferenceEps)) / (2 * kFiniteDifferenceEps);
      EXPECT_NEAR(run.grads[static_cast<size_t>(r)][i], numeric, kGradientTolerance.atol + kGradientTolerance.rtol * std::abs(numeric))
          << what << " gradient, replica " << r << " element " << i;
    }
  }
}

// Each replica's group members and its position among them.
std::vector<int64_t> members_of(Grouping g, int64_t r) {
  const ir::ReplicaGrouping grouping(kR, g.group_size, g.stride);
  return grouping.members(grouping.group_of(r));
}
int64_t position_of(Grouping g, int64_t r) { return ir::ReplicaGrouping(kR, g.group_size, g.stride).position_in_group(r); }

// The flattened, zero-padded shard `p` of `x` for a group of `g`.
std::vector<double> shard(const std::vector<double>& x, int64_t g, int64_t p) {
  const auto n = static_cast<int64_t>(x.size()), chunk = (n + g - 1) / g;
  std::vector<double> out(static_cast<size_t>(chunk), 0.0);
  for (int64_t i = 0; i < chunk && p * chunk + i < n; ++i) out[static_cast<size_t>(i)] = x[static_cast<size_t>(p * chunk + i)];
  return out;
}

const Grouping kGroupings[] = {{4, 1}, {2, 1}, {2, 2}, {1, 1}};

TEST(ReplicatedAllReduce, EveryOpAndGroupingWithGradients) {
  for (const Grouping g : kGroupings) {
    for (const std::string op : {"sum", "mean", "max", "min"}) {
      const MultiReference reference = [g, op](const std::vector<std::vector<double>>& in) {
        std::vector<std::vector<double>> out;
        for (int64_t r = 0; r < kR; ++r) {
          std::vector<double> acc = in[static_cast<size_t>(members_of(g, r).front())];
          for (int64_t m : members_of(g, r)) {
            if (m == members_of(g, r).front()) continue;
            for (size_t i = 0; i < acc.size(); ++i) {
              const double v = in[static_cast<size_t>(m)][i];
              acc[i] = op == "max" ? std::max(acc[i], v) : op == "min" ? std::min(acc[i], v) : acc[i] + v;
            }
          }
          if (op == "mean") {
            for (double& a : acc) a /= static_cast<double>(g.group_size);
          }
          out.push_back(acc);
        }
        return out;
      };
      expect_replicated("replicated_all_reduce", {2, 3}, g, grouping_attrs(g, {{"op", std::string(op)}}), reference,
                        op == "sum" || op == "mean");
    }
  }
}

TEST(ReplicatedAllReduce, InPlaceVariantUpdatesItsInput) {
  const Grouping g{2, 1};
  const auto inputs = random_inputs(5, 3);
  const ReplicatedRun run =
      run_replicated("replicated_all_reduce_", {5}, inputs, grouping_attrs(g, {{"op", std::string("sum")}}), nullptr);
  for (int64_t r = 0; r < kR; ++r) {
    for (size_t i = 0; i < 5; ++i) {
      double sum = 0;
      for (int64_t m : members_of(g, r)) sum += inputs[static_cast<size_t>(m)][i];
      EXPECT_NEAR(run.outputs[static_cast<size_t>(r)][i], sum, 1e-6);
    }
  }
}

TEST(ReplicatedAllReduceBucket, GivesEachInputsAllReduceBitForBitInOneOpAndInPlace) {
  // The gradient-bucket rewrite's op (core/compile/gradient_buckets.h) against one
  // replicated_all_reduce per input, in one graph of kR replicas: a = neg(x) [2,3], b = exp(x)
  // [2,3] and c = x [5] (a second stream), reduced by mean over groups of 2.
  for (const char* type : {"replicated_all_reduce_bucket", "replicated_all_reduce_bucket_"}) {
    SCOPED_TRACE(type);
    ir::Graph g;
    g.set_replication_factor(kR);
    const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {2, 3}), cs = g.add_h2d_stream("c", ir::DType::Float32, {5});
    const ir::TensorId x = g.stream(xs).tensor;
    const std::vector<ir::TensorId> in{g.add_op("neg", {x}, {})[0], g.add_op("exp", {x}, {})[0],
                                       g.add_op("neg", {g.stream(cs).tensor}, {})[0]};
    const ir::Attributes attrs = grouping_attrs({2, 1}, {{"op", std::string("mean")}});
    std::vector<ir::StreamId> expected, actual;
    for (size_t i = 0; i < in.size(); ++i) {
      expected.push_back(g.add_d2h_stream("e" + std::to_string(i), g.add_op("replicated_all_reduce", {in[i]}, attrs)[0]));
    }
    const std::vector<ir::TensorId> out = g.add_op(type, in, attrs);
    ASSERT_EQ(out.size(), in.size());
    for (size_t i = 0; i < out.size(); ++i) actual.push_back(g.add_d2h_stream("a" + std::to_string(i), out[i]));
    session::Session session(g, {});
    const auto xv = random_inputs(6, 3), cv = random_inputs(5, 4);
    std::vector<float> x_host, c_host;
    for (int64_t r = 0; r < kR; ++r) {
      x_host.insert(x_host.end(), xv[static_cast<size_t>(r)].begin(), xv[static_cast<size_t>(r)].end());
      c_host.insert(c_host.end(), cv[static_cast<size_t>(r)].begin(), cv[static_cast<size_t>(r)].end());
    }
    const runtime::HostArray host_in[2] = {{xs, x_host.data(), ir::DType::Float32, {kR, 2, 3}},
                                           {cs, c_host.data(), ir::DType::Float32, {kR, 5}}};
    std::vector<std::vector<float>> results(2 * in.size());
    std::vector<runtime::HostArray> host_out;
    for (size_t i = 0; i < 2 * in.size(); ++i) {
      const ir::StreamId s = i < in.size() ? expected[i] : actual[i - in.size()];
      ir::Shape shape = g.tensor(g.stream(s).tensor).shape;
      results[i].resize(static_cast<size_t>(kR * ir::numel(shape)));
      shape.insert(shape.begin(), kR);
      host_out.push_back({s, results[i].data(), ir::DType::Float32, shape});
    }
    session.run(host_in, host_out);
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(results[in.size() + i], results[i]) << "input " << i;
      EXPECT_NE(results[i], std::vector<float>(results[i].size(), 0.0f));
    }
  }
}

TEST(ReplicatedAllReduceBucket, RefusesInputsOfTwoDtypes) {
  ir::Graph g;
  g.set_replication_factor(kR);
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4})).tensor;
  const ir::TensorId i = g.stream(g.add_h2d_stream("i", ir::DType::Int32, {4})).tensor;
  try {
    g.add_op("replicated_all_reduce_bucket", {x, i}, grouping_attrs({2, 1}));
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::DTypeMismatch);
    EXPECT_THAT(e.what(), HasSubstr("input 1: a bucket's inputs share a dtype"));
  }
}

TEST(ReplicatedAllGather, NewAxisAndConcatWithGradients) {
  for (const Grouping g : kGroupings) {
    const MultiReference reference = [g](const std::vector<std::vector<double>>& in) {
      std::vector<std::vector<double>> out;
      for (int64_t r = 0; r < kR; ++r) {
        std::vector<double> all;
        for (int64_t m : members_of(g, r)) all.insert(all.end(), in[static_cast<size_t>(m)].begin(), in[static_cast<size_t>(m)].end());
        out.push_back(all);
      }
      return out;
    };
    for (const std::string mode : {"auto", "new_axis", "concat"}) {
      expect_replicated("replicated_all_gather", {2, 3}, g, grouping_attrs(g, {{"output_shape", mode}}), reference, true);
    }
  }
}

TEST(ReplicatedReduceScatter, ShardsAnyElementCountWithGradients) {
  for (const Grouping g : kGroupings) {
    for (const std::string op : {"sum", "mean"}) {
      for (const ir::Shape& shape : {ir::Shape{2, 4}, ir::Shape{7}, ir::Shape{1}}) {
        const MultiReference reference = [g, op](const std::vector<std::vector<double>>& in) {
          std::vector<std::vector<double>> out;
          for (int64_t r = 0; r < kR; ++r) {
            std::vector<double> acc;
            for (int64_t m : members_of(g, r)) {
              const auto part = shard(in[static_cast<size_t>(m)], g.group_size, position_of(g, r));
              if (acc.empty()) acc.assign(part.size(), 0.0);
              for (size_t i = 0; i < part.size(); ++i) acc[i] += part[i];
            }
            if (op == "mean") {
              for (double& a : acc) a /= static_cast<double>(g.group_size);
            }
            out.push_back(acc);
          }
          return out;
        };
        expect_replicated("replicated_reduce_scatter", shape, g, grouping_attrs(g, {{"op", op}}), reference, true);
      }
    }
  }
}

TEST(ReplicaShardedSlice, TakesThisReplicasShardWithGradients) {
  for (const Grouping g : kGroupings) {
    for (const ir::Shape& shape : {ir::Shape{2, 4}, ir::Shape{7}}) {
      const MultiReference reference = [g](const std::vector<std::vector<double>>& in) {
        std::vector<std::vector<double>> out;
        for (int64_t r = 0; r < kR; ++r) out.push_back(shard(in[static_cast<size_t>(r)], g.group_size, position_of(g, r)));
        return out;
      };
      expect_replicated("replica_sharded_slice", shape, g, grouping_attrs(g), reference, true);
    }
  }
}

TEST(ReplicaShardedSliceGrad, PutsTheShardBackIntoZeros) {
  const Grouping g{4, 1};
  const ir::Attributes attrs = grouping_attrs(g, {{"shape", std::vector<int64_t>{7}}});
  const MultiReference reference = [g](const std::vector<std::vector<double>>& in) {
    std::vector<std::vector<double>> out;
    for (int64_t r = 0; r < kR; ++r) {
      std::vector<double> full(7, 0.0);
      const int64_t p = position_of(g, r);
      for (int64_t i = 0; i < 2 && p * 2 + i < 7; ++i) full[static_cast<size_t>(p * 2 + i)] = in[static_cast<size_t>(r)][static_cast<size_t>(i)];
      out.push_back(full);
    }
    return out;
  };
  expect_replicated("replica_sharded_slice_grad", {2}, g, attrs, reference, false);
}

// At R=1 every collective is the identity on its group of one; the generic harness
// checks forward and gradient there too.
TEST(Collectives, GroupsOfOneThroughTheGenericHarness) {
  const Value x = random_f32({2, 3}, 21);
  for (const std::string op : {"sum", "mean"}) {
    ir::Attributes attrs;
    attrs.set("op", op);
    expect_gradients("replicated_all_reduce", {x}, attrs, [](const std::vector<Value>& in) { return in[0]; });
  }
  expect_gradients("replicated_all_gather", {x}, {}, [](const std::vector<Value>& in) {
    return Value{in[0].dtype, {1, 2, 3}, in[0].data};
  });
  expect_gradients("replica_sharded_slice", {x}, {}, [](const std::vector<Value>& in) {
    return Value{in[0].dtype, {6}, in[0].data};
  });
}

TEST(Collectives, InvalidGroupingsAndOpsAreRefusedWhenAdded) {
  ir::Graph g;
  g.set_replication_factor(kR);
  const ir::TensorId x = g.stream(g.add_h2d_stream("x", ir::DType::Float32, {4})).tensor;
  auto error = [&](const std::string& type, const ir::Attributes& attrs) {
    try {
      g.add_op(type, {x}, attrs);
    } catch (const ir::Error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(ir::ErrorCode::Internal, std::string("no error"));
  };
  auto [code, msg] = error("replicated_all_reduce", grouping_attrs({3, 1}));
  EXPECT_EQ(code, ir::ErrorCode::InvalidGrouping);
  EXPECT_THAT(msg, HasSubstr("replicated_all_reduce"));
  EXPECT_THAT(msg, HasSubstr("replication factor 4, group_size 3, stride 1"));
  std::tie(code, msg) = error("replicated_all_reduce", grouping_attrs({2, 1}, {{"op", std::string("product")}}));
  EXPECT_EQ(code, ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(msg, HasSubstr("op 'product' is not one of sum, mean, max, min"));
  std::tie(code, msg) = error("replicated_reduce_scatter", grouping_attrs({2, 1}, {{"op", std::string("max")}}));
  EXPECT_THAT(msg, HasSubstr("op 'max' is not one of sum, mean"));
  std::tie(code, msg) = error("replicated_all_gather", grouping_attrs({2, 1}, {{"output_shape", std::string("flat")}}));
  EXPECT_THAT(msg, HasSubstr("output_shape 'flat' is not one of auto, new_axis, concat"));
  EXPECT_EQ(g.num_ops(), 0u);
}

TEST(Collectives, MaxAndMinAllReduceHaveNoGradient) {
  ir::Graph g;
  g.set_replication_factor(2);
  std::vector<std::byte> data(8);
  const ir::TensorId x = g.add_variable("x", ir::DType::Float32, {2}, data);
  ir::Attributes attrs;
  attrs.set("op", std::string("max"));
  const ir::TensorId loss = g.add_op("reduce_sum", {g.add_op("replicated_all_reduce", {x}, attrs).front()}, {}).front();
  try {
    ir::autodiff(g, loss, std::vector<ir::TensorId>{x});
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("reduces with max, which has no gradient"));
  }
}

}  // namespace
}  // namespace plexus::ops::test
