// The command line of plexus-strategy-check: which plugin to check, with which options, over
// which part of the problem grid (grid.h). Parsed by hand (--flag VALUE and --flag=VALUE),
// like plexus-collectives-conformance's; a bad command line is a UsageError (exit status 2).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace plexus::tools::strategy_check {

/// Exit statuses of plexus-strategy-check.
inline constexpr int kExitPass = 0;   ///< every schedule checked passes every rule
inline constexpr int kExitFail = 1;   ///< a schedule breaks a rule, the plugin does not load, or nothing was checked
inline constexpr int kExitUsage = 2;  ///< bad command line (no plugin, unknown option, bad value)

/// What --help prints.
extern const char* const kUsage;

/// A bad command line; main() prints it, then the usage, and exits with kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The parsed command line.
struct CommandLine {
  bool help = false;                    ///< --help / -h: print kUsage, check nothing
  bool verbose = false;                 ///< --verbose / -v: a line per cell, with its analysis
  std::string plugin;                   ///< --plugin PATH, else $PLEXUS_STRATEGY_PLUGIN
  std::string options;                  ///< --options STRING, passed to the plugin ("" by default)
  std::vector<int64_t> stages;          ///< --stages LIST; empty: the grid's default (1 .. 8)
  std::vector<int64_t> micro_batches;   ///< --micro-batches LIST; empty: the grid's default per S
};

/// Parses argv[1 ..). `plugin_from_environment` is $PLEXUS_STRATEGY_PLUGIN (NULL when unset),
/// used when --plugin is not given. Throws UsageError naming the bad or missing argument: an
/// unknown option, an option without its value, a list that is not comma-separated whole
/// numbers in range, or no plugin at all (unless --help).
CommandLine parse_command_line(int argc, const char* const* argv, const char* plugin_from_environment);

/// Parses "2,4,8" into {2, 4, 8} (sorted, duplicates dropped); `flag` names the option in
/// errors. Each number must be in [1, max]. Throws UsageError.
std::vector<int64_t> parse_list(const std::string& flag, const std::string& text, int64_t max);

}  // namespace plexus::tools::strategy_check
