// all_reduce: every member receives op over the members' send, reduced in member order,
// bit for bit equal to the serial reference (and so to every other member's result).
#include <gtest/gtest.h>

#include "cases.h"
#include "harness.h"
#include "reference.h"

namespace conformance {
namespace {

template <typename T>
void check_all_reduce(const DataCase& c) {
  const Layout& layout = c.layout;
  const auto replicas = static_cast<size_t>(layout.replicas);
  CONFORMANCE_SKIP_UNLESS_SPLITS(layout.replicas);
  Comm comm(layout.replicas);
  std::vector<std::vector<T>> inputs(replicas);
  std::vector<std::vector<T>> outputs(replicas);
  for (size_t r = 0; r < replicas; ++r) {
    inputs[r] = make_values<T>(11, static_cast<int64_t>(r), c.count);
    outputs[r] = c.in_place ? inputs[r] : std::vector<T>(c.count, T(-7));
  }
  std::vector<Result> results(replicas);
  run_replicas(layout.replicas, [&](int64_t r) {
    const auto i = static_cast<size_t>(r);
    Call call{Kind::all_reduce, layout.group_of(r), r};
    call.send = c.in_place ? outputs[i].data() : inputs[i].data();
    call.recv = outputs[i].data();
    call.count = c.count;
    call.dtype = dtype_of<T>();
    call.op = c.op;
    results[i] = invoke(comm.get(), call);
  });
  for (size_t r = 0; r < replicas; ++r) {
    if (!hosted(layout.replicas, static_cast<int64_t>(r))) continue;
    ASSERT_EQ(results[r].status, PLX_OK) << "replica " << r << ": " << results[r].message;
  }
  for (const std::vector<int64_t>& group : layout.groups) {
    std::vector<const T*> member_inputs;
    for (int64_t m : group) member_inputs.push_back(inputs[static_cast<size_t>(m)].data());
    const std::vector<T> expected = reduce_reference(member_inputs, 0, c.count, c.op);
    for (int64_t m : group) {
      if (!hosted(layout.replicas, m)) continue;
      const std::vector<T>& got = outputs[static_cast<size_t>(m)];
      expect_bitwise_equal<T>(expected, got, "replica " + std::to_string(m) + " vs reference");
    }
  }
}

class AllReduce : public testing::TestWithParam<DataCase> {};

TEST_P(AllReduce, EveryMemberGetsTheMemberOrderReduction) {
  with_dtype(GetParam().dtype, [&]<typename T>() { check_all_reduce<T>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Grid, AllReduce,
                         testing::ValuesIn(make_cases(Ops::all, Placement::separate, {},
                                                      {"R1", "R2", "R3", "R8", "R8_g2_s4"})),
                         case_name);

// send == recv: the same results.
INSTANTIATE_TEST_SUITE_P(
    InPlace, AllReduce,
    testing::ValuesIn(make_cases(Ops::all, Placement::in_place,
                                 {"R1", "R2", "R3", "R8", "R8_g2_s4", "R6_g3_s2"}, {"R2"})),
    case_name);

INSTANTIATE_TEST_SUITE_P(Huge, AllReduce,
                         testing::ValuesIn(huge_cases(Ops::all, Placement::separate)), case_name);
INSTANTIATE_TEST_SUITE_P(HugeInPlace, AllReduce,
                         testing::ValuesIn(huge_cases(Ops::all, Placement::in_place)), case_name);

}  // namespace
}  // namespace conformance
