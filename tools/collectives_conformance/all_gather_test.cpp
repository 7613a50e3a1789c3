// all_gather: every member's recv holds the members' sends, member i's at i * count.
#include <gtest/gtest.h>

#include "cases.h"
#include "harness.h"
#include "reference.h"

namespace conformance {
namespace {

template <typename T>
void check_all_gather(const DataCase& c) {
  const Layout& layout = c.layout;
  const auto replicas = static_cast<size_t>(layout.replicas);
  CONFORMANCE_SKIP_UNLESS_SPLITS(layout.replicas);
  Comm comm(layout.replicas);
  std::vector<std::vector<T>> inputs(replicas);
  std::vector<std::vector<T>> outputs(replicas);
  for (size_t r = 0; r < replicas; ++r) {
    const size_t g = layout.group_of(static_cast<int64_t>(r)).size();
    inputs[r] = make_values<T>(12, static_cast<int64_t>(r), c.count);
    outputs[r].assign(g * c.count, T(-7));
  }
  std::vector<Result> results(replicas);
  run_replicas(layout.replicas, [&](int64_t r) {
    const auto i = static_cast<size_t>(r);
    Call call{Kind::all_gather, layout.group_of(r), r};
    call.send = inputs[i].data();
    call.recv = outputs[i].data();
    call.count = c.count;
    call.dtype = dtype_of<T>();
    results[i] = invoke(comm.get(), call);
  });
  for (size_t r = 0; r < replicas; ++r) {
    if (!hosted(layout.replicas, static_cast<int64_t>(r))) continue;
    ASSERT_EQ(results[r].status, PLX_OK) << "replica " << r << ": " << results[r].message;
  }
  for (const std::vector<int64_t>& group : layout.groups) {
    std::vector<T> expected;
    for (int64_t m : group) {
      const std::vector<T>& in = inputs[static_cast<size_t>(m)];
      expected.insert(expected.end(), in.begin(), in.end());
    }
    for (int64_t m : group) {
      if (!hosted(layout.replicas, m)) continue;
      expect_bitwise_equal<T>(expected, outputs[static_cast<size_t>(m)],
                              "replica " + std::to_string(m));
    }
  }
}

class AllGather : public testing::TestWithParam<DataCase> {};

TEST_P(AllGather, EveryMemberGetsEverySendInMemberOrder) {
  with_dtype(GetParam().dtype, [&]<typename T>() { check_all_gather<T>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Grid, AllGather,
                         testing::ValuesIn(make_cases(Ops::none, Placement::separate, {},
                                                      {"R1", "R2", "R3", "R8_g2_s4"})),
                         case_name);

INSTANTIATE_TEST_SUITE_P(Huge, AllGather,
                         testing::ValuesIn(huge_cases(Ops::none, Placement::separate)), case_name);

}  // namespace
}  // namespace conformance
