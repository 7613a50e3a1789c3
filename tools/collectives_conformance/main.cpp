// plexus-collectives-conformance: checks a collectives plugin against the contract of
// collectives_plugin.h (docs/plugins.md "Testing it"). Finds the plugin (--plugin PATH or
// --plugin=PATH, else $PLEXUS_CONFORMANCE_PLUGIN), loads it, then runs the GoogleTest cases;
// GoogleTest's own flags (--gtest_filter, ...) work as usual. Listing the cases
// (--gtest_list_tests) needs no plugin.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "plugin_under_test.h"

namespace {

constexpr const char* kUsage =
    "Usage: plexus-collectives-conformance --plugin <libplexus-collectives-NAME.so> [GoogleTest flags]\n"
    "Runs the collectives conformance suite on a plugin (or set PLEXUS_CONFORMANCE_PLUGIN).\n"
    "Several processes (mpirun -np N, or one per worker with the plugin's own launch) check\n"
    "collectives across workers. GoogleTest flags: --gtest_filter=PATTERN, --gtest_list_tests, ...\n";

// The plugin path from --plugin PATH / --plugin=PATH, else the environment; "" when none.
std::string plugin_argument(int argc, char** argv) {
  constexpr std::string_view kFlag = "--plugin";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == kFlag && i + 1 < argc) return argv[i + 1];
    if (arg.substr(0, kFlag.size() + 1) == "--plugin=") return std::string(arg.substr(kFlag.size() + 1));
  }
  const char* from_env = std::getenv("PLEXUS_CONFORMANCE_PLUGIN");
  return from_env != nullptr ? from_env : "";
}

bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (asks_for_help(argc, argv)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  testing::InitGoogleTest(&argc, argv);
  if (testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  const std::string path = plugin_argument(argc, argv);
  if (path.empty()) {
    std::fprintf(stderr, "plexus-collectives-conformance: no plugin given\n%s", kUsage);
    return 2;
  }
  const std::string problem = conformance::load_plugin(path);
  if (!problem.empty()) {
    std::fprintf(stderr, "plexus-collectives-conformance: cannot load the collectives plugin: %s\n", problem.c_str());
    return 1;
  }
  std::printf("collectives plugin under test: %s (%s)\n", conformance::plugin().name, path.c_str());
  return RUN_ALL_TESTS();
}
