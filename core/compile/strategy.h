// Execution strategies (strategy_plugin.h): loading a strategy plugin and asking it for a
// schedule, which check_schedule() then verifies.
#pragma once

#include <string>

#include "core/plugin_host/plugin_library.h"
#include "core/compile/schedule.h"

namespace plexus::compile {

/// A loaded strategy plugin. Thread-safe.
class Strategy {
 public:
  /// Loads libplexus-strategy-<name>.so; checks its table. Throws ir::Error(Plugin).
  explicit Strategy(const std::string& name);

  /// Loads the strategy plugin file at `path` (any name: a plugin under test); checks its
  /// table. Its name() is the table's name. Throws ir::Error(Plugin) naming the path.
  static Strategy from_file(const std::string& path);

  /// The plugin's schedule for `problem`, checked (check_schedule). `options` is passed to
  /// the plugin. Throws ir::Error(Plugin) for a bad schedule, or the plugin's error.
  Schedule schedule(const ScheduleProblem& problem, const std::string& options) const;

  /// The plugin's schedule for `problem` as it wrote it, not checked against the rules
  /// (schedule() is this and check_schedule). Throws ir::Error(InvalidArgument) with the
  /// plugin's message when it refuses the problem (PLX_ERR_INVALID_ARGUMENT),
  /// ir::Error(Plugin) for another error status or more steps than the lists hold.
  Schedule unchecked_schedule(const ScheduleProblem& problem, const std::string& options) const;

  const std::string& name() const { return name_; }
  const std::string& path() const { return library_.path(); }

 private:
  /// Takes the loaded `library`, checks its table; `name` "" means the table's name.
  Strategy(plugin_host::PluginLibrary library, const std::string& name);

  plugin_host::PluginLibrary library_;
  const void* table_ = nullptr;  ///< const plx_strategy_plugin*
  std::string name_;
};

}  // namespace plexus::compile
