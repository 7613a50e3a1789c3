// Finding and loading plugin files (core/plugin_host/plugin_library.cpp): the search order
// (PLEXUS_PLUGIN_PATH, <folder of libplexus.so>/plexus, the folder itself), the override,
// and the errors for a missing plugin, a file that is no shared library, a missing symbol
// and a bad name. Plugin trees are laid out in a temporary folder with copies of the
// build's collectives plugin (PLEXUS_BUILD_PLUGIN_DIR).
#include "core/plugin_host/plugin_library.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/ir/error.h"
#include "tests/error_of.h"
#include "tests/scoped_env.h"

namespace plexus::plugin_host {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;

const std::string kLocal = "libplexus-collectives-local.so";

using test::ScopedEnv;

// A temporary folder, removed with everything in it at the end of the test.
class PluginLibraryFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "plexus_plugin_library.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  // Copies the build's local collectives plugin into root/<folder>; returns the copy's path.
  std::string put_local_plugin(const std::string& folder) const {
    fs::create_directories(root_ / folder);
    const fs::path to = root_ / folder / kLocal;
    fs::copy_file(fs::path(PLEXUS_BUILD_PLUGIN_DIR) / kLocal, to);
    return to.string();
  }

  std::string dir(const std::string& folder) const { return (root_ / folder).string(); }

  fs::path root_;
};

TEST(PluginLibrarySearchPath, OverrideThenInstallFolderThenLibraryFolder) {
  const auto folders = PluginLibrary::search_path("/a::/b:", "/pfx/lib");
  ASSERT_EQ(folders.size(), 4u);
  EXPECT_EQ(folders[0].path, "/a");
  EXPECT_EQ(folders[0].why, "PLEXUS_PLUGIN_PATH");
  EXPECT_EQ(folders[1].path, "/b");
  EXPECT_EQ(folders[1].why, "PLEXUS_PLUGIN_PATH");
  EXPECT_EQ(folders[2].path, "/pfx/lib/plexus");
  EXPECT_EQ(folders[2].why, "install folder");
  EXPECT_EQ(folders[3].path, "/pfx/lib");
  EXPECT_EQ(folders[3].why, "next to libplexus.so");
}

TEST(PluginLibrarySearchPath, UnsetOrEmptyOverrideAddsNothing) {
  EXPECT_EQ(PluginLibrary::search_path(nullptr, "/pfx/lib").size(), 2u);
  EXPECT_EQ(PluginLibrary::search_path("", "/pfx/lib").size(), 2u);
  EXPECT_EQ(PluginLibrary::search_path(":::", "/pfx/lib").size(), 2u);
}

TEST(PluginLibrarySearchPath, UnknownLibraryFolderLeavesTheOverrideOnly) {
  const auto folders = PluginLibrary::search_path("/a", "");
  ASSERT_EQ(folders.size(), 1u);
  EXPECT_EQ(folders[0].path, "/a");
  EXPECT_TRUE(PluginLibrary::search_path(nullptr, "").empty());
}

TEST(PluginLibrarySearchPath, LibraryFolderIsTheFolderOfTheFileHoldingTheCore) {
  // The core is linked into this test program, so "libplexus.so" is the executable here.
  EXPECT_EQ(PluginLibrary::library_folder(), fs::canonical("/proc/self/exe").parent_path().string());
}

TEST(PluginLibrarySearchPath, ReadsTheEnvironmentAtEachCall) {
  const std::string own = PluginLibrary::library_folder();
  {
    ScopedEnv env("PLEXUS_PLUGIN_PATH", "/x:/y");
    const auto folders = PluginLibrary::search_path();
    ASSERT_EQ(folders.size(), 4u);
    EXPECT_EQ(folders[0].path, "/x");
    EXPECT_EQ(folders[1].path, "/y");
    EXPECT_EQ(folders[2].path, own + "/plexus");
    EXPECT_EQ(folders[3].path, own);
  }
  ScopedEnv env("PLEXUS_PLUGIN_PATH", nullptr);
  const auto folders = PluginLibrary::search_path();
  ASSERT_EQ(folders.size(), 2u);
  EXPECT_EQ(folders[0].path, own + "/plexus");
}

TEST_F(PluginLibraryFiles, InstallLayoutFindsThePluginBesideTheLibrary) {
  const std::string installed = put_local_plugin("lib/plexus");
  put_local_plugin("lib");  // a second copy next to the library is found only after it
  const PluginLibrary lib = PluginLibrary::open("collectives", "local", PluginLibrary::search_path(nullptr, dir("lib")));
  EXPECT_EQ(lib.path(), installed);
  EXPECT_NE(lib.symbol("plx_collectives_plugin_v1"), nullptr);
}

TEST_F(PluginLibraryFiles, BuildTreeLayoutFindsThePluginNextToTheLibrary) {
  const std::string beside = put_local_plugin("lib");
  const PluginLibrary lib = PluginLibrary::open("collectives", "local", PluginLibrary::search_path(nullptr, dir("lib")));
  EXPECT_EQ(lib.path(), beside);
}

TEST_F(PluginLibraryFiles, OverrideWinsOverTheInstall) {
  put_local_plugin("lib/plexus");
  const std::string override_copy = put_local_plugin("mine");
  const std::string list = dir("empty") + ":" + dir("mine");
  const PluginLibrary lib = PluginLibrary::open("collectives", "local", PluginLibrary::search_path(list.c_str(), dir("lib")));
  EXPECT_EQ(lib.path(), override_copy);
}

TEST_F(PluginLibraryFiles, CopiesShareTheLoadedLibrary) {
  put_local_plugin("lib/plexus");
  std::optional<PluginLibrary> first = PluginLibrary::open("collectives", "local", PluginLibrary::search_path(nullptr, dir("lib")));
  const PluginLibrary copy = *first;
  void* entry = first->symbol("plx_collectives_plugin_v1");
  first.reset();
  EXPECT_EQ(copy.symbol("plx_collectives_plugin_v1"), entry);
}

