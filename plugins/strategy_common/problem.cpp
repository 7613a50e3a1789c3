#include "strategy_common/problem.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace plexus::strategy_common {

namespace {

// Large enough for any real pipeline, small enough that S * (2M + 1) cannot overflow.
constexpr int64_t kMaxCount = int64_t{1} << 24;

Outcome check_count(const char* field, int64_t value) {
  if (value < 1 || value > kMaxCount) {
    return Outcome::invalid(std::string(field) + " is " + std::to_string(value) + ", must be in [1, " +
                            std::to_string(kMaxCount) + "]");
  }
  return Outcome::ok();
}

}  // namespace

size_t Problem::steps_on_device(int64_t d) const {
  const auto stages = static_cast<size_t>(std::count(stage_device.begin(), stage_device.end(), d));
  const auto m = static_cast<size_t>(num_micro_batches);
  return stages * (training ? 2 * m + 1 : m);
}

Outcome read_problem(const plx_schedule_problem* problem, plx_schedule_step* const* device_steps, size_t capacity,
                     const size_t* device_step_counts, Problem& out) {
  if (problem == nullptr) return Outcome::invalid("problem is NULL");
  if (device_steps == nullptr || device_step_counts == nullptr) {
    return Outcome::invalid("device_steps or device_step_counts is NULL");
  }
  if (problem->struct_size < offsetof(plx_schedule_problem, options) + sizeof(problem->options)) {
    return Outcome::invalid("problem struct_size " + std::to_string(problem->struct_size) +
                            " is smaller than ABI version 1's plx_schedule_problem");
  }
  for (Outcome o : {check_count("num_stages", problem->num_stages), check_count("num_devices", problem->num_devices),
                    check_count("num_micro_batches", problem->num_micro_batches)}) {
    if (!o.is_ok()) return o;
  }
  if (problem->stage_device == nullptr) return Outcome::invalid("stage_device is NULL");

  Problem p;
  p.num_stages = problem->num_stages;
  p.num_devices = problem->num_devices;
  p.stage_device.assign(problem->stage_device, problem->stage_device + problem->num_stages);
  p.num_micro_batches = problem->num_micro_batches;
  p.training = problem->training != 0;
  p.options = problem->options != nullptr ? problem->options : "";
  for (int64_t s = 0; s < p.num_stages; ++s) {
    const int64_t d = p.stage_device[static_cast<size_t>(s)];
    if (d < 0 || d >= p.num_devices) {
      return Outcome::invalid("stage " + std::to_string(s) + " is on device " + std::to_string(d) + ", outside [0, " +
                              std::to_string(p.num_devices) + ")");
    }
  }
  for (int64_t d = 0; d < p.num_devices; ++d) {
    const size_t needed = p.steps_on_device(d);
    if (needed > 0 && device_steps[d] == nullptr) {
      return Outcome::invalid("device_steps[" + std::to_string(d) + "] is NULL");
    }
    if (needed > capacity) {
      return Outcome::invalid("device " + std::to_string(d) + " runs " + std::to_string(needed) +
                              " steps, more than the capacity " + std::to_string(capacity));
    }
  }
  out = std::move(p);
  return Outcome::ok();
}

}  // namespace plexus::strategy_common
