// The Gloo plugin's job (plugins/collectives_gloo/job.h): addresses, how workers are named
// in messages, the job of a plx_comm_config's cluster definition (or of none), and the
// rendezvous of a one-worker job.
#include "job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "collectives_common/validation.h"
#include "tests/scoped_env.h"

namespace plexus::collectives::gloo_plugin {
namespace {

using ::testing::HasSubstr;
using plexus::test::ScopedEnv;

TEST(GlooJob, AddressesSplitAtTheLastColon) {
  EXPECT_EQ(split_address("10.0.0.2:29500").host, "10.0.0.2");
  EXPECT_EQ(split_address("10.0.0.2:29500").port, "29500");
  EXPECT_EQ(split_address("[::1]:7").host, "::1");
  EXPECT_EQ(split_address("[::1]:7").port, "7");
  EXPECT_EQ(split_address("host-a:1").host, "host-a");
}

// A config of `replicas` replicas, this process hosting `local` of them from worker
// `index`'s share, with the cluster definition `addresses` (none when empty).
plx_comm_config config_of(int64_t replicas, int64_t local, const std::vector<const char*>& addresses, int64_t index,
                          const char* rendezvous) {
  plx_comm_config config{};
  config.struct_size = sizeof(config);
  config.replication_factor = replicas;
  config.first_local_replica = index * local;
  config.local_replicas = local;
  config.timeout_ms = 1000;
  config.worker_addresses = addresses.empty() ? nullptr : addresses.data();
  config.num_worker_addresses = static_cast<int64_t>(addresses.size());
  config.worker_index = index;
  config.rendezvous = rendezvous;
  config.cluster_source = addresses.empty() ? nullptr : "PLEXUS_CLUSTER";
  return config;
}

TEST(GlooJob, TheConfigsClusterDefinitionGivesWorkersRankAndRendezvous) {
  // The plugin reads the config only, never the environment.
  const ScopedEnv cluster("PLEXUS_CLUSTER", R"({"workers": ["10.9.9.9:1"], "index": 0})");
  const std::vector<const char*> addresses{"10.0.0.1:29500", "10.0.0.2:29500"};
  Job job;
  ASSERT_TRUE(job_of_config(config_of(4, 2, addresses, 1, "/shared"), &job).is_ok());
  EXPECT_EQ(job.size(), 2);
  EXPECT_EQ(job.rank, 1);
  EXPECT_EQ(job.rendezvous, "/shared");
  EXPECT_EQ(job.describe(0), "worker 0 of 2 in PLEXUS_CLUSTER (10.0.0.1:29500)");
  ASSERT_TRUE(job_of_config(config_of(4, 2, addresses, 0, nullptr), &job).is_ok());
  EXPECT_EQ(job.rank, 0);
  EXPECT_EQ(job.rendezvous, "");
}

TEST(GlooJob, SeveralWorkersWithoutADefinitionAreRefusedNamingTheVariables) {
  const ScopedEnv cluster("PLEXUS_CLUSTER", R"({"workers": ["10.0.0.1:1", "10.0.0.2:1"], "index": 1})");
  Job job;
  const Outcome none = job_of_config(config_of(4, 2, {}, 1, nullptr), &job);
  EXPECT_EQ(none.status, PLX_ERR_UNSUPPORTED);
  EXPECT_THAT(none.message, HasSubstr("comm_create: this process hosts 2 of 4 replicas, a job of several workers, but "
                                      "the config carries no cluster definition (the workers' addresses): start every "
                                      "worker with PLEXUS_CLUSTER or TF_CONFIG set"));
}

TEST(GlooJob, AnOlderCallersConfigServesOneProcessAndNamesStructSizeForSeveral) {
  plx_comm_config config = config_of(4, 2, {"10.0.0.1:1", "10.0.0.2:1"}, 1, nullptr);
  config.struct_size = kCommConfigSizeV1;  // plugin ABI 1: the fields after timeout_ms are not the caller's
  Job job;
  const Outcome several = job_of_config(config, &job);
  EXPECT_EQ(several.status, PLX_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(several.message, HasSubstr("config->struct_size is " + std::to_string(kCommConfigSizeV1) +
                                         " (plugin ABI 1) and ends before the cluster definition (the workers' "
                                         "addresses, from PLEXUS_CLUSTER or TF_CONFIG)"));
  config = config_of(2, 2, {}, 0, nullptr);
  config.struct_size = kCommConfigSizeV1;
  ASSERT_TRUE(job_of_config(config, &job).is_ok());
  EXPECT_EQ(job.size(), 1);
}

TEST(GlooJob, WithoutADefinitionTheJobIsThisProcessAlone) {
  Job job;
  ASSERT_TRUE(job_of_config(config_of(2, 2, {}, 0, nullptr), &job).is_ok());
  EXPECT_EQ(job.size(), 1);
  EXPECT_EQ(job.describe(0), "worker 0 of 1");
  std::shared_ptr<::gloo::Context> context;
  ASSERT_TRUE(connect_job(job, std::chrono::milliseconds(1000), std::chrono::milliseconds(1000), &context).is_ok());
  EXPECT_EQ(context->size, 1);
  linger(std::move(context), std::chrono::milliseconds(0));
}

TEST(GlooJob, AWorkerThatNeverComesIsATimeoutNamingTheStore) {
  // Worker 1 of 2: worker 0 (this address) never serves the store.
  const Job job{{"127.0.0.1:1", "127.0.0.1:2"}, 1, "", "PLEXUS_CLUSTER"};
  std::shared_ptr<::gloo::Context> context;
  const Outcome outcome =
      connect_job(job, std::chrono::milliseconds(300), std::chrono::milliseconds(300), &context);
  EXPECT_NE(outcome.status, PLX_OK);
  EXPECT_THAT(outcome.message, HasSubstr("worker 1 of 2 in PLEXUS_CLUSTER (127.0.0.1:2) could not meet the other workers "
                                         "through worker 0's store at 127.0.0.1:1"));
}

}  // namespace
}  // namespace plexus::collectives::gloo_plugin
