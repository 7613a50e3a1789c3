// The collectives plugin loader (core/plugin_host/plugin_library.cpp, collectives.cpp): how a
// plugin is found and chosen, and clear errors for missing or broken plugins (built in
// tests/plugins/mock).
#include "core/plugin_host/collectives.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <plexus/collectives_plugin.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "core/ir/error.h"
#include "tests/scoped_env.h"

namespace plexus::plugin_host {
namespace {

using ::testing::HasSubstr;

using test::ScopedEnv;

std::string plugin_path_with_mocks() {
  std::string path = PLEXUS_MOCK_PLUGIN_DIR;
  path += ':';
  if (const char* build = std::getenv("PLEXUS_PLUGIN_PATH")) path += build;
  return path;
}

ir::Error load_error(const std::string& name) {
  try {
    Collectives c(name, 2, 0, 2, 1000);
  } catch (const ir::Error& e) {
    return e;
  }
  return ir::Error(ir::ErrorCode::Internal, "no error");
}

TEST(Collectives, LoadsTheLocalPluginByDefault) {
  Collectives c("", 2, 0, 2, 1000);
  EXPECT_EQ(c.name(), "local");
  EXPECT_THAT(c.path(), HasSubstr("libplexus-collectives-local.so"));
  EXPECT_EQ(c.communicator(1)->replica(), 1);
}

TEST(Collectives, EnvironmentChoosesThePluginAndTheOptionWins) {
  ScopedEnv path("PLEXUS_PLUGIN_PATH", plugin_path_with_mocks());
  ScopedEnv env("PLEXUS_COLLECTIVES", "mock_wrong_abi");
  EXPECT_EQ(load_error("").code(), ir::ErrorCode::Plugin);  // the environment's choice was loaded
  Collectives c("local", 2, 0, 2, 1000);                          // an explicit name wins
  EXPECT_EQ(c.name(), "local");
}

TEST(Collectives, MissingPluginNamesTheFileAndEveryFolderSearched) {
  ScopedEnv path("PLEXUS_PLUGIN_PATH", "/nonexistent/a:/nonexistent/b");
  const ir::Error e = load_error("nccl");
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("collectives plugin 'nccl' not found"));
  EXPECT_THAT(e.what(), HasSubstr("libplexus-collectives-nccl.so"));
  EXPECT_THAT(e.what(), HasSubstr("/nonexistent/a/libplexus-collectives-nccl.so (PLEXUS_PLUGIN_PATH)"));
  EXPECT_THAT(e.what(), HasSubstr("/nonexistent/b/"));
  EXPECT_THAT(e.what(), HasSubstr("(next to libplexus.so)"));
  EXPECT_THAT(e.what(), HasSubstr("(install folder)"));
}

TEST(Collectives, BadNamesAreRefusedBeforeSearching) {
  EXPECT_THAT(load_error("../../etc/evil").what(), HasSubstr("is not valid"));
}

struct BrokenCase {
  const char* name;
  const char* message;
};

class BrokenPlugins : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(BrokenPlugins, AreRefusedWithAClearError) {
  ScopedEnv path("PLEXUS_PLUGIN_PATH", plugin_path_with_mocks());
  const ir::Error e = load_error(GetParam().name);
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin) << e.what();
  EXPECT_THAT(e.what(), HasSubstr(std::string("libplexus-collectives-") + GetParam().name + ".so"));
  EXPECT_THAT(e.what(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Loader, BrokenPlugins,
    ::testing::Values(BrokenCase{"mock_wrong_abi", "ABI version 99, this Plexus needs 1"},
                      BrokenCase{"mock_no_symbol", "does not export the symbol 'plx_collectives_plugin_v1'"},
                      BrokenCase{"mock_failing_init", "comm_create failed (11): mock: no network today"},
                      BrokenCase{"mock_null_entry", "table entry 'all_gather' is NULL"},
                      BrokenCase{"mock_small_table", "is smaller than the"},
                      BrokenCase{"mock_null_table", "plx_collectives_plugin_v1() returned NULL"}),
    [](const ::testing::TestParamInfo<BrokenCase>& info) { return std::string(info.param.name); });

// The core passes the plugin the cluster definition it was given, the addresses in worker
// order (plugin ABI 1.1), and NULL / 0 without one.
TEST(Collectives, ThePluginGetsTheClusterDefinitionInItsConfig) {
  ScopedEnv path("PLEXUS_PLUGIN_PATH", plugin_path_with_mocks());
  const auto message = [](std::optional<ClusterDefinition> cluster) -> std::string {
    try {
      Collectives c("mock_echo_config", 4, 2, 2, 1000, false, std::move(cluster));
    } catch (const ir::Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string size = "struct_size " + std::to_string(sizeof(plx_comm_config));
  EXPECT_THAT(message(ClusterDefinition{{"10.0.0.1:29500", "10.0.0.2:29500"}, 1, "/shared", "TF_CONFIG"}),
              HasSubstr(size + ", workers 2 [10.0.0.1:29500 10.0.0.2:29500], index 1, rendezvous /shared, source TF_CONFIG"));
  EXPECT_THAT(message(ClusterDefinition{{"h:1", "h:2"}, 1, "", "PLEXUS_CLUSTER"}),
              HasSubstr("workers 2 [h:1 h:2], index 1, rendezvous NULL, source PLEXUS_CLUSTER"));
  EXPECT_THAT(message(std::nullopt), HasSubstr(size + ", workers 0 [], index 0, rendezvous NULL, source NULL"));
}

TEST(Collectives, PluginErrorsInCallsBecomeErrorsNamingTheCollective) {
  Collectives c("local", 2, 0, 2, 1000);
  float x = 1.0f, y = 0.0f;
  const int64_t group[] = {0, 1};
  try {
    c.communicator(0)->all_reduce(group, &x, &y, 1, ir::DType::UInt8, replication::ReduceOp::Sum);
    FAIL();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("collective all_reduce (local plugin), replica 0"));
  }
}

}  // namespace
}  // namespace plexus::plugin_host
