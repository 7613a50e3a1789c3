// The C face of the Gloo collectives plugin: the table of the cross-worker layer
// (collectives_workers/plugin_table.h) with Gloo's communicator.
#include "collectives_workers/plugin_table.h"
#include "communicator.h"

namespace plexus::collectives::gloo_plugin {
namespace {

constexpr char kName[] = "gloo";

Outcome open(const plx_comm_config& config, std::unique_ptr<workers::Communicator>* out) {
  Job job;
  std::shared_ptr<::gloo::Context> context;
  Outcome opened = open_job(config, &job, &context);
  if (opened.is_ok()) *out = std::make_unique<GlooCommunicator>(config, std::move(job), std::move(context));
  return opened;
}

}  // namespace
}  // namespace plexus::collectives::gloo_plugin

extern "C" __attribute__((visibility("default"))) const plx_collectives_plugin*
plx_collectives_plugin_v1(void) {
  using namespace plexus::collectives;
  return workers::worker_plugin_table<gloo_plugin::kName, gloo_plugin::open>();
}
