// The memory report of a session (core/session/memory_report.h, docs/profiling.md): its
// steps are the plan's bytes at each action, its largest step the planned peak, and its
// device figures the session's memory statistics.
#include "core/session/memory_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "core/compile/memory_kind.h"
#include "tests/runtime/two_block_model.h"

namespace plexus::session {
namespace {

using json = nlohmann::ordered_json;
using runtime::testing::TwoBlockModel;
using runtime::DeviceMemoryStats;

size_t step_total(const json& step) {
  size_t total = 0;
  for (const auto& [kind, bytes] : step.at("bytes").items()) total += bytes.get<size_t>();
  return total;
}

/// The plan's bytes on device d while stage s runs timeline position k: the persistent
/// block, the scratch area, the running slot at k, every other slot region at its peak.
size_t planned_bytes(const compile::Program& p, size_t d, int64_t s, int64_t k) {
  size_t bytes = p.devices[d].persistent_bytes + p.devices[d].scratch_bytes;
  for (size_t t = 0; t < p.stages.size(); ++t) {
    const compile::StagePlan& sp = p.stages[t];
    if (static_cast<size_t>(sp.device) != d) continue;
    const auto slots = static_cast<size_t>(sp.slots);
    bytes += static_cast<int64_t>(t) == s ? sp.slot_plan.live_bytes[static_cast<size_t>(k)] + (slots - 1) * sp.slot_plan.peak_live_bytes
                                          : slots * sp.slot_plan.peak_live_bytes;
  }
  return bytes;
}

/// The report's invariants on `s` (docs/profiling.md).
void expect_consistent(const Session& s, const json& r) {
  ASSERT_EQ(r.at("devices").size(), static_cast<size_t>(s.devices_per_replica()));
  for (size_t d = 0; d < r.at("devices").size(); ++d) {
    const json& dev = r["devices"][d];
    const DeviceMemoryStats m = s.memory_stats(d);
    size_t top = 0;
    for (const json& step : dev.at("steps")) {
      ASSERT_EQ(step.at("bytes").size(), compile::kNumMemoryKinds);
      EXPECT_EQ(step_total(step), planned_bytes(s.program(), d, step.at("stage"), step.at("position"))) << step.dump();
      top = std::max(top, step_total(step));
    }
    EXPECT_EQ(top, m.planned_peak_bytes) << "device " << d;
    EXPECT_EQ(dev.at("planned_peak_bytes"), m.planned_peak_bytes);
    EXPECT_EQ(step_total(dev["steps"][dev["peak"]["step"].get<size_t>()]), m.planned_peak_bytes);
    size_t peak = dev["peak"]["scratch_bytes"];
    for (const json& t : dev["peak"]["tensors"]) peak += t.at("bytes").get<size_t>();
    EXPECT_EQ(peak, m.planned_peak_bytes);
    EXPECT_EQ(dev["peak"]["bytes"], m.planned_peak_bytes);
    for (size_t replica_device = d; replica_device < s.num_devices(); replica_device += r["devices"].size()) {
      const DeviceMemoryStats other = s.memory_stats(replica_device);
      EXPECT_EQ(dev.at("arena_bytes"), other.arena_bytes);
      EXPECT_EQ(dev.at("variable_bytes"), other.variable_bytes);
      EXPECT_EQ(dev.at("remote_buffer_bytes"), other.remote_buffer_bytes);
      EXPECT_EQ(dev.at("offloaded_bytes"), other.offloaded_bytes);
    }
  }
}

SessionOptions two_stages() {
  SessionOptions o;
  o.stages = {{{"B1"}, 0}, {{"B2"}, 1}};
  o.execution_strategy = "pipelined";
  o.gradient_accumulation = 4;
  return o;
}

TEST(MemoryReport, APipelineHasEachDevicesOwnSteps) {
  const TwoBlockModel m(true);
  const Session s(m.g, two_stages());
  const json r = memory_report(s);
  EXPECT_EQ(r.at("schema"), "plexus.memory_report");
  EXPECT_EQ(r.at("version"), kMemoryReportVersion);
  EXPECT_EQ(r.at("replication_factor"), 1);
  expect_consistent(s, r);
  for (size_t d = 0; d < 2; ++d) {
    const json& dev = r["devices"][d];
    EXPECT_EQ(dev.at("device"), d);
    EXPECT_EQ(dev.at("stages"), json::array({d}));
    size_t forward = 0, backward = 0, update = 0;
    for (const json& step : dev["steps"]) {
      EXPECT_EQ(step.at("stage"), d);  // only the stage the device holds
      const std::string phase = step.at("phase");
      (phase == "forward" ? forward : phase == "backward" ? backward : update) += 1;
    }
    const compile::StagePlan& sp = s.program().stages[d];
    EXPECT_EQ(forward, 4 * sp.actions[0].size());  // 4 micro-batches
    EXPECT_EQ(backward, 4 * sp.actions[1].size());
    EXPECT_EQ(update, sp.actions[2].size());
    EXPECT_EQ(dev["steps"][0].at("label").get<std::string>().rfind("fwd stage " + std::to_string(d) + " mb 0: ", 0), 0u);
  }
  // w1 on device 0, w2 on device 1, with their AdamW state.
  const json& vars1 = r["devices"][1]["variables"];
  ASSERT_EQ(vars1.size(), 4u);  // w2, w2.m, w2.v, w2.step
  EXPECT_EQ(vars1[0].at("name"), "w2");
  EXPECT_EQ(vars1[0].at("kind"), "variables");
  EXPECT_EQ(vars1[0].at("device_bytes"), 40);
  EXPECT_EQ(vars1[0].at("shard_over"), 1);
  EXPECT_EQ(vars1[1].at("kind"), "optimizer_state");
}

TEST(MemoryReport, OffloadedOptimizerStateIsHostBytesNotDeviceBytes) {
  const TwoBlockModel m(true);
  SessionOptions o = two_stages();
  o.offload_optimizer_state = true;
  const Session s(m.g, o);
  const json r = memory_report(s);
  expect_consistent(s, r);
  const json& dev = r["devices"][1];
  EXPECT_EQ(dev.at("offloaded_bytes"), 40u + 40u + 4u);  // w2.m, w2.v, w2.step
  const json& state = dev["variables"][1];
  EXPECT_EQ(state.at("device_bytes"), 0);
  EXPECT_EQ(state.at("remote_bytes"), 40);
}

}  // namespace
}  // namespace plexus::session
