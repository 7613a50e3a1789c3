// Cluster definitions (core/plugin_host/cluster.h; seed 002's TF_CONFIG launch): the
// workers of a job started by hand, every malformed definition refused with the variable and
// the field named, and the definition as plx_comm_config carries it to a plugin. Which
// definition wins over the MPI launcher's variables is tests/runtime/workers_test.cpp; that
// the session's plugin gets it, collectives_test.cpp.
#include "core/plugin_host/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/scoped_env.h"

namespace plexus::plugin_host {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using plexus::test::ScopedEnv;

// The message of the std::invalid_argument that parsing `text` as `source` throws.
std::string refusal(const char* text, const char* source) {
  try {
    parse_cluster(text, source);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << text << " was accepted";
  return "";
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

TEST(Cluster, PlexusClusterComesBeforeTfConfig) {
  const ScopedEnv tf("TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})");
  {
    const ScopedEnv plexus("PLEXUS_CLUSTER", R"({"workers": ["a:1", "b:1", "c:1"], "index": 1})");
    EXPECT_EQ(cluster_from_environment()->source, "PLEXUS_CLUSTER");
    EXPECT_EQ(cluster_from_environment()->workers.size(), 3u);
  }
  EXPECT_EQ(cluster_from_environment()->source, "TF_CONFIG");
  const ScopedEnv no_tf("TF_CONFIG", nullptr);
  EXPECT_FALSE(cluster_from_environment().has_value());
}

TEST(Cluster, FieldsLendTheDefinitionToAConfig) {
  ClusterFields fields(parse_cluster(R"({"workers": ["a:1", "b:2", "c:3"], "index": 2, "rendezvous": "/j"})",
                                     "PLEXUS_CLUSTER"));
  plx_comm_config config{};
  config.timeout_ms = 7;
  fields.fill(config);
  ASSERT_EQ(config.num_worker_addresses, 3);
  EXPECT_THAT(std::vector<std::string>(config.worker_addresses, config.worker_addresses + 3),
              ElementsAre("a:1", "b:2", "c:3"));
  EXPECT_EQ(config.worker_index, 2);
  EXPECT_STREQ(config.rendezvous, "/j");
  EXPECT_STREQ(config.cluster_source, "PLEXUS_CLUSTER");
  EXPECT_EQ(config.timeout_ms, 7);  // the caller's fields stay
  EXPECT_EQ(config.struct_size, 0u);

  ClusterFields no_rendezvous(
      parse_cluster(R"({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 1}})", "TF_CONFIG"));
  no_rendezvous.fill(config);
  EXPECT_EQ(config.num_worker_addresses, 2);
  EXPECT_STREQ(config.worker_addresses[1], "h:2");
  EXPECT_EQ(config.worker_index, 1);
  EXPECT_EQ(config.rendezvous, nullptr);
  EXPECT_STREQ(config.cluster_source, "TF_CONFIG");

  const ClusterFields none;
  none.fill(config);
  EXPECT_EQ(config.worker_addresses, nullptr);
  EXPECT_EQ(config.num_worker_addresses, 0);
  EXPECT_EQ(config.worker_index, 0);
  EXPECT_EQ(config.rendezvous, nullptr);
  EXPECT_EQ(config.cluster_source, nullptr);
}

}  // namespace
}  // namespace plexus::plugin_host
