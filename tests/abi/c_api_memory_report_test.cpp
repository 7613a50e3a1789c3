// plx_session_get_memory_report (plexus.h, docs/profiling.md): seed 000's MNIST MLP at
// R=2, with its weights replicated and replica-sharded (RTS), reports each device's bytes
// as plx_session_get_memory_stats does, the sharded weights at half their replicated
// bytes; bad calls are refused by argument.
#include <plexus/plexus.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "samples/common/mnist_mlp.h"
#include "tests/abi/c_api_test_util.h"

namespace {

using capi_test::HasSubstr;
using nlohmann::json;
using samples::kClasses, samples::kHidden, samples::kPixels;

constexpr int64_t kReplicas = 2;
constexpr int64_t kBatch = 4;

/// Seed 000's MLP trained by SGD on replica-mean gradients; with `rts`, W0 a replica-sharded
/// variable and W1 a remote replica-sharded one (samples/mnist_rts builds it the same way).
plx::Ir mnist_mlp(bool rts) {
  plx::Ir ir(kReplicas);
  const samples::MlpWeights w = samples::MlpWeights::random(1);
  std::vector<plx::Tensor> vars(4), shards(4);  // W0, b0, W1, b1; shards: 0 where not sharded
  std::optional<plx::RemoteBuffer> buffer;
  if (rts) {
    vars[0] = shards[0] = ir.replica_sharded_variable<float>("W0", {kPixels, kHidden}, w.w0).first;
    buffer = ir.remote_buffer(PLX_DTYPE_FLOAT32, {kHidden * kClasses / kReplicas}, 1);
    vars[2] = ir.remote_replica_sharded_variable<float>("W1", {kHidden, kClasses}, w.w1, *buffer, 0);
    shards[2] = ir.remote_load(*buffer, 0);
  } else {
    vars[0] = ir.variable<float>("W0", {kPixels, kHidden}, w.w0);
    vars[2] = ir.variable<float>("W1", {kHidden, kClasses}, w.w1);
  }
  vars[1] = ir.variable<float>("b0", {kHidden}, w.b0);
  vars[3] = ir.variable<float>("b1", {kClasses}, w.b1);
  std::vector<plx::Tensor> full(4);
  for (size_t i = 0; i < 4; ++i) full[i] = shards[i].id != 0 ? ir.all_gather(shards[i]) : vars[i];
  auto [images_stream, images] = ir.h2d_stream("images", PLX_DTYPE_FLOAT32, {kBatch, 28, 28});
  auto [labels_stream, labels] = ir.h2d_stream("labels", PLX_DTYPE_INT32, {kBatch});
  const samples::MlpParams p{full[0], full[1], full[2], full[3]};
  const plx::Tensor loss = ir.softmax_cross_entropy(samples::mlp_forward(ir, images, kBatch, p), labels);
  ir.d2h_stream("loss", loss);
  const std::vector<plx::Tensor> grads = ir.autodiff(loss, full);
  plx::InSequence in_sequence(ir);  // W1's update, then its remote_store
  for (size_t i = 0; i < grads.size(); ++i) {
    if (shards[i].id != 0) {
      const plx::Tensor updated = ir.scaled_add_(shards[i], ir.reduce_scatter(grads[i], "mean"), 1.0, -0.05);
      if (i == 2) ir.remote_store(*buffer, 0, updated);
    } else {
      ir.scaled_add_(vars[i], ir.all_reduce_(grads[i], "mean"), 1.0, -0.05);
    }
  }
  return ir;
}

json report_of(const plx::Session& s) { return json::parse(s.memory_report()); }

size_t step_total(const json& step) {
  size_t total = 0;
  for (const auto& [kind, bytes] : step.at("bytes").items()) total += bytes.get<size_t>();
  return total;
}

/// The report's figures against plx_session_get_memory_stats of every device.
void expect_matches_memory_stats(const plx::Session& s, const json& r) {
  ASSERT_EQ(r.at("devices").size(), 1u);
  const json& dev = r["devices"][0];
  size_t top = 0;
  for (const json& step : dev.at("steps")) top = std::max(top, step_total(step));
  ASSERT_EQ(s.num_devices(), static_cast<size_t>(kReplicas));
  for (size_t d = 0; d < s.num_devices(); ++d) {
    const plx_memory_stats m = s.memory_stats(d);
    EXPECT_EQ(top, m.planned_peak_bytes) << "device " << d;
    EXPECT_EQ(dev.at("planned_peak_bytes"), m.planned_peak_bytes);
    EXPECT_EQ(dev.at("arena_bytes"), m.arena_bytes);
    EXPECT_EQ(dev.at("variable_bytes"), m.variable_bytes);
    EXPECT_EQ(dev.at("remote_buffer_bytes"), m.remote_buffer_bytes);
    EXPECT_EQ(dev.at("offloaded_bytes"), m.offloaded_bytes);
  }
}

json variable(const json& r, const std::string& name) {
  for (const json& v : r["devices"][0]["variables"]) {
    if (v.at("name") == name) return v;
  }
  ADD_FAILURE() << "no variable " << name;
  return json::object();
}

TEST(CApiMemoryReport, ReplicatedAndShardedMlpMatchTheMemoryStats) {
  const plx::Session replicated(mnist_mlp(false));
  const plx::Session sharded(mnist_mlp(true));
  const json r = report_of(replicated), rts = report_of(sharded);
  EXPECT_EQ(r.at("schema"), "plexus.memory_report");
  EXPECT_EQ(r.at("version"), 1);
  EXPECT_EQ(r.at("replication_factor"), kReplicas);
  expect_matches_memory_stats(replicated, r);
  expect_matches_memory_stats(sharded, rts);
  // RTS: W0's shard on the device and W1's in the remote buffer, each half of the replicated bytes.
  const size_t w0 = kPixels * kHidden * 4, w1 = kHidden * kClasses * 4;
  EXPECT_EQ(variable(r, "W0").at("device_bytes"), w0);
  EXPECT_EQ(variable(r, "W0").at("shard_over"), 1);
  EXPECT_EQ(variable(rts, "W0").at("device_bytes"), w0 / 2);
  EXPECT_EQ(variable(rts, "W0").at("full_bytes"), w0);
  EXPECT_EQ(variable(rts, "W0").at("shard_over"), kReplicas);
  EXPECT_EQ(variable(rts, "W1").at("device_bytes"), 0);
  EXPECT_EQ(variable(rts, "W1").at("remote_bytes"), w1 / 2);
  EXPECT_EQ(variable(rts, "W1").at("shard_over"), kReplicas);
  EXPECT_EQ(rts["devices"][0].at("remote_buffer_bytes"), w1 / 2);
  EXPECT_EQ(r["devices"][0].at("remote_buffer_bytes"), 0);
  // The variables kind holds the sharded bytes: less than the replicated program's.
  const auto variables_at_peak = [](const json& rep) {
    const json& dev = rep["devices"][0];
    return dev["steps"][dev["peak"]["step"].get<size_t>()]["bytes"]["variables"].get<size_t>();
  };
  EXPECT_EQ(variables_at_peak(r) - variables_at_peak(rts), w0 / 2 + w1);
}

TEST(CApiMemoryReport, TheBufferProtocolAndBadArguments) {
  const plx::Session s(mnist_mlp(false));
  size_t size = 0;
  EXPECT_EQ(plx_session_get_memory_report(s.get(), nullptr, 0, &size), PLX_ERR_BUFFER_TOO_SMALL);
  ASSERT_GT(size, 1u);
  std::string small(16, 'x');
  size_t needed = 0;
  EXPECT_PLX_ERROR(plx_session_get_memory_report(s.get(), small.data(), small.size(), &needed),
                   PLX_ERR_BUFFER_TOO_SMALL, std::to_string(size));
  EXPECT_EQ(needed, size);
  EXPECT_EQ(small, std::string(16, 'x'));  // untouched
  std::string text(size, '\0');
  ASSERT_PLX_OK(plx_session_get_memory_report(s.get(), text.data(), text.size(), nullptr));
  EXPECT_EQ(text.size(), std::strlen(text.c_str()) + 1);
  EXPECT_EQ(json::parse(text.c_str()).at("schema"), "plexus.memory_report");
  EXPECT_PLX_ERROR(plx_session_get_memory_report(nullptr, nullptr, 0, &size), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_get_memory_report", "session");
  EXPECT_PLX_ERROR(plx_session_get_memory_report(s.get(), nullptr, 8, &size), PLX_ERR_INVALID_ARGUMENT,
                   "plx_session_get_memory_report", "buffer");
}

}  // namespace
