// The conformance suite's main: finds the plugin to test (--plugin=PATH, else
// $PLEXUS_CONFORMANCE_PLUGIN), loads it, then runs the tests. Listing the tests
// (--gtest_list_tests, as CMake's test discovery does) needs no plugin.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "plugin_under_test.h"

namespace {

std::string plugin_argument(int argc, char** argv) {
  constexpr std::string_view kFlag = "--plugin=";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.substr(0, kFlag.size()) == kFlag) return std::string(arg.substr(kFlag.size()));
  }
  const char* from_env = std::getenv("PLEXUS_CONFORMANCE_PLUGIN");
  return from_env != nullptr ? from_env : "";
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  const std::string path = plugin_argument(argc, argv);
  if (path.empty()) {
    std::fprintf(stderr,
                 "usage: %s --plugin=<libplexus-collectives-NAME.so> [gtest flags]\n"
                 "       (or set PLEXUS_CONFORMANCE_PLUGIN)\n",
                 argv[0]);
    return 2;
  }
  const std::string problem = conformance::load_plugin(path);
  if (!problem.empty()) {
    std::fprintf(stderr, "cannot load the collectives plugin: %s\n", problem.c_str());
    return 1;
  }
  std::printf("collectives plugin under test: %s (%s)\n", conformance::plugin().name, path.c_str());
  return RUN_ALL_TESTS();
}
