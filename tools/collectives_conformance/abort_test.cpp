// abort(comm, reason): every waiting call fails with PLX_ERR_CANCELLED and a message
// containing the reason, and so does every later call; it may come from any thread.
#include <gtest/gtest.h>

#include <thread>

#include "harness.h"
#include "plugin_under_test.h"

namespace conformance {
namespace {

constexpr double kPrompt = 5.0;  // seconds: far below the 60 s timeout of these comms

void expect_cancelled(const Result& result, const std::string& reason) {
  EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_CANCELLED)) << result.message;
  EXPECT_NE(result.message.find(reason), std::string::npos) << result.message;
  EXPECT_LT(result.seconds, kPrompt);
}

// Every process aborts its own communicator (abort is local to a process).
TEST(Abort, WakesEveryWaiter) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(3);
  Comm comm(3);
  const std::vector<int64_t> group{0, 1, 2};
  std::vector<Result> results(3);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    comm.abort("replica 2 failed: out of data");
  });
  run_replicas(3, [&](int64_t r) {
    if (r == 2) return;  // the failing replica
    float in = 1.0f;
    float out = 0.0f;
    results[static_cast<size_t>(r)] =
        invoke(comm.get(), Call{Kind::all_reduce, group, r, &in, &out, 1});
  });
  aborter.join();
  for (int64_t r : {0, 1}) {
    if (hosted(3, r)) {
      expect_cancelled(results[static_cast<size_t>(r)], "replica 2 failed: out of data");
    }
  }
}

TEST(Abort, WakesWaitersOfEveryGroup) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(4);
  Comm comm(4);
  std::vector<Result> results(4);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    comm.abort("stop");
  });
  run_replicas(4, [&](int64_t r) {
    if (r % 2 == 1) return;  // 0 waits in {0,1}, 2 in {2,3}
    results[static_cast<size_t>(r)] = invoke(comm.get(), Call{Kind::barrier, {r, r + 1}, r});
  });
  aborter.join();
  for (int64_t r : {0, 2}) {
    if (hosted(4, r)) expect_cancelled(results[static_cast<size_t>(r)], "stop");
  }
}

TEST(Abort, LaterCallsFailToo) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(2);
  Comm comm(2);
  comm.abort("shutting down");
  std::vector<Result> results(2);
  run_replicas(2, [&](int64_t r) {
    int32_t in = 1;
    int32_t out = 0;
    results[static_cast<size_t>(r)] =
        invoke(comm.get(), Call{Kind::all_reduce, {0, 1}, r, &in, &out, 1, PLX_DTYPE_INT32});
  });
  for (int64_t r : {0, 1}) {
    if (!hosted(2, r)) continue;
    expect_cancelled(results[static_cast<size_t>(r)], "shutting down");
    // A group of one never waits, yet fails the same way.
    expect_cancelled(invoke(comm.get(), Call{Kind::barrier, {r}, r}), "shutting down");
  }
}

TEST(Abort, ConcurrentAbortsAndNullReasonAreSafe) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(2);
  Comm comm(2);
  run_replicas(4, [&](int64_t r) { comm.abort(r % 2 == 0 ? nullptr : "many aborts"); });
  const int64_t mine = world().index * (2 / world().workers);  // this process's first replica
  const Result result = invoke(comm.get(), Call{Kind::barrier, {mine}, mine});
  EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_CANCELLED)) << result.message;
  plugin().abort(nullptr, "no communicator");  // ignored, no crash
}

}  // namespace
}  // namespace conformance
