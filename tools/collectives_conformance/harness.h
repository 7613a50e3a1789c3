// What every conformance test uses: communicators (RAII), one collective call as a plain
// struct, replicas run as threads, and the replica layouts (groups) the tests run over.
//
// Conventions every collectives plugin's messages follow, so the tests can check them:
// a group is written "{0,4}" (its members' global indices, comma-separated, no spaces);
// missing replicas are named "replica 2" or "replicas 1,3".
#ifndef PLEXUS_TESTS_PLUGINS_CONFORMANCE_HARNESS_H
#define PLEXUS_TESTS_PLUGINS_CONFORMANCE_HARNESS_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plexus/collectives_plugin.h"

namespace conformance {

enum class Kind { all_reduce, all_gather, reduce_scatter, broadcast, barrier };

const char* kind_name(Kind kind);
std::string dtype_name(plx_dtype dtype);
std::string op_name(plx_reduce_op op);
std::string status_name(plx_status status);

/**
 * The processes running this suite: one, unless it was started as several workers (then
 * every worker runs the same tests, and worker w hosts replicas [w R/W, (w+1) R/W) of every
 * communicator of R replicas; a test whose R does not split over the W workers is skipped).
 * Read from the cluster definition (PLEXUS_CLUSTER or TF_CONFIG: workers started by hand,
 * as for the Gloo plugin), else from Open MPI's (OMPI_COMM_WORLD_SIZE / _RANK) or MPICH's
 * (PMI_SIZE / PMI_RANK) environment under mpirun, so the suite itself does not link MPI.
 */
struct World {
  int64_t workers = 1;
  int64_t index = 0;
};
const World& world();

/** True when more than one process runs the suite. */
inline bool multi_process() { return world().workers > 1; }

/** True when `replicas` split evenly over the workers. */
inline bool splits(int64_t replicas) { return replicas % world().workers == 0; }

/** True when replica r of a communicator of `replicas` is hosted by this process. */
bool hosted(int64_t replicas, int64_t r);

/** Skips the test unless `replicas` split evenly over the workers. */
#define CONFORMANCE_SKIP_UNLESS_SPLITS(replicas)                                            \
  if (!::conformance::splits(replicas))                                                     \
  GTEST_SKIP() << (replicas) << " replicas do not split over " << ::conformance::world().workers \
               << " processes"

/** Skips a test that checks what only one process can see (`why`). */
#define CONFORMANCE_SINGLE_PROCESS_ONLY(why) \
  if (::conformance::multi_process()) GTEST_SKIP() << "single process only: " << (why)

/** An owned communicator of the plugin under test. */
class Comm {
 public:
  /**
   * A communicator of `replicas` replicas, this process hosting its share (all of them in a
   * single process). Fails the test if refused.
   */
  explicit Comm(int64_t replicas, int64_t timeout_ms = 60000);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  plx_comm* get() const { return comm_; }
  int64_t replicas() const { return replicas_; }
  void abort(const char* reason) const;

 private:
  plx_comm* comm_ = nullptr;
  int64_t replicas_;
};

/** A config for `replicas` replicas, this process hosting its share, with the cluster
 *  definition the core would pass (plugin ABI 1.1; none in one process or under mpirun). */
plx_comm_config make_config(int64_t replicas, int64_t timeout_ms);

/** One collective call (see collectives_plugin.h, "Element layout"). */
struct Call {
  Kind kind = Kind::all_reduce;
  std::vector<int64_t> group;
  int64_t replica = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  plx_dtype dtype = PLX_DTYPE_FLOAT32;
  plx_reduce_op op = PLX_REDUCE_SUM;
  int64_t root = 0;
  plx_buffer_kind buffer_kind = PLX_BUFFER_DEVICE;
};

/** What a call returned, its message (when it failed) and how long it took. */
struct Result {
  plx_status status = PLX_OK;
  std::string message;
  double seconds = 0;
};

/** The args struct for `call`, writing messages to `message` (capacity bytes). */
plx_coll_args make_args(const Call& call, char* message, size_t capacity);

/** Makes `call` on `comm` through the plugin's table. */
Result invoke(plx_comm* comm, const Call& call);

/** Calls the plugin's function for `kind` with a hand-made args struct (may be NULL). */
Result invoke_raw(Kind kind, plx_comm* comm, const plx_coll_args* args);

/**
 * Runs body(replica) on one thread per replica in [0, replicas) hosted by this process and
 * joins them all.
 */
void run_replicas(int64_t replicas, const std::function<void(int64_t replica)>& body);

/** A set of replicas split into groups: each replica is in exactly one group. */
struct Layout {
  std::string name;  // usable in a test name: "R4", "R8_g2_s4"
  int64_t replicas = 1;
  std::vector<std::vector<int64_t>> groups;  // each sorted

  /** The group of `replica`. */
  const std::vector<int64_t>& group_of(int64_t replica) const;
};

/** One group of all R replicas. */
Layout single_group(int64_t replicas);

/**
 * The replica grouping (group size g, stride s) of docs/design.md: replica r is in group
 * (r / (s*g)) * s + r % s. R % (s*g) must be 0.
 */
Layout grouping(int64_t replicas, int64_t g, int64_t stride);

/** Group sizes 1..8 as single groups, then several groups at once (contiguous, strided). */
std::vector<Layout> standard_layouts();

/** True when a test named `name` (e.g. "R2") is among `names`. */
bool layout_in(const Layout& layout, const std::vector<std::string>& names);

/** Seconds since `start`. */
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace conformance

#endif  // PLEXUS_TESTS_PLUGINS_CONFORMANCE_HARNESS_H
