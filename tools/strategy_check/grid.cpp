#include "tools/strategy_check/grid.h"

#include <algorithm>
#include <set>
#include <utility>

namespace plexus::tools::strategy_check {

namespace {

using Placement = std::pair<std::string, std::vector<int64_t>>;  // name, stage_device

// Sorted, without duplicates, without values outside [1, max].
std::vector<int64_t> in_range(std::vector<int64_t> values, int64_t max) {
  std::erase_if(values, [max](int64_t v) { return v < 1 || v > max; });
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// The placements of S stages on D devices, each distinct one once.
std::vector<Placement> placements(int64_t S, int64_t D) {
  std::vector<int64_t> blocks, reversed, round_robin;
  for (int64_t s = 0; s < S; ++s) {
    blocks.push_back(s * D / S);
    reversed.push_back(D - 1 - s * D / S);
    round_robin.push_back(s % D);
  }
  const std::string first = D == 1 ? "all on one" : D == S ? "one per device" : "blocks";
  std::vector<Placement> all = {{first, blocks}, {"reversed", reversed}, {"round robin", round_robin}};
  std::vector<Placement> distinct;
  std::set<std::vector<int64_t>> seen;
  for (Placement& p : all) {
    if (seen.insert(p.second).second) distinct.push_back(std::move(p));
  }
  return distinct;
}

}  // namespace

std::vector<Cell> make_grid(const std::vector<int64_t>& stages, const std::vector<int64_t>& micro_batches) {
  std::vector<Cell> grid;
  const std::vector<int64_t> stage_counts = stages.empty() ? std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8} : stages;
  for (const int64_t S : stage_counts) {
    const std::vector<int64_t> devices = in_range({1, 2, (S + 1) / 2, S - 1, S}, S);
    const std::vector<int64_t> Ms = micro_batches.empty() ? in_range({1, S - 1, S, 2 * S, 10, 16}, 1 << 20) : micro_batches;
    for (const int64_t D : devices) {
      for (const auto& [name, stage_device] : placements(S, D)) {
        for (const int64_t M : Ms) {
          for (const bool training : {true, false}) {
            grid.push_back(Cell{compile::ScheduleProblem{S, D, stage_device, M, training}, name});
          }
        }
      }
    }
  }
  return grid;
}

std::string describe(const Cell& cell) {
  const compile::ScheduleProblem& p = cell.problem;
  std::string devices;
  for (const int64_t d : p.stage_device) devices += (devices.empty() ? "" : ",") + std::to_string(d);
  return std::string(p.training ? "training" : "inference") + " S=" + std::to_string(p.num_stages) +
         " D=" + std::to_string(p.num_devices) + " M=" + std::to_string(p.num_micro_batches) + " stages on devices [" +
         devices + "] (" + cell.placement + ")";
}

}  // namespace plexus::tools::strategy_check
