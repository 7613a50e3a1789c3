#include "harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/plugin_host/cluster.h"
#include "plugin_under_test.h"

namespace conformance {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::all_reduce:
      return "all_reduce";
    case Kind::all_gather:
      return "all_gather";
    case Kind::reduce_scatter:
      return "reduce_scatter";
    case Kind::broadcast:
      return "broadcast";
    case Kind::barrier:
      return "barrier";
  }
  return "?";
}

std::string dtype_name(plx_dtype dtype) {
  if (dtype == PLX_DTYPE_FLOAT32) return "float32";
  if (dtype == PLX_DTYPE_INT32) return "int32";
  return "dtype" + std::to_string(dtype);
}

std::string op_name(plx_reduce_op op) {
  switch (op) {
    case PLX_REDUCE_SUM:
      return "sum";
    case PLX_REDUCE_MEAN:
      return "mean";
    case PLX_REDUCE_MAX:
      return "max";
    case PLX_REDUCE_MIN:
      return "min";
    default:
      return "op" + std::to_string(op);
  }
}

std::string status_name(plx_status status) {
  switch (status) {
    case PLX_OK:
      return "PLX_OK";
    case PLX_ERR_INVALID_ARGUMENT:
      return "PLX_ERR_INVALID_ARGUMENT";
    case PLX_ERR_TIMEOUT:
      return "PLX_ERR_TIMEOUT";
    case PLX_ERR_CANCELLED:
      return "PLX_ERR_CANCELLED";
    case PLX_ERR_UNSUPPORTED:
      return "PLX_ERR_UNSUPPORTED";
    default:
      return "status " + std::to_string(status);
  }
}

namespace {

int64_t env_number(const char* name, const char* fallback, int64_t otherwise) {
  const char* text = std::getenv(name);
  if (text == nullptr) text = std::getenv(fallback);
  return text != nullptr ? std::atoll(text) : otherwise;
}

// The cluster definition (PLEXUS_CLUSTER / TF_CONFIG: one process per worker, started by
// hand or by a script), read as the core reads it and passed in every config as the core
// passes it (core/plugin_host/cluster.h); none under mpirun or in one process.
const plexus::plugin_host::ClusterFields& cluster() {
  static const plexus::plugin_host::ClusterFields kCluster(plexus::plugin_host::cluster_from_environment());
  return kCluster;
}

// The cluster definition's workers if there is one, else the MPI launcher's variables.
World world_from_environment() {
  if (const auto& definition = cluster().definition()) {
    return World{static_cast<int64_t>(definition->workers.size()), definition->index};
  }
  return World{env_number("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", 1), env_number("OMPI_COMM_WORLD_RANK", "PMI_RANK", 0)};
}

}  // namespace

const World& world() {
  static const World kWorld = world_from_environment();
  return kWorld;
}

bool hosted(int64_t replicas, int64_t r) {
  const int64_t local = replicas / world().workers;
  return r >= world().index * local && r < (world().index + 1) * local;
}

plx_comm_config make_config(int64_t replicas, int64_t timeout_ms) {
  plx_comm_config config{};
  config.struct_size = sizeof(config);
  config.replication_factor = replicas;
  config.local_replicas = replicas / world().workers;
  config.first_local_replica = world().index * config.local_replicas;
  config.timeout_ms = timeout_ms;
  cluster().fill(config);
  return config;
}

Comm::Comm(int64_t replicas, int64_t timeout_ms) : replicas_(replicas) {
  const plx_comm_config config = make_config(replicas, timeout_ms);
  char message[512] = "";
  const plx_status status = plugin().comm_create(&config, &comm_, message, sizeof(message));
  EXPECT_EQ(status, PLX_OK) << "comm_create(R=" << replicas << "): " << message;
}

Comm::~Comm() { plugin().comm_destroy(comm_); }

void Comm::abort(const char* reason) const { plugin().abort(comm_, reason); }

plx_coll_args make_args(const Call& call, char* message, size_t capacity) {
  plx_coll_args args{};
  args.struct_size = sizeof(args);
  args.group.members = call.group.data();
  args.group.size = call.group.size();
  args.replica = call.replica;
  args.send = call.send;
  args.recv = call.recv;
  args.count = call.count;
  args.dtype = call.dtype;
  args.op = call.op;
  args.root = call.root;
  args.buffer_kind = call.buffer_kind;
  args.message = message;
  args.message_capacity = capacity;
  return args;
}

namespace {

plx_coll_fn function_of(Kind kind) {
  const plx_collectives_plugin& table = plugin();
  switch (kind) {
    case Kind::all_reduce:
      return table.all_reduce;
    case Kind::all_gather:
      return table.all_gather;
    case Kind::reduce_scatter:
      return table.reduce_scatter;
    case Kind::broadcast:
      return table.broadcast;
    case Kind::barrier:
      return table.barrier;
  }
  return nullptr;
}

}  // namespace

Result invoke_raw(Kind kind, plx_comm* comm, const plx_coll_args* args) {
  const auto start = std::chrono::steady_clock::now();
  Result result;
  result.status = function_of(kind)(comm, args);
  result.seconds = seconds_since(start);
  return result;
}

Result invoke(plx_comm* comm, const Call& call) {
  char message[1024] = "";
  const plx_coll_args args = make_args(call, message, sizeof(message));
  Result result = invoke_raw(call.kind, comm, &args);
  if (result.status != PLX_OK) result.message = message;
  return result;
}

void run_replicas(int64_t replicas, const std::function<void(int64_t replica)>& body) {
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r) {
    if (hosted(replicas, r)) threads.emplace_back(body, r);
  }
  for (std::thread& thread : threads) thread.join();
}

const std::vector<int64_t>& Layout::group_of(int64_t replica) const {
  for (const std::vector<int64_t>& group : groups) {
    if (std::find(group.begin(), group.end(), replica) != group.end()) return group;
  }
  ADD_FAILURE() << "replica " << replica << " is in no group of layout " << name;
  static const std::vector<int64_t> kNone;
  return kNone;
}

Layout single_group(int64_t replicas) {
  Layout layout{"R" + std::to_string(replicas), replicas, {{}}};
  for (int64_t r = 0; r < replicas; ++r) layout.groups[0].push_back(r);
  return layout;
}

Layout grouping(int64_t replicas, int64_t g, int64_t stride) {
  Layout layout{
      "R" + std::to_string(replicas) + "_g" + std::to_string(g) + "_s" + std::to_string(stride),
      replicas, std::vector<std::vector<int64_t>>(static_cast<size_t>(replicas / g))};
  for (int64_t r = 0; r < replicas; ++r) {
    const int64_t group = (r / (stride * g)) * stride + r % stride;
    layout.groups[static_cast<size_t>(group)].push_back(r);
  }
  return layout;
}

std::vector<Layout> standard_layouts() {
  std::vector<Layout> layouts;
  for (int64_t r = 1; r <= 8; ++r) layouts.push_back(single_group(r));
  layouts.push_back(grouping(8, 2, 1));  // {0,1},{2,3},{4,5},{6,7}
  layouts.push_back(grouping(8, 2, 4));  // {0,4},{1,5},{2,6},{3,7}
  layouts.push_back(grouping(8, 2, 2));  // {0,2},{1,3},{4,6},{5,7}
  layouts.push_back(grouping(8, 4, 2));  // {0,2,4,6},{1,3,5,7}
  layouts.push_back(grouping(6, 3, 2));  // {0,2,4},{1,3,5}
  return layouts;
}

bool layout_in(const Layout& layout, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), layout.name) != names.end();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace conformance
