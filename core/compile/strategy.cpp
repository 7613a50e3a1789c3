#include "core/compile/strategy.h"

#include <plexus/strategy_plugin.h>

#include <cstddef>
#include <utility>

#include "core/ir/error.h"

namespace plexus::compile {

namespace {

const plx_strategy_plugin* table_of(const void* t) { return static_cast<const plx_strategy_plugin*>(t); }

}  // namespace

Strategy::Strategy(const std::string& name) : Strategy(plugin_host::PluginLibrary::open("strategy", name), name) {}

Strategy Strategy::from_file(const std::string& path) { return Strategy(plugin_host::PluginLibrary::open_file("strategy", path), ""); }

Strategy::Strategy(plugin_host::PluginLibrary library, const std::string& name) : library_(std::move(library)), name_(name) {
  auto entry = reinterpret_cast<plx_strategy_plugin_entry>(library_.symbol(PLX_STRATEGY_PLUGIN_SYMBOL));
  const plx_strategy_plugin* t = entry();
  auto bad = [&](const std::string& what) { ir::fail(ir::ErrorCode::Plugin, "strategy plugin " + path() + ": " + what); };
  if (t == nullptr) bad(std::string(PLX_STRATEGY_PLUGIN_SYMBOL) + "() returned NULL");
  if (t->abi_version != PLX_STRATEGY_ABI_VERSION) {
    bad("ABI version " + std::to_string(t->abi_version) + ", this Plexus needs " + std::to_string(PLX_STRATEGY_ABI_VERSION));
  }
  if (t->struct_size < offsetof(plx_strategy_plugin, make_schedule) + sizeof(t->make_schedule)) {
    bad("table struct_size " + std::to_string(t->struct_size) + " is smaller than ABI version 1's");
  }
  if (t->name == nullptr || t->make_schedule == nullptr) bad("table has no name or no make_schedule");
  if (name_.empty()) name_ = t->name;
  table_ = t;
}

Schedule Strategy::schedule(const ScheduleProblem& problem, const std::string& options) const {
  Schedule schedule = unchecked_schedule(problem, options);
  check_schedule(problem, schedule, name_);
  return schedule;
}

Schedule Strategy::unchecked_schedule(const ScheduleProblem& problem, const std::string& options) const {
  check_problem(problem);  // the plugin reads stage_device[0 .. S)
  const size_t capacity = static_cast<size_t>(problem.num_stages * (2 * problem.num_micro_batches + 1));
  std::vector<std::vector<plx_schedule_step>> buffers(static_cast<size_t>(problem.num_devices),
                                                      std::vector<plx_schedule_step>(capacity));
  std::vector<plx_schedule_step*> pointers;
  for (auto& b : buffers) pointers.push_back(b.data());
  std::vector<size_t> counts(buffers.size(), 0);
  const plx_schedule_problem c{sizeof(plx_schedule_problem),
                               problem.num_stages,
                               problem.num_devices,
                               problem.stage_device.data(),
                               problem.num_micro_batches,
                               problem.training ? 1 : 0,
                               options.c_str()};
  char message[512] = {};
  const plx_status status =
      table_of(table_)->make_schedule(&c, pointers.data(), capacity, counts.data(), message, sizeof message);
  message[sizeof message - 1] = '\0';
  if (status != PLX_OK) {
    ir::fail(status == PLX_ERR_INVALID_ARGUMENT ? ir::ErrorCode::InvalidArgument : ir::ErrorCode::Plugin,
             "execution strategy '" + name_ + "': " + (message[0] != '\0' ? message : "failed with no message"));
  }
  Schedule schedule(buffers.size());
  for (size_t d = 0; d < buffers.size(); ++d) {
    if (counts[d] > capacity) {
      ir::fail(ir::ErrorCode::Plugin, "execution strategy '" + name_ + "' wrote " + std::to_string(counts[d]) +
                                          " steps for device " + std::to_string(d) + ", capacity " +
                                          std::to_string(capacity));
    }
    for (size_t i = 0; i < counts[d]; ++i) {
      const plx_schedule_step& s = buffers[d][i];
      schedule[d].push_back(Step{s.stage, s.micro_batch, static_cast<StepKind>(s.kind)});
    }
  }
  return schedule;
}

}  // namespace plexus::compile
