// Execution strategies (strategy_plugin.h): loading a strategy plugin and asking it for a
// schedule, which check_schedule() then verifies.
#pragma once

#include <string>

#include "core/plugin_host/plugin_library.h"
#include "core/compile/schedule.h"

namespace plexus::runtime {

/// A loaded strategy plugin. Thread-safe.
class Strategy {
 public:
  /// Loads libplexus-strategy-<name>.so; checks its table. Throws ir::Error(Plugin).
  explicit Strategy(const std::string& name);

  /// The plugin's schedule for `problem`, checked (check_schedule). `options` is passed to
  /// the plugin. Throws ir::Error(Plugin) for a bad schedule, or the plugin's error.
  Schedule schedule(const ScheduleProblem& problem, const std::string& options) const;

  const std::string& name() const { return name_; }
  const std::string& path() const { return library_.path(); }

 private:
  PluginLibrary library_;
  const void* table_ = nullptr;  ///< const plx_strategy_plugin*
  std::string name_;
};

}  // namespace plexus::runtime
