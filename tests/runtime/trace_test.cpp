// Run traces (core/runtime/trace.cpp): busy and bubble fractions, and the Chrome Trace
// Event JSON.
#include "core/runtime/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace plexus::runtime {
namespace {

// Two devices of one replica over 1000 ns: device 0 busy 600 ns (a forward and an
// update), device 1 busy 200 ns (a backward), with a collective and a transfer that do
// not count as busy.
RunTrace two_devices() {
  RunTrace t;
  t.start_ns = 1000;
  t.end_ns = 2000;
  t.devices_per_replica = 2;
  t.stage_names = {"embed", "head"};
  t.op_names = {"matmul", "all_reduce"};
  t.devices = {{{SpanKind::Forward, 0, 3, 0, -1, 1000, 1400},
                {SpanKind::Collective, 0, 3, 0, 1, 1100, 1200},
                {SpanKind::Update, 0, -1, 0, -1, 1800, 2000}},
               {{SpanKind::Transfer, 1, 3, 0, -1, 1400, 1500}, {SpanKind::Backward, 1, 3, 0, -1, 1500, 1700}}};
  return t;
}

TEST(RunTrace, BusyFractionsCountStepsOnly) {
  const RunTrace t = two_devices();
  const std::vector<double> busy = t.busy_fractions();
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_DOUBLE_EQ(busy[0], 0.6);
  EXPECT_DOUBLE_EQ(busy[1], 0.2);
  EXPECT_DOUBLE_EQ(t.bubble_fraction(), 0.6);
  EXPECT_DOUBLE_EQ(RunTrace{}.bubble_fraction(), 0.0);
}

TEST(RunTrace, JsonHasOneEventPerSpanNamedByStageAndOp) {
  const nlohmann::json j = nlohmann::json::parse(two_devices().to_json());
  const auto& events = j["traceEvents"];
  ASSERT_EQ(events.size(), 4u + 5u);  // 2 metadata events per device, 5 spans
  std::vector<std::string> names;
  for (const auto& e : events) {
    if (e["ph"] == "X") names.push_back(e["name"]);
  }
  EXPECT_THAT(names, ::testing::ElementsAre("F embed mb3", "all_reduce", "U embed", "transfer mb3", "B head mb3"));
  EXPECT_EQ(events[2]["ts"], 0.0);
  EXPECT_EQ(events[2]["dur"], 0.4);
  EXPECT_EQ(events[2]["cat"], "forward");
  EXPECT_EQ(events[6]["tid"], 1);
  EXPECT_DOUBLE_EQ(j["otherData"]["run_seconds"].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(j["otherData"]["bubble_fraction"].get<double>(), 0.6);
}

}  // namespace
}  // namespace plexus::runtime
