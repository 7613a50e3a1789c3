// Timeout: a member that never arrives fails the call on every waiting member with
// PLX_ERR_TIMEOUT about timeout_ms after the first arrival; the message names the group
// and the missing replica(s). Other groups are not affected.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "harness.h"

namespace conformance {
namespace {

constexpr int64_t kTimeoutMs = 300;
constexpr double kTimeout = kTimeoutMs / 1000.0;
constexpr double kSlack = 3.0;  // seconds: loaded machines, sanitizers

// A waiting member's result. (Only the first arrival is sure to wait the whole timeout: the
// others' deadline is the same instant, so they may wait less; see expect_full_wait.)
void expect_timed_out(const Result& result, const std::string& group, const std::string& missing) {
  EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_TIMEOUT)) << result.message;
  EXPECT_LE(result.seconds, kTimeout + kSlack);
  EXPECT_NE(result.message.find(group), std::string::npos) << result.message;
  EXPECT_NE(result.message.find(missing), std::string::npos) << result.message;
}

// The longest wait among the members that called here is about the timeout (not much less).
// (With several processes, a process whose replicas all stayed away has nothing to check.)
void expect_full_wait(const std::vector<Result>& results) {
  double longest = 0;
  bool called = false;
  for (const Result& result : results) {
    longest = std::max(longest, result.seconds);
    called = called || result.status != PLX_OK;
  }
  if (called) {
    EXPECT_GE(longest, kTimeout * 0.9);
  }
}

TEST(Timeout, OneMemberNeverCalls) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(3);
  Comm comm(3, kTimeoutMs);
  const std::vector<int64_t> group{0, 1, 2};
  std::vector<Result> results(3);
  run_replicas(3, [&](int64_t r) {
    if (r == 2) return;  // replica 2 never arrives
    float in = 1.0f;
    float out = 0.0f;
    results[static_cast<size_t>(r)] =
        invoke(comm.get(), Call{Kind::all_reduce, group, r, &in, &out, 1});
  });
  for (int r = 0; r < 2; ++r) {
    if (!hosted(3, r)) continue;
    SCOPED_TRACE("replica " + std::to_string(r));
    expect_timed_out(results[static_cast<size_t>(r)], "{0,1,2}", "replica 2");
  }
  expect_full_wait(results);
}

TEST(Timeout, NamesEveryMissingReplica) {
  CONFORMANCE_SINGLE_PROCESS_ONLY("a process sees only which of its own replicas are missing");
  Comm comm(4, kTimeoutMs);
  const std::vector<int64_t> group{0, 1, 2, 3};
  std::vector<Result> results(4);
  run_replicas(4, [&](int64_t r) {
    if (r % 2 == 1) return;  // replicas 1 and 3 never arrive
    results[static_cast<size_t>(r)] = invoke(comm.get(), Call{Kind::barrier, group, r});
  });
  for (int r : {0, 2}) {
    SCOPED_TRACE("replica " + std::to_string(r));
    expect_timed_out(results[static_cast<size_t>(r)], "{0,1,2,3}", "replicas 1,3");
  }
  expect_full_wait(results);
}

TEST(Timeout, OnlyTheGroupWithTheMissingMemberFails) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(4);
  Comm comm(4, kTimeoutMs);
  std::vector<Result> results(4);
  run_replicas(4, [&](int64_t r) {
    if (r == 3) return;
    const std::vector<int64_t> group =
        r < 2 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{2, 3};
    int32_t in = 1;
    int32_t out = 0;
    results[static_cast<size_t>(r)] =
        invoke(comm.get(), Call{Kind::all_reduce, group, r, &in, &out, 1, PLX_DTYPE_INT32});
  });
  for (int64_t r : {0, 1}) {
    const Result& result = results[static_cast<size_t>(r)];
    if (hosted(4, r)) {
      EXPECT_EQ(result.status, PLX_OK) << result.message;
    }
  }
  if (hosted(4, 2)) {
    expect_timed_out(results[2], "{2,3}", "replica 3");
    EXPECT_GE(results[2].seconds, kTimeout * 0.9);
  }
}

TEST(Timeout, ALateMemberDoesNotHang) {
  // Replica 1 arrives after replica 0 gave up: it must not wait forever either. (An
  // all_reduce: a late barrier in another process may find its peer's earlier arrival and
  // pass, collectives_mpi/README.md.)
  CONFORMANCE_SKIP_UNLESS_SPLITS(2);
  Comm comm(2, kTimeoutMs);
  const std::vector<int64_t> group{0, 1};
  std::vector<Result> results(2);
  run_replicas(2, [&](int64_t r) {
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3 * kTimeoutMs));
    float in = 1.0f;
    float out = 0.0f;
    results[static_cast<size_t>(r)] =
        invoke(comm.get(), Call{Kind::all_reduce, group, r, &in, &out, 1});
  });
  if (hosted(2, 0)) {
    expect_timed_out(results[0], "{0,1}", "replica 1");
    EXPECT_GE(results[0].seconds, kTimeout * 0.9);
  }
  if (hosted(2, 1)) {
    EXPECT_NE(results[1].status, PLX_OK);
    EXPECT_LE(results[1].seconds, kTimeout + kSlack);
  }
}

}  // namespace
}  // namespace conformance
