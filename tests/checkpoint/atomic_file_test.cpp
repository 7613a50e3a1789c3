#include "core/checkpoint/atomic_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/ir/error.h"
#include "tests/checkpoint/checkpoint_test_util.h"

namespace plexus::checkpoint {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using test_util::read_bytes;
using test_util::TempDir;
using test_util::to_bytes;
using test_util::write_bytes;

std::string read_string(const std::string& path) {
  const std::vector<std::byte> b = read_bytes(path);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Names of the files in `dir`, sorted.
std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(AtomicFile, TempFileSitsNextToTheTargetUntilCommit) {
  TempDir dir;
  const std::string target = dir.file("a.ckpt");
  AtomicFile f(target);
  EXPECT_THAT(f.temp_path(), StartsWith(target + ".tmp-" + std::to_string(::getpid()) + "-"));
  EXPECT_TRUE(fs::exists(f.temp_path()));
  EXPECT_FALSE(fs::exists(target));
  f.write_at(3, "defg", 4);  // any order
  f.write_at(0, "abc", 3);
  EXPECT_FALSE(fs::exists(target));
  f.commit();
  EXPECT_EQ(read_string(target), "abcdefg");
  EXPECT_FALSE(fs::exists(f.temp_path()));
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"a.ckpt"});
}

TEST(AtomicFile, CommitReplacesTheTarget) {
  TempDir dir;
  const std::string target = dir.file("a.ckpt");
  write_bytes(target, to_bytes("the old checkpoint, longer than the new one"));
  {
    AtomicFile f(target);
    f.write_at(0, "new", 3);
    EXPECT_EQ(read_string(target), "the old checkpoint, longer than the new one");
    f.commit();
  }
  EXPECT_EQ(read_string(target), "new");
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"a.ckpt"});
}

TEST(AtomicFile, DestroyedWithoutCommitLeavesTheOldFileAndNoTemp) {
  TempDir dir;
  const std::string target = dir.file("a.ckpt");
  std::vector<std::byte> old(4096 + 3);
  for (size_t i = 0; i < old.size(); ++i) old[i] = static_cast<std::byte>(i * 7);
  write_bytes(target, old);
  std::string temp;
  {
    AtomicFile f(target);
    temp = f.temp_path();
    f.write_at(0, "partial new contents", 20);
    EXPECT_TRUE(fs::exists(temp));
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_EQ(read_bytes(target), old);
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"a.ckpt"});
}

TEST(AtomicFile, DestroyedWithoutCommitAndNoOldFileLeavesNothing) {
  TempDir dir;
  {
    AtomicFile f(dir.file("a.ckpt"));
    f.write_at(0, "x", 1);
  }
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(AtomicFile, TwoWritersGetTheirOwnTempFilesAndTheLastCommitWins) {
  TempDir dir;
  const std::string target = dir.file("a.ckpt");
  AtomicFile a(target), b(target);
  EXPECT_NE(a.temp_path(), b.temp_path());
  a.write_at(0, "first", 5);
  b.write_at(0, "second", 6);
  a.commit();
  EXPECT_EQ(read_string(target), "first");
  b.commit();
  EXPECT_EQ(read_string(target), "second");
  EXPECT_EQ(listing(dir.path()), std::vector<std::string>{"a.ckpt"});
}

// The id of a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

TEST(AtomicFile, CommitRemovesTemporariesOfDeadSaversOfTheSameTarget) {
  TempDir dir;
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(::getpid());
  const std::vector<std::string> names = {"a.ckpt.tmp-" + dead + "-0",    "a.ckpt.tmp-" + dead + "-17",
                                          "a.ckpt.tmp-" + alive + "-99",  "b.ckpt.tmp-" + dead + "-0",
                                          "a.ckpt.tmp-x",                 "a.ckpt.old"};
  for (const std::string& name : names) {
    write_bytes(dir.file(name), to_bytes("stale"));
  }
  AtomicFile f(dir.file("a.ckpt"));
  f.write_at(0, "new", 3);
  f.commit();
  // Another live process's (here: this one's) temporary, another target's and names
  // without a pid stay.
  EXPECT_EQ(listing(dir.path()), (std::vector<std::string>{"a.ckpt", "a.ckpt.old", "a.ckpt.tmp-" + alive + "-99",
                                                           "a.ckpt.tmp-x", "b.ckpt.tmp-" + dead + "-0"}));
}

TEST(AtomicFile, TargetInAMissingDirectoryIsAnIoErrorNamingTheFile) {
  TempDir dir;
  const std::string target = dir.file("missing/a.ckpt");
  try {
    AtomicFile f(target);
    FAIL() << "created " << f.temp_path();
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Io);
    EXPECT_THAT(e.what(), StartsWith("checkpoint '" + target + "': cannot create the temporary file '" + target + ".tmp-"));
    EXPECT_THAT(e.what(), HasSubstr("' (No such file or directory)"));
  }
  EXPECT_TRUE(listing(dir.path()).empty());
}

TEST(AtomicFile, FailedRenameIsAnIoErrorAndRemovesTheTemp) {
  TempDir dir;
  const std::string target = dir.file("a.ckpt");
  fs::create_directory(target);  // a directory is in the way
  fs::create_directory(target + "/inside");
  std::string temp;
  try {
    AtomicFile f(target);
    temp = f.temp_path();
    f.write_at(0, "data", 4);
    f.commit();
    FAIL() << "renamed a file over a non-empty directory";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Io);
    EXPECT_THAT(e.what(), StartsWith("checkpoint '" + target + "': cannot rename '" + temp + "' over it ("));
  }
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_TRUE(fs::is_directory(target + "/inside"));
}

TEST(AtomicFile, RelativePathCommitsInTheCurrentDirectory) {
  TempDir dir;
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  {
    AtomicFile f("rel.ckpt");
    f.write_at(0, "r", 1);
    f.commit();  // fsyncs "." as the directory
  }
  fs::current_path(cwd);
  EXPECT_EQ(read_string(dir.file("rel.ckpt")), "r");
}

}  // namespace
}  // namespace plexus::checkpoint
