// plexus-strategy-check: checks an execution strategy plugin with Plexus's own schedule
// rules (docs/plugins.md "Testing it: the schedule checker").
//
//   plexus-strategy-check --plugin lib/plexus/libplexus-strategy-pipelined.so
//   plexus-strategy-check --plugin=./libplexus-strategy-mine.so --stages 2,4 --micro-batches 4,8 -v
//
// Loads the plugin from its path (the core's loader and table checks, compile::Strategy),
// asks it for the schedule of every problem of the grid (grid.h) and checks each with
// compile::check_schedule (check_cell.h). Prints a line per failing problem naming the rule
// broken, then "N of M schedules pass". Exit statuses: command_line.h.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/compile/strategy.h"
#include "tools/strategy_check/check_cell.h"
#include "tools/strategy_check/command_line.h"
#include "tools/strategy_check/grid.h"

namespace {

using namespace plexus::tools::strategy_check;

/// Counts over the grid.
struct Tally {
  size_t passed = 0, failed = 0, refused = 0;
};

// The line of one cell: always for a failure, for the others with --verbose.
void print_cell(const Cell& cell, const CellResult& r, bool verbose, Tally& tally) {
  switch (r.verdict) {
    case Verdict::fail:
      ++tally.failed;
      std::printf("FAIL %s: %s\n", describe(cell).c_str(), r.message.c_str());
      break;
    case Verdict::refused:
      ++tally.refused;
      if (verbose) std::printf("refused %s: %s\n", describe(cell).c_str(), r.message.c_str());
      break;
    case Verdict::pass:
      ++tally.passed;
      if (verbose) {
        std::printf("ok %s: makespan %lld, bubble %.3f, peak in flight %lld\n", describe(cell).c_str(),
                    static_cast<long long>(r.makespan), r.bubble, static_cast<long long>(r.peak_in_flight));
      }
      break;
  }
}

// Checks every cell of the grid; prints the failures, the refusals' count and the summary.
int check_grid(const plexus::compile::Strategy& strategy, const CommandLine& c) {
  Tally tally;
  const std::vector<Cell> grid = make_grid(c.stages, c.micro_batches);
  for (const Cell& cell : grid) print_cell(cell, check_cell(strategy, cell, c.options), c.verbose, tally);
  if (tally.refused > 0) {
    std::printf("%zu of %zu problems refused by the plugin (PLX_ERR_INVALID_ARGUMENT), not counted%s\n", tally.refused,
                grid.size(), c.verbose ? "" : "; --verbose lists them");
  }
  const size_t checked = tally.passed + tally.failed;
  std::printf("%zu of %zu schedules pass\n", tally.passed, checked);
  if (checked == 0) {
    std::fprintf(stderr, "plexus-strategy-check: nothing was checked: the plugin refused every problem of the grid\n");
    return kExitFail;
  }
  return tally.failed == 0 ? kExitPass : kExitFail;
}

}  // namespace

int main(int argc, char** argv) {
  CommandLine c;
  try {
    c = parse_command_line(argc, argv, std::getenv("PLEXUS_STRATEGY_PLUGIN"));
  } catch (const UsageError& e) {
    std::fprintf(stderr, "plexus-strategy-check: %s\n%s", e.what(), kUsage);
    return kExitUsage;
  }
  if (c.help) {
    std::fputs(kUsage, stdout);
    return kExitPass;
  }
  try {
    const plexus::compile::Strategy strategy = plexus::compile::Strategy::from_file(c.plugin);
    std::printf("strategy plugin under test: %s (%s), options '%s'\n", strategy.name().c_str(), c.plugin.c_str(),
                c.options.c_str());
    return check_grid(strategy, c);
  } catch (const std::exception& e) {
    // The loader's messages name the plugin's path and what is wrong with it.
    std::fprintf(stderr, "plexus-strategy-check: %s\n", e.what());
    return kExitFail;
  }
}
