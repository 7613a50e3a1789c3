// Cluster definitions in the environment (core/runtime/cluster.h; seed 002's TF_CONFIG
// launch): the workers of a job started by hand, and every malformed definition refused
// with the variable and the field named.
#include "core/runtime/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/ir/error.h"
#include "core/runtime/workers.h"
#include "tests/error_of.h"
#include "tests/scoped_env.h"

namespace plexus::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using plexus::test::ScopedEnv;

// The message of the InvalidArgument that parsing `text` as `source` throws.
std::string refusal(const char* text, const char* source) {
  const ir::Error e = plexus::test::error_of([&] { parse_cluster(text, source); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument) << e.what();
  return e.what();
}

TEST(Cluster, PlexusClusterGivesWorkersIndexAndRendezvous) {
  const ClusterDefinition c = parse_cluster(
      R"({"workers": ["10.0.0.1:4000", "10.0.0.2:4000", "10.0.0.3:4000"], "index": 2, "rendezvous": "/shared/job"})",
      "PLEXUS_CLUSTER");
  EXPECT_THAT(c.workers, ElementsAre("10.0.0.1:4000", "10.0.0.2:4000", "10.0.0.3:4000"));
  EXPECT_EQ(c.index, 2);
  EXPECT_EQ(c.rendezvous, "/shared/job");
  EXPECT_EQ(c.source, "PLEXUS_CLUSTER");
}

TEST(Cluster, TfConfigGivesTheWorkerTaskList) {
  const ClusterDefinition c = parse_cluster(
      R"({"cluster": {"worker": ["host1:2222", "host2:2222"], "ps": ["host3:2222"]}, "task": {"type": "worker", "index": 1}})",
      "TF_CONFIG");
  EXPECT_THAT(c.workers, ElementsAre("host1:2222", "host2:2222"));
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.rendezvous, "");
}

TEST(Cluster, MalformedDefinitionsNameTheVariableAndTheField) {
  const std::pair<const char*, const char*> plexus_cases[] = {
      {"{", "not valid JSON"},
      {"[]", "the definition is not a JSON object"},
      {R"({"index": 0})", "no \"workers\" in the definition"},
      {R"({"workers": [], "index": 0})", "\"workers\" must be a non-empty list"},
      {R"({"workers": ["nohost"], "index": 0})", "\"workers\" holds \"nohost\", not a \"host:port\" string"},
      {R"({"workers": ["a:1", "b:1"]})", "no \"index\" in the definition"},
      {R"({"workers": ["a:1", "b:1"], "index": 2})", "\"index\" is 2, not a worker in [0, 2)"},
      {R"({"workers": ["a:1"], "index": "0"})", "\"index\" is \"0\""},
      {R"({"workers": ["a:1"], "index": 0, "rendezvous": ""})", "\"rendezvous\" must be a folder path"},
  };
  for (const auto& [text, expected] : plexus_cases) {
    EXPECT_THAT(refusal(text, "PLEXUS_CLUSTER"), HasSubstr(std::string("cluster definition PLEXUS_CLUSTER: ") + expected))
        << text;
  }
  const std::pair<const char*, const char*> tf_cases[] = {
      {R"({"task": {"type": "worker", "index": 0}})", "no \"cluster\" in the definition"},
      {R"({"cluster": {"ps": ["a:1"]}, "task": {"type": "worker", "index": 0}})", "no \"worker\" in \"cluster\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}})",
       "\"task\".\"type\" is \"chief\"; Plexus runs \"worker\" tasks only"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})", "\"task\".\"index\" is -1"},
  };
  for (const auto& [text, expected] : tf_cases) {
    EXPECT_THAT(refusal(text, "TF_CONFIG"), HasSubstr(std::string("cluster definition TF_CONFIG: ") + expected))
        << text;
  }
}

TEST(Cluster, PlexusClusterComesBeforeTfConfigAndTheMpiLauncher) {
  const ScopedEnv ompi_size("OMPI_COMM_WORLD_SIZE", "4"), ompi_rank("OMPI_COMM_WORLD_RANK", "3");
  const ScopedEnv tf("TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})");
  {
    const ScopedEnv plexus("PLEXUS_CLUSTER", R"({"workers": ["a:1", "b:1", "c:1"], "index": 1})");
    EXPECT_EQ(cluster_from_environment()->source, "PLEXUS_CLUSTER");
    EXPECT_EQ(workers_from_environment().count, 3);
    EXPECT_EQ(workers_from_environment().index, 1);
  }
  EXPECT_EQ(cluster_from_environment()->source, "TF_CONFIG");
  EXPECT_EQ(workers_from_environment().count, 2);
  EXPECT_EQ(workers_from_environment().index, 0);
}

TEST(Cluster, NoDefinitionLeavesTheLauncherVariables) {
  const ScopedEnv plexus("PLEXUS_CLUSTER", nullptr), tf("TF_CONFIG", nullptr);
  const ScopedEnv ompi_size("OMPI_COMM_WORLD_SIZE", "4"), ompi_rank("OMPI_COMM_WORLD_RANK", "3");
  EXPECT_FALSE(cluster_from_environment().has_value());
  EXPECT_EQ(workers_from_environment().count, 4);
  EXPECT_EQ(workers_from_environment().index, 3);
}

}  // namespace
}  // namespace plexus::runtime
