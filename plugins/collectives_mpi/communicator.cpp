#include "communicator.h"

#include <algorithm>
#include <thread>

#include "collectives_common/messages.h"
#include "mpi_runtime.h"

namespace plexus::collectives::mpi {
namespace {

Outcome unsupported(const std::string& what) {
  return Outcome::error(PLX_ERR_UNSUPPORTED, "comm_create: " + what);
}

Outcome check_layout(const plx_comm_config& config, int rank, int size) {
  const int64_t local = config.local_replicas;
  const std::string job = "this process is MPI rank " + std::to_string(rank) + " of " +
                          std::to_string(size) + " and hosts " + std::to_string(local) +
                          " replicas";
  if (local * size != config.replication_factor) {
    return unsupported(job + ", so the job has " + std::to_string(local * size) +
                       " replicas, but replication_factor is " +
                       std::to_string(config.replication_factor) +
                       " (every worker must host the same number of replicas)");
  }
  if (config.first_local_replica != rank * local) {
    return unsupported(job + ", so its first replica is " + std::to_string(rank * local) +
                       ", but first_local_replica is " +
                       std::to_string(config.first_local_replica));
  }
  return Outcome::ok();
}

// Workers reach comm_create at different times (one still loads data or finishes its
// previous session), so creation waits at least this long, whatever the calls' timeout.
constexpr std::chrono::milliseconds kMinCreateWait{60000};

// MPI_Comm_idup, polled so that a worker that never comes cannot hang comm_create.
Outcome duplicate_world(std::chrono::milliseconds call_timeout, MPI_Comm* out) {
  const std::chrono::milliseconds timeout = std::max(call_timeout, kMinCreateWait);
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Comm_idup(MPI_COMM_WORLD, out, &request) != MPI_SUCCESS) {
    return Outcome::error(PLX_ERR_RUNTIME, "comm_create: MPI_Comm_idup failed");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int done = 0;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      note_failure();
      return Outcome::error(PLX_ERR_TIMEOUT,
                            "comm_create: timed out after " + std::to_string(timeout.count()) +
                                " ms waiting for the other MPI ranks to create the "
                                "communicator (every worker creates its sessions' "
                                "communicators in the same order)");
    }
    std::this_thread::yield();
  }
  MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return Outcome::ok();
}

// FNV-1a over the member list, reduced to a tag in [0, limit].
int tag_of(std::span<const int64_t> members, int limit) {
  uint64_t hash = 14695981039346656037ull;
  for (int64_t member : members) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= static_cast<uint64_t>(member >> (8 * byte)) & 0xff;
      hash *= 1099511628211ull;
    }
  }
  return static_cast<int>(hash % (static_cast<uint64_t>(limit) + 1));
}

}  // namespace

Outcome open_world(const plx_comm_config& config, MPI_Comm* out) {
  if (Outcome ready = ensure_mpi(); !ready.is_ok()) return ready;
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (Outcome layout = check_layout(config, rank, size); !layout.is_ok()) return layout;
  return duplicate_world(timeout_of(config), out);
}

Communicator::Communicator(const plx_comm_config& config, MPI_Comm comm)
    : hosted_(hosted_replicas(config)),
      timeout_(timeout_of(config)),
      comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &found);
  if (found && tag_ub != nullptr) tag_limit_ = *tag_ub;
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

Outcome Communicator::group(std::span<const int64_t> members, Group** out) {
  std::lock_guard lock(groups_mutex_);
  auto it = groups_.find(members);
  if (it == groups_.end()) {
    const int tag = tag_of(members, tag_limit_);
    for (const auto& [other, group] : groups_) {
      if (group->tag() != tag) continue;
      return Outcome::error(PLX_ERR_UNSUPPORTED,
                            "groups " + format_members(members) + " and " +
                                format_members(other) + " map to the same MPI tag " +
                                std::to_string(tag) + "; use other replica groupings");
    }
    std::vector<int64_t> key(members.begin(), members.end());
    auto group = std::make_unique<Group>(key, hosted_.count, rank_, tag, abort_, timeout_);
    it = groups_.emplace(std::move(key), std::move(group)).first;
  }
  *out = it->second.get();
  return Outcome::ok();
}

void Communicator::abort(const char* reason) {
  abort_.set(reason);
  std::lock_guard lock(groups_mutex_);
  for (auto& [members, group] : groups_) group->local().wake_all();
}

}  // namespace plexus::collectives::mpi
