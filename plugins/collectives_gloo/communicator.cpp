#include "communicator.h"

#include <algorithm>
#include <climits>

#include "transfers.h"

namespace plexus::collectives::gloo_plugin {
namespace {

// Workers reach comm_create at different times (one still loads data or finishes its
// previous session), so meeting waits at least this long, whatever the calls' timeout.
constexpr std::chrono::milliseconds kMinConnectWait{60000};

}  // namespace

Outcome open_job(const plx_comm_config& config, Job* job, std::shared_ptr<::gloo::Context>* context) {
  if (Outcome found = job_of_config(config, job); !found.is_ok()) return found;
  const std::string me = job->describe(job->rank);
  if (Outcome layout = workers::check_layout(config, job->rank, job->size(), me); !layout.is_ok()) return layout;
  const std::chrono::milliseconds timeout = timeout_of(config);
  return connect_job(*job, timeout, std::max(timeout, kMinConnectWait), context);
}

GlooCommunicator::GlooCommunicator(const plx_comm_config& config, Job job, std::shared_ptr<::gloo::Context> context)
    : Communicator(config, job.rank, INT_MAX), job_(std::move(job)), context_(std::move(context)) {}

// Long enough for the peers of any call this worker missed to time out, up to 2 minutes.
GlooCommunicator::~GlooCommunicator() {
  linger(std::move(context_), std::min<std::chrono::milliseconds>(timeout() + std::chrono::seconds(1), std::chrono::minutes(2)));
}

std::unique_ptr<workers::Transfers> GlooCommunicator::transfers(const workers::Group& group, Collective kind) {
  return std::make_unique<GlooTransfers>(*this, group, kind);
}

void GlooCommunicator::abort(const char* reason) {
  Communicator::abort(reason);
  std::lock_guard lock(active_mutex_);
  for (GlooTransfers* t : active_) t->abort_waits();
}

void GlooCommunicator::enlist(GlooTransfers* transfers) {
  std::lock_guard lock(active_mutex_);
  active_.insert(transfers);
}

void GlooCommunicator::dismiss(GlooTransfers* transfers) {
  std::lock_guard lock(active_mutex_);
  active_.erase(transfers);
}

}  // namespace plexus::collectives::gloo_plugin
