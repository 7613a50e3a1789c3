// broadcast: every member's recv gets the root's send. Non-root members pass send = NULL
// (the ABI reads send on the root only). The root is a different member for different
// counts, and every member in turn in RootCanBeAnyMember.
#include <gtest/gtest.h>

#include "cases.h"
#include "harness.h"
#include "reference.h"

namespace conformance {
namespace {

template <typename T>
void check_broadcast(const Layout& layout, size_t count, bool in_place, size_t root_position) {
  const auto replicas = static_cast<size_t>(layout.replicas);
  CONFORMANCE_SKIP_UNLESS_SPLITS(layout.replicas);
  Comm comm(layout.replicas);
  std::vector<std::vector<T>> inputs(replicas);
  std::vector<std::vector<T>> outputs(replicas);
  std::vector<int64_t> roots(replicas);
  for (size_t r = 0; r < replicas; ++r) {
    const std::vector<int64_t>& group = layout.group_of(static_cast<int64_t>(r));
    roots[r] = group[root_position % group.size()];
    inputs[r] = make_values<T>(14, static_cast<int64_t>(r), count);
    const bool is_root = roots[r] == static_cast<int64_t>(r);
    outputs[r] = (in_place && is_root) ? inputs[r] : std::vector<T>(count, T(-7));
  }
  std::vector<Result> results(replicas);
  run_replicas(layout.replicas, [&](int64_t r) {
    const auto i = static_cast<size_t>(r);
    Call call{Kind::broadcast, layout.group_of(r), r};
    const bool is_root = roots[i] == r;
    call.send = !is_root ? nullptr : in_place ? outputs[i].data() : inputs[i].data();
    call.recv = outputs[i].data();
    call.count = count;
    call.dtype = dtype_of<T>();
    call.root = roots[i];
    results[i] = invoke(comm.get(), call);
  });
  for (size_t r = 0; r < replicas; ++r) {
    if (!hosted(layout.replicas, static_cast<int64_t>(r))) continue;
    ASSERT_EQ(results[r].status, PLX_OK) << "replica " << r << ": " << results[r].message;
  }
  for (size_t r = 0; r < replicas; ++r) {
    if (!hosted(layout.replicas, static_cast<int64_t>(r))) continue;
    expect_bitwise_equal<T>(
        inputs[static_cast<size_t>(roots[r])], outputs[r],
        "replica " + std::to_string(r) + " (root " + std::to_string(roots[r]) + ")");
  }
}

class Broadcast : public testing::TestWithParam<DataCase> {};

TEST_P(Broadcast, EveryMemberGetsTheRootsData) {
  const DataCase& c = GetParam();
  with_dtype(c.dtype, [&]<typename T>() {
    check_broadcast<T>(c.layout, c.count, c.in_place, /*root_position=*/c.count);
  });
}

INSTANTIATE_TEST_SUITE_P(Grid, Broadcast,
                         testing::ValuesIn(make_cases(Ops::none, Placement::separate, {},
                                                      {"R1", "R2", "R3", "R8", "R8_g2_s4"})),
                         case_name);

INSTANTIATE_TEST_SUITE_P(
    InPlace, Broadcast,
    testing::ValuesIn(make_cases(Ops::none, Placement::in_place,
                                 {"R1", "R2", "R3", "R8", "R8_g2_s4", "R6_g3_s2"}, {"R2"})),
    case_name);

INSTANTIATE_TEST_SUITE_P(Huge, Broadcast,
                         testing::ValuesIn(huge_cases(Ops::none, Placement::separate)), case_name);
INSTANTIATE_TEST_SUITE_P(HugeInPlace, Broadcast,
                         testing::ValuesIn(huge_cases(Ops::none, Placement::in_place)), case_name);

TEST(BroadcastRoots, RootCanBeAnyMember) {
  const Layout layout = grouping(8, 4, 2);  // {0,2,4,6},{1,3,5,7}
  for (size_t position = 0; position < 4; ++position) {
    SCOPED_TRACE("root position " + std::to_string(position));
    check_broadcast<float>(layout, 33, /*in_place=*/false, position);
    check_broadcast<int32_t>(layout, 33, /*in_place=*/true, position);
  }
}

}  // namespace
}  // namespace conformance
