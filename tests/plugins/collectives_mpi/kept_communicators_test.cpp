// The MPI plugin's bound on kept communicators (issue 37): a communicator whose collective
// failed is kept until MPI is finalized (its context id must not be reused while late
// messages of the failed call may arrive), but only kMaxKeptCommunicators of them; past
// that, comm_create refuses with a message saying to restart the process. One process (a
// singleton MPI rank) makes 100 collectives fail in a row: each in a new communicator of
// two local replicas, replica 0 all-reducing while replica 1 aborts the communicator. It
// prints how many communicators were created and kept and the refusal. Loads the plugin
// with dlopen, as the core does.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "plexus/collectives_plugin.h"
#include "plugins/collectives_mpi/mpi_runtime.h"

namespace {

constexpr int kFailures = 100;
constexpr size_t kBound = plexus::collectives::mpi::kMaxKeptCommunicators;

int fail(const std::string& what) {
  std::fprintf(stderr, "kept_communicators_test: %s\n", what.c_str());
  return 1;
}

// One failed collective: replica 0's all_reduce over {0, 1} while replica 1 aborts the
// communicator. Returns the all_reduce's status (PLX_ERR_CANCELLED expected) and message.
plx_status failed_all_reduce(const plx_collectives_plugin& plugin, plx_comm* comm, std::string& message) {
  const int64_t members[2] = {0, 1};
  float in[4] = {1, 2, 3, 4};
  float out[4] = {};
  char text[512] = "";
  plx_coll_args args{};
  args.struct_size = sizeof args;
  args.group = {members, 2};
  args.replica = 0;
  args.send = in;
  args.recv = out;
  args.count = 4;
  args.dtype = PLX_DTYPE_FLOAT32;
  args.op = PLX_REDUCE_SUM;
  args.message = text;
  args.message_capacity = sizeof text;
  plx_status status = PLX_OK;
  std::thread caller([&] { status = plugin.all_reduce(comm, &args); });
  plugin.abort(comm, "kept_communicators_test: replica 1 aborts");
  caller.join();
  message = text;
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return fail("usage: kept_communicators_test <libplexus-collectives-mpi.so>");
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return fail(dlerror());
  auto entry = reinterpret_cast<plx_collectives_plugin_entry>(dlsym(library, PLX_COLLECTIVES_PLUGIN_SYMBOL));
  if (entry == nullptr) return fail(dlerror());
  const plx_collectives_plugin& plugin = *entry();
  plx_comm_config config{};
  config.struct_size = sizeof(config);
  config.replication_factor = 2;
  config.local_replicas = 2;
  config.timeout_ms = 10000;
  size_t created = 0;
  std::string refusal;
  for (int attempt = 1; attempt <= kFailures; ++attempt) {
    plx_comm* comm = nullptr;
    char text[1024] = "";
    const plx_status made = plugin.comm_create(&config, &comm, text, sizeof text);
    if (made != PLX_OK) {
      if (made != PLX_ERR_RUNTIME) return fail("comm_create " + std::to_string(attempt) + ": status " + std::to_string(made) + ": " + text);
      if (refusal.empty()) refusal = text;
      continue;
    }
    ++created;
    std::string message;
    const plx_status status = failed_all_reduce(plugin, comm, message);
    plugin.comm_destroy(comm);
    if (status != PLX_ERR_CANCELLED || message.find("replica 1 aborts") == std::string::npos) {
      return fail("failure " + std::to_string(attempt) + ": status " + std::to_string(status) + ": " + message);
    }
  }
  std::printf("%d failed collectives: %zu communicators created and kept (bound %zu), %zu creations refused\n",
              kFailures, created, kBound, kFailures - created);
  std::printf("refusal: %s\n", refusal.c_str());
  if (created != kBound) return fail("expected exactly " + std::to_string(kBound) + " communicators before the refusals");
  for (const char* part : {"keeps 64 MPI communicators", "restart the process"}) {
    if (refusal.find(part) == std::string::npos) return fail(std::string("the refusal does not say \"") + part + "\"");
  }
  return 0;
}
