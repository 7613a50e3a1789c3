// The weight update on the host (SessionOptions::weight_update_on_host; core/runtime/
// host_update.h): bit-for-bit equal to the device-side update (graph all-reduce) for SGD
// and AdamW, several replica counts and gradient accumulation; optimizer state only in
// host memory; the initial broadcast from replica 0; written weights honoured; the errors;
// a failing run that neither hangs nor spoils the session; checkpoints.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>

#include "core/ir/autodiff.h"
#include "core/ir/error.h"
#include "tests/error_of.h"
#include "core/session/session.h"
#include "core/session/session_checkpoint.h"
#include "tests/runtime/data_parallel_mlp.h"
#include "tests/runtime/test_graphs.h"
#include "tests/runtime/two_block_model.h"

namespace plexus::runtime {
namespace {

using ::testing::HasSubstr;
using testing::build_mlp;
using testing::f32;
using testing::kMlpClasses;
using testing::kMlpIn;
using testing::max_abs_difference;
using testing::Mlp;
using testing::MlpUpdate;
using session::load_session;
using session::save_session;
using session::Session;
using session::SessionOptions;
using session::VariableStorage;

constexpr int64_t kBatch = 2;  // samples per replica and micro-batch

SessionOptions options(bool host, int64_t iterations, int64_t accumulation = 1) {
  SessionOptions o;
  o.collectives_plugin = "local";
  o.collective_timeout_ms = 30000;
  o.device_iterations = iterations;
  o.gradient_accumulation = accumulation;
  o.weight_update_on_host = host;
  return o;
}

// The inputs of one run of an MLP session, shaped as the session says
// ([device_iterations * gradient_accumulation, R] + the stream's shape).
struct Batch {
  std::vector<float> x;
  std::vector<int32_t> y;
};

Batch make_batch(const Session& s, const Mlp& m, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Batch b;
  b.x.resize(static_cast<size_t>(ir::numel(s.host_shape(m.x))));
  for (float& v : b.x) v = u(rng);
  b.y.resize(static_cast<size_t>(ir::numel(s.host_shape(m.y))));
  for (int32_t& v : b.y) v = static_cast<int32_t>(rng() % kMlpClasses);
  return b;
}

void run_batch(Session& s, const Mlp& m, Batch& b) {
  const HostArray in[2] = {{m.x, b.x.data(), ir::DType::Float32, s.host_shape(m.x)},
                           {m.y, b.y.data(), ir::DType::Int32, s.host_shape(m.y)}};
  s.run(in, {});
}

void run_seed(Session& s, const Mlp& m, uint32_t seed) {
  Batch b = make_batch(s, m, seed);
  run_batch(s, m, b);
}

// The optimizer state of build_mlp: the variables named "<param>.m", ".v", ".step" (AdamW) or
// "<param>.buf", ".step" (sgd_momentum_).
std::vector<ir::TensorId> optimizer_state(const ir::Graph& g) {
  std::vector<ir::TensorId> state;
  for (size_t t = 0; t < g.num_tensors(); ++t) {
    const ir::TensorInfo& info = g.tensor(static_cast<ir::TensorId>(t));
    if (info.kind == ir::TensorKind::Variable && info.name.find('.') != std::string::npos) {
      state.push_back(static_cast<ir::TensorId>(t));
    }
  }
  return state;
}

std::vector<float> read(const Session& s, ir::TensorId t) {
  std::vector<float> v(static_cast<size_t>(ir::numel(s.variable_shape(t))));
  s.read_variable(t, std::as_writable_bytes(std::span(v)));
  return v;
}

std::vector<float> read_all(const Session& s, const std::vector<ir::TensorId>& tensors) {
  std::vector<float> all;
  for (ir::TensorId t : tensors) {
    const std::vector<float> v = read(s, t);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

void write(Session& s, ir::TensorId t, const std::vector<float>& v) { s.write_variable(t, std::as_bytes(std::span(v))); }

// Parameters and optimizer state after training.
struct Trained {
  std::vector<float> params, state;
};

// Two runs of 10 steps (seeds 1 and 2) of the MLP on `replicas` replicas.
Trained train(int64_t replicas, MlpUpdate update, int64_t accumulation, bool host_option) {
  const Mlp m = build_mlp(replicas, kBatch, update);
  Session s(m.graph, options(host_option, 10, accumulation));
  run_seed(s, m, 1);
  run_seed(s, m, 2);
  return {read_all(s, m.params), read_all(s, optimizer_state(m.graph))};
}

std::vector<float> initial_params(int64_t replicas) {
  const Mlp m = build_mlp(replicas, kBatch);
  std::vector<float> all;
  for (ir::TensorId p : m.params) {
    const std::vector<float> v = testing::floats(m.graph.tensor(p).data);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

using plexus::test::error_of;

TEST(HostUpdate, EqualsTheDeviceUpdateBitForBit) {
  for (int64_t replicas : {2, 4}) {
    const std::vector<float> initial = initial_params(replicas);
    for (bool adam : {false, true}) {
      for (int64_t accumulation : {1, 2}) {
        SCOPED_TRACE("R=" + std::to_string(replicas) + (adam ? " AdamW" : " SGD") +
                     " gradient_accumulation=" + std::to_string(accumulation));
        const Trained device = train(replicas, {adam, false}, accumulation, false);
        const Trained host = train(replicas, {adam, true}, accumulation, true);
        ASSERT_EQ(device.params.size(), host.params.size());
        EXPECT_EQ(max_abs_difference(device.params, host.params), 0.0f);
        EXPECT_GT(max_abs_difference(initial, host.params), 1e-2f);  // training moved the weights
        ASSERT_EQ(device.state.size(), adam ? 2 * initial.size() + 4 : 0u);
        ASSERT_EQ(host.state.size(), device.state.size());
        EXPECT_EQ(max_abs_difference(device.state, host.state), 0.0f);
      }
    }
  }
}

TEST(HostUpdate, OneReplicaEqualsTheDeviceUpdateBitForBit) {
  const std::vector<float> initial = initial_params(1);
  for (bool adam : {false, true}) {
    for (int64_t accumulation : {1, 2}) {
      SCOPED_TRACE(std::string(adam ? "AdamW" : "SGD") + " gradient_accumulation=" + std::to_string(accumulation));
      const Trained device = train(1, {adam, false}, accumulation, false);
      const Trained host = train(1, {adam, true}, accumulation, true);
      ASSERT_EQ(host.params.size(), device.params.size());
      ASSERT_EQ(host.state.size(), device.state.size());
      EXPECT_EQ(max_abs_difference(device.params, host.params), 0.0f);
      EXPECT_EQ(max_abs_difference(device.state, host.state), 0.0f);
      EXPECT_GT(max_abs_difference(initial, host.params), 1e-2f);
    }
  }
}

TEST(HostUpdate, SgdMomentumEqualsTheDeviceUpdateBitForBit) {
  // sgd_momentum_ (Nesterov) on the host: its buffer and step are optimizer state there.
  for (int64_t replicas : {1, 2}) {
    SCOPED_TRACE("R=" + std::to_string(replicas));
    const std::vector<float> initial = initial_params(replicas);
    const Trained device = train(replicas, {false, false, true}, 1, false);
    const Trained host = train(replicas, {false, true, true}, 1, true);
    ASSERT_EQ(device.params.size(), host.params.size());
    EXPECT_EQ(max_abs_difference(device.params, host.params), 0.0f);
    EXPECT_GT(max_abs_difference(initial, host.params), 1e-2f);
    ASSERT_EQ(device.state.size(), initial.size() + 4);  // a buffer per parameter, 4 steps
    ASSERT_EQ(host.state.size(), device.state.size());
    EXPECT_EQ(max_abs_difference(device.state, host.state), 0.0f);
  }
}

TEST(HostUpdate, OptimizerStateLivesOnlyOnTheHost) {
  const Mlp dm = build_mlp(2, kBatch, {true, false}), hm = build_mlp(2, kBatch, {true, true});
  Session device(dm.graph, options(false, 10)), host(hm.graph, options(true, 10));
  // The same variables, other ids (the device graph has all-reduce ops in between).
  const std::vector<ir::TensorId> state = optimizer_state(hm.graph), dstate = optimizer_state(dm.graph);
  ASSERT_EQ(state.size(), 12u);  // m, v, step of 4 parameters
  ASSERT_EQ(dstate.size(), 12u);
  size_t state_bytes = 0;
  for (size_t i = 0; i < state.size(); ++i) {
    const ir::TensorId t = state[i];
    const size_t bytes = hm.graph.tensor(t).bytes();
    state_bytes += bytes;
    const VariableStorage h = host.variable_storage(t), d = device.variable_storage(dstate[i]);
    EXPECT_EQ(h.remote_bytes, bytes) << hm.graph.tensor(t).name;
    EXPECT_EQ(h.device_bytes, 0u) << hm.graph.tensor(t).name;
    EXPECT_EQ(d.device_bytes, bytes) << hm.graph.tensor(t).name;
    EXPECT_EQ(d.remote_bytes, 0u) << hm.graph.tensor(t).name;
  }
  for (ir::TensorId p : hm.params) {  // the weights stay on the devices (the forward pass reads them)
    EXPECT_EQ(host.variable_storage(p).device_bytes, hm.graph.tensor(p).bytes());
  }
  EXPECT_EQ(state_bytes, static_cast<size_t>((2 * (kMlpIn * 5 + 5 + 5 * kMlpClasses + kMlpClasses) + 4) * 4));
  for (size_t device_index : {size_t{0}, size_t{1}}) {
    const DeviceMemoryStats d = device.memory_stats(device_index), h = host.memory_stats(device_index);
    EXPECT_LE(h.variable_bytes + state_bytes, d.variable_bytes) << "device " << device_index;
    EXPECT_EQ(h.offloaded_bytes, state_bytes) << "device " << device_index;  // counted as offloaded
    EXPECT_EQ(d.offloaded_bytes, 0u) << "device " << device_index;
  }
  run_seed(device, dm, 1);
  run_seed(host, hm, 1);
  const std::vector<float> ds = read_all(device, dstate), hs = read_all(host, state);
  EXPECT_EQ(max_abs_difference(ds, hs), 0.0f);
  EXPECT_GT(max_abs_difference(ds, std::vector<float>(ds.size(), 0.0f)), 1e-3f);  // the moments moved
  EXPECT_EQ(read(host, state[2]), std::vector<float>{10.0f});  // w0.step: 10 updates
  EXPECT_EQ(max_abs_difference(read_all(device, dm.params), read_all(host, hm.params)), 0.0f);
}

// R replicas; stream x [2]; weight w [2] (`grouping`, `retrieval`); loss = sum(x * w);
// with `update`, SGD w -= 0.1 * grad (no all-reduce: the host update's mean).
struct Linear {
  ir::Graph g;
  ir::StreamId x;
  ir::TensorId w, grad;
  Linear(int64_t replicas, std::vector<float> init, std::optional<ir::ReplicaGrouping> grouping,
         ir::RetrievalMode retrieval, bool update = true) {
    g.set_replication_factor(replicas);
    x = g.add_h2d_stream("x", ir::DType::Float32, {2});
    w = g.add_variable("w", ir::DType::Float32, {2}, f32(init), grouping, retrieval);
    const ir::TensorId xw = g.add_op("mul", {g.stream(x).tensor, w}, {}).front();
    const ir::TensorId loss = g.add_op("reduce_sum", {xw}, {}).front();
    const ir::TensorId wrt[1] = {w};
    grad = ir::autodiff(g, loss, wrt).front();
    if (update) {
      ir::Attributes sgd;
      sgd.set("b", -0.1);
      g.add_op("scaled_add_", {w, grad}, sgd);
    }
  }
};

TEST(HostUpdate, FirstRunBroadcastsReplicaZerosWeights) {
  Linear l(2, {0.0f, 0.0f}, std::nullopt, ir::RetrievalMode::AllReplicas);
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f};  // replica 0, replica 1: mean {2, 3}
  const HostArray in{l.x, x.data(), ir::DType::Float32, {2, 2}};
  Session s(l.g, options(true, 1));
  write(s, l.w, {1.0f, 2.0f, 5.0f, 6.0f});  // replica 1 disagrees
  EXPECT_EQ(read(s, l.w), (std::vector<float>{1.0f, 2.0f, 5.0f, 6.0f}));
  s.run(std::span(&in, 1), {});
  const std::vector<float> after = read(s, l.w);
  ASSERT_EQ(after.size(), 4u);
  EXPECT_EQ(after[0], after[2]);
  EXPECT_EQ(after[1], after[3]);
  EXPECT_FLOAT_EQ(after[0], 0.8f);  // 1 - 0.1 * 2
  EXPECT_FLOAT_EQ(after[1], 1.7f);  // 2 - 0.1 * 3
  Session agreed(l.g, options(true, 1));
  write(agreed, l.w, {1.0f, 2.0f, 1.0f, 2.0f});
  agreed.run(std::span(&in, 1), {});
  EXPECT_EQ(read(agreed, l.w), after);
  // A second run starts from the agreed weights: no broadcast needed, all rows move alike.
  s.run(std::span(&in, 1), {});
  const std::vector<float> twice = read(s, l.w);
  EXPECT_EQ(twice[0], twice[2]);
  EXPECT_FLOAT_EQ(twice[0], 0.6f);
}

TEST(HostUpdate, WrittenWeightsAreUsedByTheHostUpdate) {
  const Mlp m = build_mlp(2, kBatch, {false, true});
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::vector<std::vector<float>> fresh_weights;
  for (ir::TensorId p : m.params) {
    std::vector<float> v(static_cast<size_t>(ir::numel(m.graph.tensor(p).shape)));
    for (float& e : v) e = normal(rng);
    fresh_weights.push_back(v);
  }
  Session s(m.graph, options(true, 5));
  run_seed(s, m, 1);
  for (size_t i = 0; i < m.params.size(); ++i) write(s, m.params[i], fresh_weights[i]);
  run_seed(s, m, 2);
  Session reference(m.graph, options(true, 5));
  for (size_t i = 0; i < m.params.size(); ++i) write(reference, m.params[i], fresh_weights[i]);
  run_seed(reference, m, 2);
  const std::vector<float> got = read_all(s, m.params), want = read_all(reference, m.params);
  EXPECT_EQ(max_abs_difference(got, want), 0.0f);
  std::vector<float> written;
  for (const auto& v : fresh_weights) written.insert(written.end(), v.begin(), v.end());
  EXPECT_GT(max_abs_difference(written, want), 1e-3f);  // the run trained
}

TEST(HostUpdate, TheGraphsOwnCollectivesStillWork) {
  // The loss is mean-reduced by the graph (a device collective) while the gradient is
  // mean-reduced on the host (collectives of its own, of the same plugin).
  std::vector<std::vector<float>> weights, losses;
  for (bool host : {false, true}) {
    ir::Graph g;
    g.set_replication_factor(2);
    const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {2});
    const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {2}, f32({1.0f, 2.0f}));
    const ir::TensorId loss =
        g.add_op("reduce_sum", {g.add_op("mul", {g.stream(xs).tensor, w}, {}).front()}, {}).front();
    ir::Attributes mean;
    mean.set("op", std::string("mean"));
    const ir::StreamId ls = g.add_d2h_stream("loss", g.add_op("replicated_all_reduce", {loss}, mean).front());
    const ir::TensorId wrt[1] = {w};
    ir::TensorId grad = ir::autodiff(g, loss, wrt).front();
    if (!host) grad = g.add_op("replicated_all_reduce", {grad}, mean).front();
    ir::Attributes sgd;
    sgd.set("b", -0.1);
    g.add_op("scaled_add_", {w, grad}, sgd);
    Session s(g, options(host, 2));
    std::vector<float> x = {1, 2, 2, 4, 2, 2, 3, 4}, out(4);
    const HostArray in{xs, x.data(), ir::DType::Float32, {2, 2, 2}};
    const HostArray result{ls, out.data(), ir::DType::Float32, {2, 2}};
    s.run(std::span(&in, 1), std::span(&result, 1));
    weights.push_back(read(s, w));
    losses.push_back(out);
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(losses[0], losses[1]);
  ASSERT_EQ(weights[1].size(), 2u);
  EXPECT_FLOAT_EQ(weights[1][0], 0.6f);  // 1 - 0.1 (1.5 + 2.5)
  EXPECT_FLOAT_EQ(weights[1][1], 1.4f);  // 2 - 0.1 (3 + 3)
  // step 0: mean(5, 10); step 1: w = {0.85, 1.7}, mean(5.1, 9.35)
  EXPECT_FLOAT_EQ(losses[1][0], 7.5f);
  EXPECT_FLOAT_EQ(losses[1][1], 7.5f);
  EXPECT_FLOAT_EQ(losses[1][2], 7.225f);
}

TEST(HostUpdate, RefusesWhatItCannotUpdateAndIgnoresInference) {
  {
    Linear grouped(4, {1.0f, 2.0f, 3.0f, 4.0f}, ir::ReplicaGrouping(4, 2, 1), ir::RetrievalMode::OnePerGroup);
    const ir::Error e = error_of([&] { Session s(grouped.g, options(true, 1)); });
    EXPECT_EQ(e.code(), ir::ErrorCode::Unsupported);
    EXPECT_THAT(e.what(), HasSubstr("weight 'w'"));
    EXPECT_THAT(e.what(), HasSubstr("grouped"));
    Session without(grouped.g, options(false, 1));  // the option is what refuses it
  }
  {
    Linear no_update(2, {1.0f, 2.0f}, std::nullopt, ir::RetrievalMode::OnePerGroup, /*update=*/false);
    no_update.g.add_d2h_stream("grad", no_update.grad);
    const ir::Error e = error_of([&] { Session s(no_update.g, options(true, 1)); });
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("no weight update"));
  }
  {  // a learning rate from a device tensor (lr_schedule): the host update has no copy of it
    Linear scheduled(2, {1.0f, 2.0f}, std::nullopt, ir::RetrievalMode::OnePerGroup, /*update=*/false);
    ir::Graph& g = scheduled.g;
    const ir::TensorId buf = g.add_variable("w.buf", ir::DType::Float32, {2}, f32({0.0f, 0.0f}));
    const ir::TensorId step = g.add_variable("w.step", ir::DType::Float32, {}, f32({0.0f}));
    ir::Attributes schedule;
    schedule.set("warmup_steps", int64_t{1});
    schedule.set("total_steps", int64_t{10});
    const ir::TensorId lr = g.add_op("lr_schedule", {step}, schedule).front();
    g.add_op("sgd_momentum_", {scheduled.w, scheduled.grad, buf, step, lr}, {});
    const ir::Error e = error_of([&] { Session s(g, options(true, 1)); });
    EXPECT_EQ(e.code(), ir::ErrorCode::Unsupported);
    EXPECT_THAT(e.what(), HasSubstr("input 4"));
    EXPECT_THAT(e.what(), HasSubstr("is neither the weight, its gradient nor optimizer state"));
    Session without(g, options(false, 1));  // on the devices it is fine
  }
  {  // no backward pass: not training, the option does nothing (no mean over the replicas)
    ir::Graph g;
    g.set_replication_factor(2);
    const ir::StreamId xs = g.add_h2d_stream("x", ir::DType::Float32, {1});
    const ir::TensorId w = g.add_variable("w", ir::DType::Float32, {1}, f32({0.0f}), std::nullopt,
                                          ir::RetrievalMode::AllReplicas);
    g.add_op("scaled_add_", {w, g.stream(xs).tensor}, {});
    Session s(g, options(true, 1));
    EXPECT_FALSE(s.training());
    std::vector<float> x = {1.0f, 2.0f};
    const HostArray in{xs, x.data(), ir::DType::Float32, {2, 1}};
    s.run(std::span(&in, 1), {});
    EXPECT_EQ(read(s, w), (std::vector<float>{1.0f, 2.0f}));
  }
}

TEST(HostUpdate, AFailingRunEndsPromptlyAndTheSessionTrainsOn) {
  const Mlp m = build_mlp(2, kBatch, {true, true});
  Session s(m.graph, options(true, 5));
  Batch bad = make_batch(s, m, 1);
  bad.y[static_cast<size_t>(kBatch)] = 9;  // step 0, replica 1, sample 0: out of range
  const auto start = std::chrono::steady_clock::now();
  const ir::Error e = error_of([&] { run_batch(s, m, bad); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // not the 30 s timeout
  EXPECT_EQ(e.code(), ir::ErrorCode::Runtime);
  EXPECT_THAT(e.what(), HasSubstr("label 9"));
  EXPECT_EQ(s.steps(), 0);
  run_seed(s, m, 2);
  Session fresh(m.graph, options(true, 5));
  run_seed(fresh, m, 2);
  EXPECT_EQ(max_abs_difference(read_all(s, m.params), read_all(fresh, m.params)), 0.0f);
  EXPECT_EQ(max_abs_difference(read_all(s, optimizer_state(m.graph)), read_all(fresh, optimizer_state(m.graph))), 0.0f);
  EXPECT_GT(max_abs_difference(read_all(s, m.params), initial_params(2)), 1e-3f);
}

TEST(HostUpdate, PipelinedStagesEqualTheDeviceUpdate) {
  // Two stages on two devices per replica: each stage posts its own weight's gradient.
  for (bool adam : {false, true}) {
    SCOPED_TRACE(adam ? "AdamW" : "SGD");
    const testing::TwoBlockModel m(adam);
    std::vector<std::vector<float>> results;
    for (bool host : {false, true}) {
      SessionOptions o = options(host, 2, 2);
      o.stages = {{{"B1"}, 0}, {{"B2"}, 1}};
      Session s(m.g, o);
      testing::train(s, m, 3);
      std::vector<float> w = read(s, m.w1);
      const std::vector<float> w2 = read(s, m.w2);
      w.insert(w.end(), w2.begin(), w2.end());
      results.push_back(w);
    }
    EXPECT_EQ(max_abs_difference(results[0], results[1]), 0.0f);
    std::vector<float> initial = testing::floats(m.g.tensor(m.w1).data);
    const std::vector<float> w2 = testing::floats(m.g.tensor(m.w2).data);
    initial.insert(initial.end(), w2.begin(), w2.end());
    EXPECT_GT(max_abs_difference(initial, results[1]), 1e-3f);
  }
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("plexus-host-update-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

TEST(HostUpdate, ResumingFromACheckpointEqualsTrainingThrough) {
  TempDir dir;
  const Mlp m = build_mlp(2, kBatch, {true, true});
  const std::vector<ir::TensorId> state = optimizer_state(m.graph);
  Session first(m.graph, options(true, 4));
  run_seed(first, m, 1);
  save_session(first, dir.file("half.ckpt"), {});
  Session resumed(m.graph, options(true, 4));
  EXPECT_EQ(load_session(resumed, dir.file("half.ckpt"), {}).step, 4);
  EXPECT_EQ(read_all(resumed, state), read_all(first, state));
  run_seed(resumed, m, 2);
  Session through(m.graph, options(true, 4));
  run_seed(through, m, 1);
  run_seed(through, m, 2);
  EXPECT_EQ(max_abs_difference(read_all(resumed, m.params), read_all(through, m.params)), 0.0f);
  EXPECT_EQ(max_abs_difference(read_all(resumed, state), read_all(through, state)), 0.0f);
  EXPECT_EQ(read(resumed, state[2]), std::vector<float>{8.0f});  // w0.step
  EXPECT_EQ(resumed.steps(), 8);
  EXPECT_GT(max_abs_difference(read_all(resumed, m.params), read_all(first, m.params)), 1e-4f);
}

}  // namespace
}  // namespace plexus::runtime
