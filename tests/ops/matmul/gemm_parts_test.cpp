#include "core/ops/matmul/gemm_parts.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace plexus::ops {
namespace {

// Every part runs exactly once, part 0 on the caller, and the call returns only after all.
TEST(RunParts, RunsEveryPartOnceWithPartZeroOnTheCaller) {
  for (int parts : {1, 2, 3, 8, 33}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(parts));
    std::thread::id part0;
    run_parts(parts, [&](int p) {
      if (p == 0) part0 = std::this_thread::get_id();
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // finish after the caller's part
      runs[static_cast<size_t>(p)].fetch_add(1);
    });
    EXPECT_EQ(part0, std::this_thread::get_id());
    for (int p = 0; p < parts; ++p) EXPECT_EQ(runs[static_cast<size_t>(p)].load(), 1) << parts << " parts, part " << p;
  }
}

TEST(RunParts, OneOrFewerPartsRunPartZeroAlone) {
  for (int parts : {0, 1}) {
    std::vector<int> seen;
    run_parts(parts, [&](int p) { seen.push_back(p); });
    EXPECT_EQ(seen, std::vector<int>{0});
  }
}

// Several devices splitting at once share the helpers; every call still runs all its parts.
TEST(RunParts, ConcurrentCallersEachRunAllTheirParts) {
  constexpr int kCallers = 4, kCalls = 200, kParts = 3;
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        std::atomic<int> mine{0};
        run_parts(kParts, [&](int) { mine.fetch_add(1); });
        total.fetch_add(mine.load() == kParts ? 1 : 0);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), kCallers * kCalls);
}

// A part may run on a helper thread: the parts of one call see more than one thread when
// the machine has a helper to give.
TEST(RunParts, PartsRunOnHelperThreadsWhenTheMachineHasThem) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: no helper threads";
  std::set<std::thread::id> threads;
  std::mutex mutex;
  run_parts(2, [&](int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(threads.size(), 2u);
}

// A child made by fork() has the helpers' objects but not their threads: it runs every
// part itself instead of waiting forever for a helper (Python's multiprocessing forks).
TEST(RunParts, AChildMadeByForkRunsEveryPartItself) {
  run_parts(2, [](int) {});  // the helpers run in the parent
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int> runs{0};
    run_parts(3, [&](int) { runs.fetch_add(1); });
    _exit(runs.load() == 3 ? 0 : 1);
  }
  int status = 0;
  for (int waited_ms = 0; waitpid(child, &status, WNOHANG) == 0; waited_ms += 10) {
    if (waited_ms > 20000) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      FAIL() << "the child hung in run_parts";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace plexus::ops
