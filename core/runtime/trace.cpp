#include "core/runtime/trace.h"

#include <nlohmann/json.hpp>

#include <numeric>

namespace plexus::runtime {

namespace {

const char* category(SpanKind k) {
  switch (k) {
    case SpanKind::Forward:
      return "forward";
    case SpanKind::Backward:
      return "backward";
    case SpanKind::Update:
      return "update";
    case SpanKind::Transfer:
      return "transfer";
    case SpanKind::Collective:
      return "collective";
  }
  return "other";
}

bool is_step(SpanKind k) { return k == SpanKind::Forward || k == SpanKind::Backward || k == SpanKind::Update; }

std::string span_name(const RunTrace& t, const Span& s) {
  const std::string stage = s.stage >= 0 && static_cast<size_t>(s.stage) < t.stage_names.size()
                                ? t.stage_names[static_cast<size_t>(s.stage)]
                                : std::to_string(s.stage);
  switch (s.kind) {
    case SpanKind::Forward:
      return "F " + stage + " mb" + std::to_string(s.micro_batch);
    case SpanKind::Backward:
      return "B " + stage + " mb" + std::to_string(s.micro_batch);
    case SpanKind::Update:
      return "U " + stage;
    case SpanKind::Transfer:
      return "transfer mb" + std::to_string(s.micro_batch);
    case SpanKind::Collective:
      return s.op >= 0 && static_cast<size_t>(s.op) < t.op_names.size() ? t.op_names[static_cast<size_t>(s.op)]
                                                                          : "collective";
  }
  return "span";
}

}  // namespace

std::vector<double> RunTrace::busy_fractions() const {
  std::vector<double> out;
  const double run = static_cast<double>(std::max<int64_t>(end_ns - start_ns, 1));
  for (const auto& spans : devices) {
    int64_t busy = 0;
    for (const Span& s : spans) {
      if (is_step(s.kind)) busy += s.end_ns - s.start_ns;
    }
    out.push_back(static_cast<double>(busy) / run);
  }
  return out;
}

double RunTrace::bubble_fraction() const {
  const std::vector<double> busy = busy_fractions();
  if (busy.empty()) return 0.0;
  return 1.0 - std::accumulate(busy.begin(), busy.end(), 0.0) / static_cast<double>(busy.size());
}

std::string RunTrace::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  for (size_t d = 0; d < devices.size(); ++d) {
    const auto replica = static_cast<int64_t>(d) / devices_per_replica;
    const auto device = static_cast<int64_t>(d) % devices_per_replica;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", replica}, {"tid", device},
                      {"args", {{"name", "replica " + std::to_string(replica)}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", replica}, {"tid", device},
                      {"args", {{"name", "device " + std::to_string(device)}}}});
    for (const Span& s : devices[d]) {
      events.push_back({{"name", span_name(*this, s)},
                        {"cat", category(s.kind)},
                        {"ph", "X"},
                        {"pid", replica},
                        {"tid", device},
                        {"ts", static_cast<double>(s.start_ns - start_ns) / 1000.0},
                        {"dur", static_cast<double>(s.end_ns - s.start_ns) / 1000.0},
                        {"args", {{"stage", s.stage}, {"micro_batch", s.micro_batch}, {"iteration", s.iteration}}}});
    }
  }
  return nlohmann::json{{"traceEvents", events},
                        {"displayTimeUnit", "ms"},
                        {"otherData",
                         {{"run_seconds", static_cast<double>(end_ns - start_ns) * 1e-9},
                          {"busy_fraction", busy_fractions()},
                          {"bubble_fraction", bubble_fraction()}}}}
      .dump();
}

}  // namespace plexus::runtime
