// The Gloo plugin's job (plugins/collectives_gloo/job.h): addresses, how workers are named
// in messages, the job read from the environment, and the rendezvous of a one-worker job.
#include "job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(GlooJob, TheClusterDefinitionGivesWorkersRankAndRendezvous) {
  const ScopedEnv tf("TF_CONFIG", nullptr);
  const ScopedEnv cluster("PLEXUS_CLUSTER",
                          R"({"workers": ["10.0.0.1:29500", "10.0.0.2:29500"], "index": 1, "rendezvous": "/shared"})");
  Job job;
  ASSERT_TRUE(job_from_environment(&job).is_ok());
  EXPECT_EQ(job.size(), 2);
  EXPECT_EQ(job.rank, 1);
  EXPECT_EQ(job.rendezvous, "/shared");
  EXPECT_EQ(job.describe(0), "worker 0 of 2 in PLEXUS_CLUSTER (10.0.0.1:29500)");
}

TEST(GlooJob, AMalformedDefinitionIsInvalidArgumentNamingTheField) {
  const ScopedEnv cluster("PLEXUS_CLUSTER", R"({"workers": ["a:1"], "index": 3})");
  Job job;
  const Outcome outcome = job_from_environment(&job);
  EXPECT_EQ(outcome.status, PLX_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(outcome.message, HasSubstr("comm_create: cluster definition PLEXUS_CLUSTER: \"index\" is 3"));
}

TEST(GlooJob, WithoutADefinitionTheJobIsThisProcessAlone) {
  const ScopedEnv cluster("PLEXUS_CLUSTER", nullptr), tf("TF_CONFIG", nullptr);
  Job job;
  ASSERT_TRUE(job_from_environment(&job).is_ok());
  EXPECT_EQ(job.size(), 1);
  EXPECT_EQ(job.describe(0), "worker 0 of 1");
  std::shared_ptr<::gloo::Context> context;
  ASSERT_TRUE(connect_job(job, std::chrono::milliseconds(1000), std::chrono::milliseconds(1000), &context).is_ok());
  EXPECT_EQ(context->size, 1);
  linger(std::move(context), std::chrono::milliseconds(0));
}

TEST(GlooJob, AWorkerThatNeverComesIsATimeoutNamingTheStore) {
  const ScopedEnv cluster("PLEXUS_CLUSTER", nullptr);
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
