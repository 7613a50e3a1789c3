#include "mpi_runtime.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace plexus::collectives::mpi {
namespace {

std::mutex init_mutex;
bool initialized_here = false;
std::atomic<bool> failed{false};
MPI_Comm exit_comm = MPI_COMM_NULL;  // a duplicate of MPI_COMM_WORLD for the exit barrier

// How long the exit barrier waits for the other ranks: long when every call succeeded
// (another rank may still be evaluating or writing checkpoints), short after a failure
// (a peer may be hung, and mpirun only stops it once this process has exited).
constexpr std::chrono::seconds kExitWaitHealthy{600};
constexpr std::chrono::seconds kExitWaitAfterFailure{10};

// True when every rank reached the exit barrier in time.
bool everyone_exits() {
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(exit_comm, &request) != MPI_SUCCESS) return false;
  const auto deadline = std::chrono::steady_clock::now() +
                        (failed.load() ? kExitWaitAfterFailure : kExitWaitHealthy);
  for (int done = 0; std::chrono::steady_clock::now() < deadline;) {
    if (MPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// atexit handler; the library is linked with -z nodelete, so it is still mapped at exit.
// MPI_Finalize waits for every rank, so it is called only when every rank is exiting too;
// otherwise the process exits without it and mpirun reports the abnormal exit and stops
// the job.
void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || !everyone_exits()) return;
  MPI_Comm_free(&exit_comm);
  MPI_Finalize();
}

std::string thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

Outcome check_thread_level(int provided, const char* who) {
  if (provided >= MPI_THREAD_MULTIPLE) return Outcome::ok();
  return Outcome::error(PLX_ERR_UNSUPPORTED,
                        std::string("comm_create: MPI was initialized ") + who + " with " +
                            thread_level_name(provided) +
                            ", but the mpi collectives plugin needs MPI_THREAD_MULTIPLE (each "
                            "replica's thread calls MPI); initialize MPI with "
                            "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
}

}  // namespace

void use_default_eager_limit() {
  // Open MPI sends shared-memory messages of up to btl_vader_eager_limit bytes (4 KiB by
  // default) at once and larger ones after a handshake. A call's envelope is its data plus
  // 64 bytes of calls (collectives_workers/call_exchange.h), so a 4 KiB all_reduce took the
  // handshake and 1.6-3x MPI_Allreduce's time; 8 KiB sends it eagerly (bench/README.md,
  // "mpi_allreduce_bench"). A value set by the user or mpirun is kept.
  setenv("OMPI_MCA_btl_vader_eager_limit", "8192", /*overwrite=*/0);
}

Outcome ensure_mpi() {
  std::lock_guard lock(init_mutex);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return Outcome::error(PLX_ERR_UNSUPPORTED,
                          "comm_create: MPI was already finalized in this process");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return check_thread_level(provided, initialized_here ? "by this plugin" : "by the application");
  }
  use_default_eager_limit();
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return Outcome::error(PLX_ERR_RUNTIME, "comm_create: MPI_Init_thread failed");
  }
  initialized_here = true;
  MPI_Comm_dup(MPI_COMM_WORLD, &exit_comm);
  MPI_Comm_set_errhandler(exit_comm, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
  return check_thread_level(provided, "by this plugin");
}

void note_failure() noexcept { failed.store(true); }

namespace {

std::mutex kept_mutex;
std::vector<MPI_Comm> kept;  // MPI_Finalize (or the process's exit) reclaims them

}  // namespace

void keep_until_exit(MPI_Comm comm) {
  const std::lock_guard lock(kept_mutex);
  kept.push_back(comm);
}

Outcome check_kept_bound() {
  const std::lock_guard lock(kept_mutex);
  if (kept.size() < kMaxKeptCommunicators) return Outcome::ok();
  return Outcome::error(PLX_ERR_RUNTIME,
                        "comm_create: this process keeps " + std::to_string(kept.size()) +
                            " MPI communicators of failed or aborted collectives (the bound is " +
                            std::to_string(kMaxKeptCommunicators) +
                            ": they cannot be freed while late messages of their calls may arrive); "
                            "restart the process (from the last checkpoint) to create more");
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

}  // namespace plexus::collectives::mpi
