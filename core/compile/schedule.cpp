#include "core/compile/schedule.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/ir/error.h"

namespace plexus::compile {

namespace {

using Key = std::tuple<int64_t, int64_t, int32_t>;  // stage, micro-batch, kind
Key key(const Step& s) { return {s.stage, s.micro_batch, static_cast<int32_t>(s.kind)}; }

[[noreturn]] void broken(const std::string& source, const std::string& rule, const std::string& what) {
  ir::fail(ir::ErrorCode::Plugin, "schedule from '" + source + "' breaks rule '" + rule + "': " + what);
}

// The steps a schedule must contain, each exactly once.
std::set<Key> required_steps(const ScheduleProblem& p) {
  std::set<Key> steps;
  for (int64_t s = 0; s < p.num_stages; ++s) {
    for (int64_t m = 0; m < p.num_micro_batches; ++m) {
      steps.insert({s, m, static_cast<int32_t>(StepKind::Forward)});
      if (p.training) steps.insert({s, m, static_cast<int32_t>(StepKind::Backward)});
    }
    if (p.training) steps.insert({s, -1, static_cast<int32_t>(StepKind::Update)});
  }
  return steps;
}

void check_coverage(const ScheduleProblem& p, const Schedule& schedule, const std::string& source) {
  if (static_cast<int64_t>(schedule.size()) != p.num_devices) {
    broken(source, "coverage", std::to_string(schedule.size()) + " device lists for " + std::to_string(p.num_devices) +
                                   " devices");
  }
  std::set<Key> remaining = required_steps(p);
  for (size_t d = 0; d < schedule.size(); ++d) {
    for (const Step& step : schedule[d]) {
      if (step.stage < 0 || step.stage >= p.num_stages) broken(source, "coverage", step_name(step) + " names no stage");
      if (p.stage_device[static_cast<size_t>(step.stage)] != static_cast<int64_t>(d)) {
        broken(source, "coverage", step_name(step) + " is listed on device " + std::to_string(d) + " but stage " +
                                       std::to_string(step.stage) + " runs on device " +
                                       std::to_string(p.stage_device[static_cast<size_t>(step.stage)]));
      }
      if (remaining.erase(key(step)) == 0) {
        broken(source, "coverage", step_name(step) + " is " +
                                       (required_steps(p).count(key(step)) ? "listed twice" : "not a step of this program"));
      }
    }
  }
  if (!remaining.empty()) {
    const auto [s, m, k] = *remaining.begin();
    broken(source, "coverage", step_name(Step{s, m, static_cast<StepKind>(k)}) + " is missing");
  }
}

void check_order(const Schedule& schedule, const std::string& source) {
  for (const std::vector<Step>& steps : schedule) {
    std::map<std::pair<int64_t, int32_t>, int64_t> last;  // (stage, kind) -> last micro-batch
    for (const Step& step : steps) {
      if (step.kind == StepKind::Update) continue;
      auto [it, fresh] = last.emplace(std::pair{step.stage, static_cast<int32_t>(step.kind)}, step.micro_batch);
      if (!fresh) {
        if (step.micro_batch < it->second) {
          broken(source, "order", step_name(step) + " comes after micro-batch " + std::to_string(it->second));
        }
        it->second = step.micro_batch;
      }
    }
  }
}

// Steps `step` waits for (rules forward, backward, update).
std::vector<Key> dependencies(const ScheduleProblem& p, const Step& step) {
  std::vector<Key> deps;
  const auto F = static_cast<int32_t>(StepKind::Forward), B = static_cast<int32_t>(StepKind::Backward);
  switch (step.kind) {
    case StepKind::Forward:
      if (step.stage > 0) deps.emplace_back(step.stage - 1, step.micro_batch, F);
      break;
    case StepKind::Backward:
      deps.emplace_back(step.stage, step.micro_batch, F);
      if (step.stage + 1 < p.num_stages) deps.emplace_back(step.stage + 1, step.micro_batch, B);
      break;
    case StepKind::Update:
      for (int64_t m = 0; m < p.num_micro_batches; ++m) deps.emplace_back(step.stage, m, B);
      break;
  }
  return deps;
}

const char* rule_of(StepKind kind) {
  switch (kind) {
    case StepKind::Forward:
      return "forward";
    case StepKind::Backward:
      return "backward";
    case StepKind::Update:
      return "update";
  }
  return "coverage";
}

// Rules forward, backward and update where they can be decided from one list: a step listed
// after one it waits for on the same device can never start. (Waits across devices are
// legal; a cycle of them is caught by the simulation, rule 'progress'.)
void check_dependencies_on_device(const ScheduleProblem& p, const Schedule& schedule, const std::string& source) {
  for (size_t d = 0; d < schedule.size(); ++d) {
    std::map<Key, size_t> position;
    for (size_t i = 0; i < schedule[d].size(); ++i) position.emplace(key(schedule[d][i]), i);
    for (size_t i = 0; i < schedule[d].size(); ++i) {
      const Step& step = schedule[d][i];
      for (const Key& dep : dependencies(p, step)) {
        auto it = position.find(dep);
        if (it == position.end() || it->second < i) continue;
        const auto [s, m, k] = dep;
        broken(source, rule_of(step.kind), step_name(step) + " is listed before " +
                                               step_name(Step{s, m, static_cast<StepKind>(k)}) +
                                               ", which it waits for, on device " + std::to_string(d));
      }
    }
  }
}

}  // namespace

void check_problem(const ScheduleProblem& p) {
  auto bad = [](const std::string& what) { ir::fail(ir::ErrorCode::InvalidArgument, "schedule problem: " + what); };
  if (p.num_stages < 1) bad("num_stages is " + std::to_string(p.num_stages) + ", must be >= 1");
  if (p.num_devices < 1) bad("num_devices is " + std::to_string(p.num_devices) + ", must be >= 1");
  if (p.num_micro_batches < 1) bad("num_micro_batches is " + std::to_string(p.num_micro_batches) + ", must be >= 1");
  if (static_cast<int64_t>(p.stage_device.size()) != p.num_stages) {
    bad("stage_device has " + std::to_string(p.stage_device.size()) + " entries for " + std::to_string(p.num_stages) +
        " stages");
  }
  for (size_t s = 0; s < p.stage_device.size(); ++s) {
    if (p.stage_device[s] < 0 || p.stage_device[s] >= p.num_devices) {
      bad("stage " + std::to_string(s) + " is on device " + std::to_string(p.stage_device[s]) + ", outside [0, " +
          std::to_string(p.num_devices) + ")");
    }
  }
}

std::string step_name(const Step& s) {
  switch (s.kind) {
    case StepKind::Forward:
      return "F(" + std::to_string(s.stage) + "," + std::to_string(s.micro_batch) + ")";
    case StepKind::Backward:
      return "B(" + std::to_string(s.stage) + "," + std::to_string(s.micro_batch) + ")";
    case StepKind::Update:
      return "U(" + std::to_string(s.stage) + ")";
  }
  return "step of unknown kind " + std::to_string(static_cast<int32_t>(s.kind)) + " (stage " + std::to_string(s.stage) +
         ", micro-batch " + std::to_string(s.micro_batch) + ")";
}

Schedule trivial_schedule(const ScheduleProblem& p) {
  check_problem(p);
  Schedule schedule(static_cast<size_t>(p.num_devices));
  auto add = [&](Step step) { schedule[static_cast<size_t>(p.stage_device[static_cast<size_t>(step.stage)])].push_back(step); };
  for (int64_t m = 0; m < p.num_micro_batches; ++m) {
    for (int64_t s = 0; s < p.num_stages; ++s) add({s, m, StepKind::Forward});
    if (!p.training) continue;
    for (int64_t s = p.num_stages; s-- > 0;) add({s, m, StepKind::Backward});
  }
  if (p.training) {
    for (int64_t s = 0; s < p.num_stages; ++s) add({s, -1, StepKind::Update});
  }
  return schedule;
}

ScheduleAnalysis check_schedule(const ScheduleProblem& p, const Schedule& schedule, const std::string& source) {
  check_problem(p);
  check_coverage(p, schedule, source);
  check_order(schedule, source);
  check_dependencies_on_device(p, schedule, source);

  // Simulate: every device runs its list in order; a step starts once its dependencies
  // ended; one time unit per step. No progress in a round means a device waits forever.
  ScheduleAnalysis a;
  a.slots.assign(static_cast<size_t>(p.num_stages), p.training ? 0 : 1);
  a.start_time.resize(schedule.size());
  std::map<Key, int64_t> end_time;
  std::vector<size_t> next(schedule.size(), 0);
  std::vector<int64_t> device_free(schedule.size(), 0);
  std::vector<int64_t> in_flight(static_cast<size_t>(p.num_stages), 0);
  size_t done = 0, total = 0;
  for (const auto& steps : schedule) total += steps.size();
  while (done < total) {
    bool progressed = false;
    for (size_t d = 0; d < schedule.size(); ++d) {
      while (next[d] < schedule[d].size()) {
        const Step& step = schedule[d][next[d]];
        int64_t start = device_free[d];
        bool ready = true;
        for (const Key& dep : dependencies(p, step)) {
          auto it = end_time.find(dep);
          if (it == end_time.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready) break;
        a.start_time[d].push_back(start);
        end_time[key(step)] = device_free[d] = start + 1;
        a.makespan = std::max(a.makespan, start + 1);
        if (p.training && step.kind != StepKind::Update) {
          int64_t& flying = in_flight[static_cast<size_t>(step.stage)];
          flying += step.kind == StepKind::Forward ? 1 : -1;
          a.slots[static_cast<size_t>(step.stage)] = std::max(a.slots[static_cast<size_t>(step.stage)], flying);
        }
        ++next[d];
        ++done;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string blocked;
      for (size_t d = 0; d < schedule.size(); ++d) {
        if (next[d] < schedule[d].size()) {
          blocked += (blocked.empty() ? "" : ", ") + std::string("device ") + std::to_string(d) + " at " +
                     step_name(schedule[d][next[d]]);
        }
      }
      broken(source, "progress", "every device waits forever (" + blocked + ")");
    }
  }
  return a;
}

}  // namespace plexus::compile
