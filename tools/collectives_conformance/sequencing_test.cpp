// Matching of calls: the k-th call of each member on a group meets the k-th call of the
// others; disjoint groups proceed independently; a replica may use several groups in turn;
// results do not depend on timing.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "harness.h"
#include "reference.h"

namespace conformance {
namespace {

// Sleeps a little on some replicas and rounds so that members drift apart.
void jitter(int64_t replica, int round) {
  if ((replica + round) % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  if ((replica * 7 + round) % 5 == 0) std::this_thread::yield();
}

// One all_reduce(sum) of `count` floats made from (seed, replica); returns the result.
std::vector<float> all_reduce_sum(plx_comm* comm, const std::vector<int64_t>& group,
                                  int64_t replica, uint64_t seed, size_t count) {
  const std::vector<float> in = make_values<float>(seed, replica, count);
  std::vector<float> out(count, -1.0f);
  Call call{Kind::all_reduce, group, replica, in.data(), out.data(), count};
  const Result result = invoke(comm, call);
  EXPECT_EQ(result.status, PLX_OK) << "replica " << replica << ": " << result.message;
  return out;
}

std::vector<float> expected_sum(const std::vector<int64_t>& group, uint64_t seed, size_t count) {
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> pointers;
  for (int64_t m : group) inputs.push_back(make_values<float>(seed, m, count));
  for (const auto& in : inputs) pointers.push_back(in.data());
  return reduce_reference(pointers, 0, count, PLX_REDUCE_SUM);
}

TEST(Sequencing, ManyCallsInARowMatchByPosition) {
  constexpr int64_t kReplicas = 4;
  constexpr int kRounds = 200;
  const std::vector<int64_t> group{0, 1, 2, 3};
  CONFORMANCE_SKIP_UNLESS_SPLITS(kReplicas);
  Comm comm(kReplicas);
  std::vector<std::vector<std::vector<float>>> got(kReplicas);
  run_replicas(kReplicas, [&](int64_t r) {
    for (int round = 0; round < kRounds; ++round) {
      jitter(r, round);
      const size_t count = 1 + static_cast<size_t>(round % 37);  // the count changes per round
      got[static_cast<size_t>(r)].push_back(
          all_reduce_sum(comm.get(), group, r, 100 + round, count));
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    const size_t count = 1 + static_cast<size_t>(round % 37);
    const std::vector<float> expected = expected_sum(group, 100 + round, count);
    for (int64_t r = 0; r < kReplicas; ++r) {
      if (!hosted(kReplicas, r)) continue;
      expect_bitwise_equal<float>(
          expected, got[static_cast<size_t>(r)][static_cast<size_t>(round)],
          "round " + std::to_string(round) + ", replica " + std::to_string(r));
    }
  }
}

TEST(Sequencing, AReplicaUsesSeveralGroupsInTurn) {
  constexpr int64_t kReplicas = 8;
  constexpr int kRounds = 15;
  const Layout everyone = single_group(kReplicas);
  const Layout pairs = grouping(kReplicas, 2, 1);
  const Layout strided = grouping(kReplicas, 2, 4);
  const Layout quads = grouping(kReplicas, 4, 2);
  CONFORMANCE_SKIP_UNLESS_SPLITS(kReplicas);
  Comm comm(kReplicas);
  std::atomic<int> wrong{0};
  run_replicas(kReplicas, [&](int64_t r) {
    for (int round = 0; round < kRounds; ++round) {
      for (const Layout* layout : {&everyone, &pairs, &strided, &quads}) {
        jitter(r, round);
        const std::vector<int64_t>& group = layout->group_of(r);
        const uint64_t seed = 1000 + static_cast<uint64_t>(round);
        const std::vector<float> got = all_reduce_sum(comm.get(), group, r, seed, 19);
        if (got != expected_sum(group, seed, 19)) ++wrong;
      }
      const Result barrier = invoke(comm.get(), Call{Kind::barrier, everyone.groups[0], r});
      EXPECT_EQ(barrier.status, PLX_OK) << barrier.message;
    }
  });
  EXPECT_EQ(wrong.load(), 0) << "results differ from the reference";
}

TEST(Sequencing, DisjointGroupsProceedIndependently) {
  // {0,1} makes 100 calls while {2,3} makes 3 and then waits for {0,1} to finish: if the
  // groups were coupled, {0,1} would block.
  CONFORMANCE_SINGLE_PROCESS_ONLY("the pairs wait for each other through shared memory");
  Comm comm(4);
  std::atomic<int> pair_done{0};
  run_replicas(4, [&](int64_t r) {
    const std::vector<int64_t> group =
        r < 2 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{2, 3};
    const int calls = r < 2 ? 100 : 3;
    for (int k = 0; k < calls; ++k) all_reduce_sum(comm.get(), group, r, 7 + k, 5);
    if (r < 2) {
      ++pair_done;
    } else {
      while (pair_done.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      all_reduce_sum(comm.get(), group, r, 99, 5);
    }
  });
  EXPECT_EQ(pair_done.load(), 2);
}

TEST(Sequencing, MixedCollectivesOnOneGroup) {
  constexpr int64_t kReplicas = 3;
  const std::vector<int64_t> group{0, 1, 2};
  CONFORMANCE_SKIP_UNLESS_SPLITS(kReplicas);
  Comm comm(kReplicas);
  std::vector<std::vector<int32_t>> gathered(kReplicas, std::vector<int32_t>(3 * 4));
  std::vector<std::vector<int32_t>> scattered(kReplicas, std::vector<int32_t>(4));
  std::vector<std::vector<int32_t>> broadcasted(kReplicas, std::vector<int32_t>(4));
  run_replicas(kReplicas, [&](int64_t r) {
    const auto i = static_cast<size_t>(r);
    const std::vector<int32_t> mine = make_values<int32_t>(5, r, 3 * 4);
    for (int round = 0; round < 20; ++round) {
      jitter(r, round);
      Call gather{Kind::all_gather, group, r, mine.data(), gathered[i].data(), 4, PLX_DTYPE_INT32};
      Call scatter{Kind::reduce_scatter, group,         r, mine.data(), scattered[i].data(), 4,
                   PLX_DTYPE_INT32,      PLX_REDUCE_MAX};
      Call bcast{Kind::broadcast,
                 group,
                 r,
                 mine.data(),
                 broadcasted[i].data(),
                 4,
                 PLX_DTYPE_INT32,
                 PLX_REDUCE_SUM,
                 /*root=*/round % 3};
      for (const Call& call : {gather, scatter, bcast, Call{Kind::barrier, group, r}}) {
        const Result result = invoke(comm.get(), call);
        ASSERT_EQ(result.status, PLX_OK) << kind_name(call.kind) << ": " << result.message;
      }
    }
  });
  std::vector<std::vector<int32_t>> inputs;
  std::vector<const int32_t*> pointers;
  for (int64_t r = 0; r < kReplicas; ++r) inputs.push_back(make_values<int32_t>(5, r, 12));
  for (const auto& in : inputs) pointers.push_back(in.data());
  for (size_t r = 0; r < kReplicas; ++r) {
    if (!hosted(kReplicas, static_cast<int64_t>(r))) continue;
    std::vector<int32_t> expected_gather;
    for (const auto& in : inputs)
      expected_gather.insert(expected_gather.end(), in.begin(), in.begin() + 4);
    EXPECT_EQ(gathered[r], expected_gather);
    EXPECT_EQ(scattered[r], reduce_reference(pointers, r * 4, 4, PLX_REDUCE_MAX));
    const std::vector<int32_t> root_data(inputs[19 % 3].begin(), inputs[19 % 3].begin() + 4);
    EXPECT_EQ(broadcasted[r], root_data);
  }
}

TEST(Sequencing, ResultsDoNotDependOnTiming) {
  // The same float sum, with members arriving in different orders, is bit-identical to
  // the member-order reference.
  constexpr int64_t kReplicas = 5;
  CONFORMANCE_SKIP_UNLESS_SPLITS(kReplicas);
  const std::vector<int64_t> group{0, 1, 2, 3, 4};
  const std::vector<float> expected = expected_sum(group, 77, 1001);
  for (int trial = 0; trial < 4; ++trial) {
    Comm comm(kReplicas);
    std::vector<std::vector<float>> got(kReplicas);
    run_replicas(kReplicas, [&](int64_t r) {
      // trial t delays replica (t + r) % 5 most: the arrival order changes every trial.
      std::this_thread::sleep_for(std::chrono::milliseconds(((trial + r) % kReplicas) * 3));
      got[static_cast<size_t>(r)] = all_reduce_sum(comm.get(), group, r, 77, 1001);
    });
    for (int64_t r = 0; r < kReplicas; ++r) {
      if (!hosted(kReplicas, r)) continue;
      expect_bitwise_equal<float>(
          expected, got[static_cast<size_t>(r)],
          "trial " + std::to_string(trial) + ", replica " + std::to_string(r));
    }
  }
}

}  // namespace
}  // namespace conformance
