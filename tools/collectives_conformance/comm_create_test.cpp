// comm_create validates its configuration (and leaves *out_comm untouched on error);
// comm_destroy accepts NULL. The plugin's table is well formed.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <functional>

#include "harness.h"
#include "plugin_under_test.h"

namespace conformance {
namespace {

struct ConfigCase {
  std::string name;
  std::function<void(plx_comm_config&)> change;
};

void PrintTo(const ConfigCase& c, std::ostream* os) { *os << c.name; }

const char* const kAddresses[] = {"127.0.0.1:1", "127.0.0.1:2"};
const char* const kNullAddress[] = {"127.0.0.1:1", nullptr};

// A cluster definition of `count` workers at `addresses`, this process worker `index`.
void with_cluster(plx_comm_config& c, const char* const* addresses, int64_t count, int64_t index) {
  c.worker_addresses = addresses;
  c.num_worker_addresses = count;
  c.worker_index = index;
  c.cluster_source = "PLEXUS_CLUSTER";
}

class CommCreateRejects : public testing::TestWithParam<ConfigCase> {};

TEST_P(CommCreateRejects, BadConfigs) {
  CONFORMANCE_SINGLE_PROCESS_ONLY("the cases change a single-process layout");
  plx_comm_config config = make_config(4, 1000);
  GetParam().change(config);
  auto* const sentinel = reinterpret_cast<plx_comm*>(0x1234);
  plx_comm* comm = sentinel;
  char message[512] = "";
  EXPECT_EQ(status_name(plugin().comm_create(&config, &comm, message, sizeof(message))),
            status_name(PLX_ERR_INVALID_ARGUMENT));
  EXPECT_EQ(comm, sentinel) << "out_comm changed on error";
  EXPECT_GT(std::strlen(message), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, CommCreateRejects,
    testing::ValuesIn(std::vector<ConfigCase>{
        {"struct_size_too_small", [](plx_comm_config& c) { c.struct_size = sizeof(size_t); }},
        {"replication_factor_zero", [](plx_comm_config& c) { c.replication_factor = 0; }},
        {"replication_factor_negative", [](plx_comm_config& c) { c.replication_factor = -3; }},
        {"local_replicas_zero", [](plx_comm_config& c) { c.local_replicas = 0; }},
        {"first_local_negative", [](plx_comm_config& c) { c.first_local_replica = -1; }},
        {"local_range_past_R", [](plx_comm_config& c) { c.first_local_replica = 2; }},
        {"local_replicas_more_than_R", [](plx_comm_config& c) { c.local_replicas = 5; }},
        {"timeout_zero", [](plx_comm_config& c) { c.timeout_ms = 0; }},
        {"timeout_negative", [](plx_comm_config& c) { c.timeout_ms = -1; }},
        // Plugin ABI 1.1: the cluster definition's fields.
        {"struct_size_ending_inside_the_cluster_fields",
         [](plx_comm_config& c) { c.struct_size = offsetof(plx_comm_config, num_worker_addresses); }},
        {"num_worker_addresses_negative", [](plx_comm_config& c) { c.num_worker_addresses = -1; }},
        {"worker_addresses_null", [](plx_comm_config& c) { with_cluster(c, nullptr, 2, 0); }},
        {"worker_address_null", [](plx_comm_config& c) { with_cluster(c, kNullAddress, 2, 0); }},
        {"worker_index_outside_the_workers", [](plx_comm_config& c) { with_cluster(c, kAddresses, 2, 2); }},
        {"worker_index_negative", [](plx_comm_config& c) { with_cluster(c, kAddresses, 2, -1); }},
        {"worker_index_without_workers", [](plx_comm_config& c) { with_cluster(c, nullptr, 0, 1); }},
        {"cluster_source_null", [](plx_comm_config& c) {
           with_cluster(c, kAddresses, 2, 0);
           c.cluster_source = nullptr;
         }},
    }),
    [](const testing::TestParamInfo<ConfigCase>& info) { return info.param.name; });

// A caller of plugin ABI 1 (an older Plexus) passes a config that ends at timeout_ms, with
// no cluster definition: every plugin serves it in one process.
TEST(CommCreate, AConfigOfPluginAbi1IsServed) {
  CONFORMANCE_SINGLE_PROCESS_ONLY("one process needs no cluster definition");
  plx_comm_config config = make_config(2, 1000);
  config.struct_size = offsetof(plx_comm_config, worker_addresses);
  config.num_worker_addresses = -1;  // past struct_size: never read
  plx_comm* comm = nullptr;
  char message[512] = "";
  ASSERT_EQ(status_name(plugin().comm_create(&config, &comm, message, sizeof(message))), status_name(PLX_OK))
      << message;
  run_replicas(2, [&](int64_t r) { EXPECT_EQ(invoke(comm, Call{Kind::barrier, {0, 1}, r}).status, PLX_OK); });
  plugin().comm_destroy(comm);
}

TEST(CommCreate, NullPointersAreRejected) {
  const plx_comm_config config = make_config(2, 1000);
  plx_comm* comm = nullptr;
  char message[256] = "";
  EXPECT_EQ(plugin().comm_create(nullptr, &comm, message, sizeof(message)),
            PLX_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(plugin().comm_create(&config, nullptr, message, sizeof(message)),
            PLX_ERR_INVALID_ARGUMENT);
}

TEST(CommCreate, ManyCommunicatorsAndDestroyNull) {
  plugin().comm_destroy(nullptr);
  for (int64_t r = 1; r <= 16; ++r) {
    if (!splits(r)) continue;
    Comm comm(r, 1000);
    EXPECT_NE(comm.get(), nullptr);
  }
  // A huge timeout is accepted (and must not overflow a deadline).
  CONFORMANCE_SKIP_UNLESS_SPLITS(2);
  Comm patient(2, INT64_MAX);
  run_replicas(2, [&](int64_t r) {
    EXPECT_EQ(invoke(patient.get(), Call{Kind::barrier, {0, 1}, r}).status, PLX_OK);
  });
}

TEST(LocalPlugin, ServesOnlySingleProcessJobs) {
  if (std::strcmp(plugin().name, "local") != 0) GTEST_SKIP() << "local plugin only";
  plx_comm_config config = make_config(4, 1000);
  config.first_local_replica = 2;
  config.local_replicas = 2;
  plx_comm* comm = nullptr;
  char message[512] = "";
  EXPECT_EQ(status_name(plugin().comm_create(&config, &comm, message, sizeof(message))),
            status_name(PLX_ERR_UNSUPPORTED));
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(message).find("single-process"), std::string::npos) << message;
}

// The plugins whose replicas span processes name this process as their job knows it.
TEST(MultiWorkerPlugin, RefusesLayoutsThatDoNotMatchTheJob) {
  const bool mpi = std::strcmp(plugin().name, "mpi") == 0;
  if (!mpi && std::strcmp(plugin().name, "gloo") != 0) GTEST_SKIP() << "mpi and gloo plugins only";
  const int64_t workers = world().workers;
  plx_comm_config config = make_config(2 * workers, 1000);
  config.replication_factor = 2 * workers + 1;  // not local_replicas x ranks
  plx_comm* comm = nullptr;
  char message[512] = "";
  EXPECT_EQ(status_name(plugin().comm_create(&config, &comm, message, sizeof(message))),
            status_name(PLX_ERR_UNSUPPORTED));
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(message).find(mpi ? "MPI rank" : "worker "), std::string::npos) << message;
  if (workers > 1) {
    config = make_config(2 * workers, 1000);
    config.first_local_replica = (config.first_local_replica + 2) % (2 * workers);
    EXPECT_EQ(status_name(plugin().comm_create(&config, &comm, message, sizeof(message))),
              status_name(PLX_ERR_UNSUPPORTED));
    EXPECT_NE(std::string(message).find("first_local_replica"), std::string::npos) << message;
  }
}

TEST(PluginTable, IsWellFormed) {
  const plx_collectives_plugin& table = plugin();
  EXPECT_GE(table.struct_size, sizeof(plx_collectives_plugin));
  EXPECT_EQ(table.abi_version, static_cast<uint32_t>(PLX_COLLECTIVES_ABI_VERSION));
  ASSERT_NE(table.name, nullptr);
  EXPECT_GT(std::strlen(table.name), 0u);
  EXPECT_NE(plugin_path().find(std::string("libplexus-collectives-") + table.name + ".so"),
            std::string::npos)
      << "the library should be named after the plugin: " << plugin_path();
  EXPECT_NE(table.comm_create, nullptr);
  EXPECT_NE(table.comm_destroy, nullptr);
  EXPECT_NE(table.all_reduce, nullptr);
  EXPECT_NE(table.all_gather, nullptr);
  EXPECT_NE(table.reduce_scatter, nullptr);
  EXPECT_NE(table.broadcast, nullptr);
  EXPECT_NE(table.barrier, nullptr);
  EXPECT_NE(table.abort, nullptr);
  EXPECT_EQ(plugin_entry()(), &table) << "the entry point returns the same table every time";
}

}  // namespace
}  // namespace conformance
