#include "device_lists.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

namespace plexus::strategy_pipelined {

using strategy_common::DeviceLists;
using strategy_common::Outcome;
using strategy_common::Problem;

namespace {

// End times of every forward and backward, -1 while not run yet.
class EndTimes {
 public:
  EndTimes(int64_t stages, int64_t micro_batches)
      : micro_batches_(micro_batches), end_(static_cast<size_t>(2 * stages * micro_batches), -1) {}

  int64_t& at(int64_t stage, int64_t micro_batch, plx_step_kind kind) {
    return end_[static_cast<size_t>((2 * stage + (kind == PLX_STEP_BACKWARD ? 1 : 0)) * micro_batches_ + micro_batch)];
  }

 private:
  int64_t micro_batches_;
  std::vector<int64_t> end_;
};

// Start time of `step` given what ended, or -1 if something it waits for has not run. An
// update waits for its stage's backwards, which its stage order runs before it.
int64_t ready_at(const Problem& p, EndTimes& ends, const plx_schedule_step& step, int64_t stage_free) {
  int64_t start = stage_free;
  auto wait_for = [&](int64_t stage, int64_t micro_batch, plx_step_kind kind) {
    const int64_t end = ends.at(stage, micro_batch, kind);
    start = end < 0 || start < 0 ? -1 : std::max(start, end);
  };
  if (step.kind == PLX_STEP_FORWARD && step.stage > 0) wait_for(step.stage - 1, step.micro_batch, PLX_STEP_FORWARD);
  if (step.kind == PLX_STEP_BACKWARD) {
    wait_for(step.stage, step.micro_batch, PLX_STEP_FORWARD);
    if (step.stage + 1 < p.num_stages) wait_for(step.stage + 1, step.micro_batch, PLX_STEP_BACKWARD);
  }
  return start;
}

int kind_rank(plx_step_kind kind) { return kind == PLX_STEP_BACKWARD ? 0 : kind == PLX_STEP_FORWARD ? 1 : 2; }

}  // namespace

Outcome device_lists(const Problem& p, const StageOrders& orders, DeviceLists& out) {
  // Every stage on a device of its own: simulate, in rounds, until every order is done.
  EndTimes ends(p.num_stages, p.num_micro_batches);
  std::vector<std::vector<int64_t>> start(orders.size());
  std::vector<int64_t> stage_free(orders.size(), 0);
  size_t done = 0, total = 0;
  for (const auto& order : orders) total += order.size();
  while (done < total) {
    bool progressed = false;
    for (size_t s = 0; s < orders.size(); ++s) {
      while (start[s].size() < orders[s].size()) {
        const plx_schedule_step& step = orders[s][start[s].size()];
        const int64_t t = ready_at(p, ends, step, stage_free[s]);
        if (t < 0) break;
        start[s].push_back(t);
        stage_free[s] = t + 1;
        if (step.kind != PLX_STEP_UPDATE) ends.at(step.stage, step.micro_batch, step.kind) = t + 1;
        ++done;
        progressed = true;
      }
    }
    if (!progressed) return Outcome::internal("pipelined strategy: its stage orders wait on each other");
  }

  // Each device: its stages' steps by (time, backward first, older micro-batch, deeper stage).
  using Entry = std::tuple<int64_t, int, int64_t, int64_t, size_t>;  // ..., -stage, index in order
  DeviceLists lists(static_cast<size_t>(p.num_devices));
  for (int64_t d = 0; d < p.num_devices; ++d) {
    std::vector<Entry> entries;
    for (size_t s = 0; s < orders.size(); ++s) {
      if (p.stage_device[s] != d) continue;
      for (size_t i = 0; i < orders[s].size(); ++i) {
        const plx_schedule_step& step = orders[s][i];
        entries.emplace_back(start[s][i], kind_rank(step.kind), step.micro_batch, -step.stage, i);
      }
    }
    std::sort(entries.begin(), entries.end());
    for (const Entry& e : entries) {
      lists[static_cast<size_t>(d)].push_back(orders[static_cast<size_t>(-std::get<3>(e))][std::get<4>(e)]);
    }
  }
  out = std::move(lists);
  return Outcome::ok();
}

}  // namespace plexus::strategy_pipelined
