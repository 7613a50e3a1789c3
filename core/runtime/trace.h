// Profiling of runs (seed 003's execution profiles): per device, time spans of its steps
// (forward / backward / update of a stage on a micro-batch) and, inside them, of transfers
// (stream and stage-to-stage copies) and collectives; written as Chrome Trace Event JSON,
// one track per device, which Perfetto's UI and chrome://tracing load.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace plexus::runtime {

enum class SpanKind : uint8_t { Forward, Backward, Update, Transfer, Collective };

struct Span {
  SpanKind kind;
  int32_t stage;
  int32_t micro_batch;  ///< -1 for updates
  int32_t iteration;
  int32_t op;           ///< collectives: the op; transfers: the action's index; else -1
  int64_t start_ns, end_ns;
};

using TraceClock = std::chrono::steady_clock;

inline int64_t trace_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(TraceClock::now().time_since_epoch()).count();
}

/// What one run recorded.
struct RunTrace {
  int64_t start_ns = 0, end_ns = 0;
  int64_t devices_per_replica = 1;
  std::vector<std::vector<Span>> devices;  ///< index replica * devices_per_replica + device
  std::vector<std::string> stage_names;
  std::vector<std::string> op_names;       ///< for collective spans

  /// Fraction of the run each device spent in steps.
  std::vector<double> busy_fractions() const;
  /// 1 - the mean busy fraction: the share of device time idle (the measured bubble).
  double bubble_fraction() const;
  /// Chrome Trace Event JSON ("traceEvents" with one "X" event per span, "M" events naming
  /// processes (replicas) and threads (devices), and "otherData" with busy fractions).
  std::string to_json() const;
};

}  // namespace plexus::runtime