TEST_F(PluginLibraryFiles, MissingPluginNamesTheFileAndEveryFolderSearched) {
  const std::string list = dir("a") + ":" + dir("b");
  const ir::Error e = error_of(
      [&] { PluginLibrary::open("collectives", "nccl", PluginLibrary::search_path(list.c_str(), dir("lib"))); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  const std::string file = "libplexus-collectives-nccl.so";
  EXPECT_THAT(e.what(), HasSubstr("collectives plugin 'nccl' not found; looked for " + file + " in:"));
  EXPECT_THAT(e.what(), HasSubstr(dir("a") + "/" + file + " (PLEXUS_PLUGIN_PATH)"));
  EXPECT_THAT(e.what(), HasSubstr(dir("b") + "/" + file + " (PLEXUS_PLUGIN_PATH)"));
  EXPECT_THAT(e.what(), HasSubstr(dir("lib/plexus") + "/" + file + " (install folder)"));
  EXPECT_THAT(e.what(), HasSubstr(dir("lib") + "/" + file + " (next to libplexus.so)"));
}

TEST(PluginLibraryOpen, NoFolderToSearchSaysWhy) {
  const ir::Error e = error_of([] { PluginLibrary::open("strategy", "pipelined", {}); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("strategy plugin 'pipelined' not found"));
  EXPECT_THAT(e.what(), HasSubstr("PLEXUS_PLUGIN_PATH is unset and the folder of libplexus.so is unknown"));
}

TEST_F(PluginLibraryFiles, FileThatIsNoSharedLibraryIsAnErrorWithTheLoadersReason) {
  fs::create_directories(dir("lib/plexus"));
  const std::string broken = dir("lib/plexus") + "/libplexus-collectives-broken.so";
  std::ofstream(broken) << std::string(256, 'x');  // longer than an ELF header, not one
  const ir::Error e = error_of(
      [&] { PluginLibrary::open("collectives", "broken", PluginLibrary::search_path(nullptr, dir("lib"))); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("collectives plugin 'broken': cannot load " + broken + ": "));
  EXPECT_THAT(e.what(), HasSubstr("invalid ELF header"));  // dlerror()'s reason
}

TEST_F(PluginLibraryFiles, BrokenFileFirstIsNotPassedOverForALaterCopy) {
  // The first file found is the one meant: a later good copy does not hide its fault.
  fs::create_directories(dir("lib/plexus"));
  std::ofstream(dir("lib/plexus") + "/" + kLocal) << "truncated";
  put_local_plugin("lib");
  const ir::Error e = error_of(
      [&] { PluginLibrary::open("collectives", "local", PluginLibrary::search_path(nullptr, dir("lib"))); });
  EXPECT_THAT(e.what(), HasSubstr("cannot load " + dir("lib/plexus") + "/" + kLocal));
}

TEST_F(PluginLibraryFiles, OpenFileLoadsAFileOfAnyNameFromItsPath) {
  const std::string copy = dir("elsewhere") + "/plugin_under_test.so";
  fs::rename(put_local_plugin("elsewhere"), copy);
  const PluginLibrary lib = PluginLibrary::open_file("collectives", copy);
  EXPECT_EQ(lib.path(), copy);
  EXPECT_NE(lib.symbol("plx_collectives_plugin_v1"), nullptr);
}

TEST_F(PluginLibraryFiles, OpenFileOfAMissingFileOrAFolderNamesThePath) {
  const std::string missing = dir("nowhere") + "/libplexus-strategy-mine.so";
  const ir::Error e = error_of([&] { PluginLibrary::open_file("strategy", missing); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("strategy plugin " + missing + ": no such file"));
  fs::create_directories(dir("folder"));
  EXPECT_THAT(error_of([&] { PluginLibrary::open_file("strategy", dir("folder")); }).what(),
              HasSubstr("strategy plugin " + dir("folder") + ": not a file"));
}

TEST_F(PluginLibraryFiles, OpenFileOfNoSharedLibraryGivesTheLoadersReason) {
  fs::create_directories(dir("x"));
  const std::string broken = dir("x") + "/broken.so";
  std::ofstream(broken) << std::string(256, 'x');
  const ir::Error e = error_of([&] { PluginLibrary::open_file("strategy", broken); });
  EXPECT_THAT(e.what(), HasSubstr("strategy plugin: cannot load " + broken + ": "));
  EXPECT_THAT(e.what(), HasSubstr("invalid ELF header"));
}

TEST_F(PluginLibraryFiles, MissingSymbolNamesTheSymbolAndTheFile) {
  const std::string installed = put_local_plugin("lib/plexus");
  const PluginLibrary lib = PluginLibrary::open("collectives", "local", PluginLibrary::search_path(nullptr, dir("lib")));
  const ir::Error e = error_of([&] { lib.symbol("plx_collectives_plugin_v7"); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("plugin " + installed + " does not export the symbol 'plx_collectives_plugin_v7'"));
}

TEST(PluginLibraryOpen, BadNamesAreRefusedBeforeSearching) {
  for (const char* name : {"", "../../etc/evil", "a/b", "a.so", "a b"}) {
    const ir::Error e = error_of([&] { PluginLibrary::open("collectives", name, {{"/tmp", "test"}}); });
    EXPECT_EQ(e.code(), ir::ErrorCode::Plugin) << name;
    EXPECT_THAT(e.what(), HasSubstr("collectives plugin name '" + std::string(name) + "' is not valid")) << name;
  }
}

}  // namespace
}  // namespace plexus::plugin_host
