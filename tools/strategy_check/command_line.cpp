#include "tools/strategy_check/command_line.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <system_error>

namespace plexus::tools::strategy_check {

const char* const kUsage =
    "Usage: plexus-strategy-check --plugin <libplexus-strategy-NAME.so> [options]\n"
    "Asks an execution strategy plugin for its schedule of every problem of a grid (stages S,\n"
    "devices D, placements of the stages on the devices, micro-batches M, training and\n"
    "inference) and checks each with Plexus's own schedule rules (strategy_plugin.h).\n"
    "Prints a line per schedule that breaks a rule, then 'N of M schedules pass'.\n"
    "\n"
    "Options:\n"
    "  --plugin PATH          the plugin file (or set PLEXUS_STRATEGY_PLUGIN)\n"
    "  --options STRING       strategy options passed to the plugin (default \"\")\n"
    "  --stages LIST          S values, e.g. 2,4 (default 1,2,...,8; each 1 .. 64)\n"
    "  --micro-batches LIST   M values for every S (default 1, S-1, S, 2S, 10, 16; each 1 .. 1024)\n"
    "  --verbose, -v          a line per problem: passed (simulated makespan, bubble fraction,\n"
    "                         peak micro-batches in flight), failed or refused\n"
    "  --help, -h             this text\n"
    "\n"
    "Problems the plugin refuses (PLX_ERR_INVALID_ARGUMENT with a message, e.g. M < S) are\n"
    "counted apart, not as failures. Exit status: 0 every schedule passes; 1 a schedule breaks\n"
    "a rule, the plugin does not load or refuses every problem; 2 bad command line.\n";

namespace {

constexpr int64_t kMaxStages = 64;
constexpr int64_t kMaxMicroBatches = 1024;

// The value of option `flag` at argv[i]: "--flag=VALUE" or "--flag VALUE" (then i advances).
// Returns false when argv[i] is not this option.
bool take_value(std::string_view flag, int argc, const char* const* argv, int& i, std::string& value) {
  const std::string_view arg = argv[i];
  if (arg.size() > flag.size() && arg.substr(0, flag.size()) == flag && arg[flag.size()] == '=') {
    value = std::string(arg.substr(flag.size() + 1));
    return true;
  }
  if (arg != flag) return false;
  if (i + 1 >= argc) throw UsageError(std::string(flag) + " needs a value");
  value = argv[++i];
  return true;
}

}  // namespace

std::vector<int64_t> parse_list(const std::string& flag, const std::string& text, int64_t max) {
  std::vector<int64_t> values;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = std::string_view(text).substr(start, end - start);
    int64_t value = 0;
    const auto [ptr, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || ptr != item.data() + item.size() || value < 1 || value > max) {
      throw UsageError(flag + " '" + text + "': '" + std::string(item) + "' is not a whole number in [1, " +
                       std::to_string(max) + "]");
    }
    values.push_back(value);
    start = end + 1;
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

CommandLine parse_command_line(int argc, const char* const* argv, const char* plugin_from_environment) {
  CommandLine c;
  std::string value;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      c.help = true;
    } else if (arg == "--verbose" || arg == "-v") {
      c.verbose = true;
    } else if (take_value("--plugin", argc, argv, i, value)) {
      if (value.empty()) throw UsageError("--plugin needs a path, got ''");
      c.plugin = value;
    } else if (take_value("--options", argc, argv, i, value)) {
      c.options = value;
    } else if (take_value("--stages", argc, argv, i, value)) {
      c.stages = parse_list("--stages", value, kMaxStages);
    } else if (take_value("--micro-batches", argc, argv, i, value)) {
      c.micro_batches = parse_list("--micro-batches", value, kMaxMicroBatches);
    } else {
      throw UsageError("unknown argument '" + std::string(arg) + "'");
    }
  }
  if (c.plugin.empty() && plugin_from_environment != nullptr) c.plugin = plugin_from_environment;
  if (c.plugin.empty() && !c.help) throw UsageError("no plugin given: --plugin PATH (or PLEXUS_STRATEGY_PLUGIN) is missing");
  return c;
}

}  // namespace plexus::tools::strategy_check
