// C API: plx_session_options, its defaults and its reading into session::SessionOptions;
// apart from the sessions (session_api.cpp), so that the reading builds without them
// (tests/abi/fuzz fuzzes it with the few sources it needs).
#include "abi/src/session_options_api.h"

#include <string>
#include <utility>

#include "abi/src/handles.h"
#include "abi/src/struct_size.h"

namespace plexus::abi {

namespace {

// Stages, strategy, gradient accumulation, output mode, offload and profiling (version 4).
void read_pipelining(const plx_session_options& o, session::SessionOptions& out) {
  out.gradient_accumulation = o.gradient_accumulation;
  if (o.num_stages > 0) require(o.stages, "plx_session_create", "options->stages");
  for (size_t s = 0; s < o.num_stages; ++s) {
    const plx_stage& stage = o.stages[s];
    const std::string what = "options->stages[" + std::to_string(s) + "]";
    if (stage.num_blocks > 0) require(stage.blocks, "plx_session_create", (what + ".blocks").c_str());
    compile::StageSpec spec{{}, stage.device};
    for (size_t b = 0; b < stage.num_blocks; ++b) {
      require(stage.blocks[b], "plx_session_create", (what + ".blocks[" + std::to_string(b) + "]").c_str());
      spec.blocks.emplace_back(stage.blocks[b]);
    }
    if (stage.device < -1) {
      ir::fail(ir::ErrorCode::InvalidArgument, "plx_session_create: " + what + ".device is " +
                                                   std::to_string(stage.device) + ", must be >= -1");
    }
    out.stages.push_back(std::move(spec));
  }
  if (o.execution_strategy != nullptr) out.execution_strategy = o.execution_strategy;
  if (o.strategy_options != nullptr) out.strategy_options = o.strategy_options;
  out.output_mode = static_cast<session::OutputMode>(o.output_mode);
  out.output_return_period = o.output_return_period;
  out.offload_optimizer_state = o.offload_optimizer_state != 0;
  out.profile = o.profile != 0;
}

}  // namespace

session::SessionOptions to_session_options(const plx_session_options* options) {
  session::SessionOptions out;
  if (options == nullptr) return out;
  plx_session_options defaults;
  plx_session_options_init(&defaults);
  using O = plx_session_options;  // its versions 1, 2, 4, 5, 8, 9 and 13
  const O o = read_struct(*options, defaults,
                          {end_of(&O::threads_per_device), end_of(&O::collective_timeout_ms), end_of(&O::profile),
                           end_of(&O::io_threads), end_of(&O::worker_index), end_of(&O::weight_update_on_host),
                           end_of(&O::gradient_bucket_bytes)},
                          "plx_session_create: options", "plx_session_options_init");
  out.device_iterations = o.device_iterations;
  out.device_memory_bytes = o.device_memory_bytes;
  out.threads_per_device = o.threads_per_device;
  if (o.collectives_plugin != nullptr) out.collectives_plugin = o.collectives_plugin;
  out.collective_timeout_ms = o.collective_timeout_ms;
  read_pipelining(o, out);
  out.prefetch_depth = o.prefetch_depth;
  out.io_threads = o.io_threads;
  out.num_workers = o.num_workers;
  out.worker_index = o.worker_index;
  out.weight_update_on_host = o.weight_update_on_host != 0;
  out.gradient_bucket_bytes = o.gradient_bucket_bytes;
  return out;
}

}  // namespace plexus::abi

extern "C" {

PLX_API void plx_session_options_init(plx_session_options* options) {
  if (options == nullptr) return;
  const plexus::session::SessionOptions defaults;
  options->struct_size = sizeof(plx_session_options);
  options->device_iterations = defaults.device_iterations;
  options->device_memory_bytes = defaults.device_memory_bytes;
  options->threads_per_device = defaults.threads_per_device;
  options->collectives_plugin = nullptr;
  options->collective_timeout_ms = defaults.collective_timeout_ms;
  options->gradient_accumulation = defaults.gradient_accumulation;
  options->stages = nullptr;
  options->num_stages = 0;
  options->execution_strategy = nullptr;
  options->strategy_options = nullptr;
  options->output_mode = static_cast<plx_output_mode>(defaults.output_mode);
  options->output_return_period = defaults.output_return_period;
  options->offload_optimizer_state = defaults.offload_optimizer_state ? 1 : 0;
  options->profile = defaults.profile ? 1 : 0;
  options->prefetch_depth = defaults.prefetch_depth;
  options->io_threads = defaults.io_threads;
  options->num_workers = defaults.num_workers;
  options->worker_index = defaults.worker_index;
  options->weight_update_on_host = defaults.weight_update_on_host ? 1 : 0;
  options->gradient_bucket_bytes = defaults.gradient_bucket_bytes;
}

}  // extern "C"
