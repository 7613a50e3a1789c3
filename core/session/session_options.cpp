#include "core/session/session_options.h"

#include "core/ir/error.h"
#include "core/runtime/workers.h"

namespace plexus::session {

using ir::ErrorCode;

namespace {

void require_positive(const char* name, int64_t value) {
  if (value < 1) ir::fail(ErrorCode::InvalidArgument, std::string("session option ") + name + " is " + std::to_string(value) + ", must be >= 1");
}

void check_workers(const SessionOptions& o) {
  if (o.num_workers < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option num_workers is " + std::to_string(o.num_workers) +
                                             ", must be >= 1, or 0 for the launcher's environment");
  }
  if (o.num_workers > 0 && (o.worker_index < 0 || o.worker_index >= o.num_workers)) {
    ir::fail(ErrorCode::InvalidArgument, "session option worker_index is " + std::to_string(o.worker_index) +
                                             ", must be in [0, num_workers = " + std::to_string(o.num_workers) + ")");
  }
}

void check_output_mode(const SessionOptions& o) {
  const auto mode = static_cast<int32_t>(o.output_mode);
  if (mode < 0 || mode > static_cast<int32_t>(OutputMode::Sum)) {
    ir::fail(ErrorCode::InvalidArgument, "session option output_mode is " + std::to_string(mode) +
                                             ", must be all (0), final (1), every_n (2) or sum (3)");
  }
  if (o.output_mode == OutputMode::EveryN && o.device_iterations % o.output_return_period != 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option output_return_period is " +
                                             std::to_string(o.output_return_period) +
                                             ", must divide device_iterations (" + std::to_string(o.device_iterations) +
                                             ") for output mode every_n");
  }
}

}  // namespace

void check_session_options(const SessionOptions& o) {
  require_positive("device_iterations", o.device_iterations);
  require_positive("gradient_accumulation", o.gradient_accumulation);
  require_positive("collective_timeout_ms", o.collective_timeout_ms);
  require_positive("output_return_period", o.output_return_period);
  require_positive("io_threads", o.io_threads);
  if (o.prefetch_depth < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option prefetch_depth is " + std::to_string(o.prefetch_depth) +
                                             ", must be >= 0");
  }
  check_workers(o);
  if (o.threads_per_device < 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option threads_per_device is " +
                                             std::to_string(o.threads_per_device) + ", must be >= 0");
  }
  check_output_mode(o);
}

SessionOptions resolve_workers(SessionOptions options) {
  if (options.num_workers == 0) {
    const runtime::WorkerPlace place = runtime::workers_from_environment();
    options.num_workers = place.count;
    options.worker_index = place.index;
  }
  return options;
}

runtime::HostedReplicas hosted_by_worker(const SessionOptions& o, int64_t replication_factor) {
  if (replication_factor % o.num_workers != 0) {
    ir::fail(ErrorCode::InvalidArgument, "session option num_workers is " + std::to_string(o.num_workers) +
                                             ", which does not divide the replication factor " +
                                             std::to_string(replication_factor) +
                                             " (every worker hosts the same number of replicas)");
  }
  const int64_t count = replication_factor / o.num_workers;
  return {o.worker_index * count, count};
}

}  // namespace plexus::session
