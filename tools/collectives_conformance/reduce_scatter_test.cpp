// reduce_scatter: member p's recv = op over the members' send[p*count, (p+1)*count), in
// member order, bit for bit equal to the serial reference.
#include <gtest/gtest.h>

#include "cases.h"
#include "harness.h"
#include "reference.h"

namespace conformance {
namespace {

template <typename T>
void check_reduce_scatter(const DataCase& c) {
  const Layout& layout = c.layout;
  const auto replicas = static_cast<size_t>(layout.replicas);
  CONFORMANCE_SKIP_UNLESS_SPLITS(layout.replicas);
  Comm comm(layout.replicas);
  std::vector<std::vector<T>> inputs(replicas);
  std::vector<std::vector<T>> outputs(replicas);
  for (size_t r = 0; r < replicas; ++r) {
    const size_t g = layout.group_of(static_cast<int64_t>(r)).size();
    inputs[r] = make_values<T>(13, static_cast<int64_t>(r), g * c.count);
    outputs[r].assign(c.count, T(-7));
  }
  std::vector<Result> results(replicas);
  run_replicas(layout.replicas, [&](int64_t r) {
    const auto i = static_cast<size_t>(r);
    Call call{Kind::reduce_scatter, layout.group_of(r), r};
    call.send = inputs[i].data();
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
    for (size_t p = 0; p < group.size(); ++p) {
      if (!hosted(layout.replicas, group[p])) continue;
      const std::vector<T> expected = reduce_reference(member_inputs, p * c.count, c.count, c.op);
      expect_bitwise_equal<T>(
          expected, outputs[static_cast<size_t>(group[p])],
          "replica " + std::to_string(group[p]) + " (position " + std::to_string(p) + ")");
    }
  }
}

class ReduceScatter : public testing::TestWithParam<DataCase> {};

TEST_P(ReduceScatter, EachMemberGetsItsBlockReducedInMemberOrder) {
  with_dtype(GetParam().dtype, [&]<typename T>() { check_reduce_scatter<T>(GetParam()); });
}

INSTANTIATE_TEST_SUITE_P(Grid, ReduceScatter,
                         testing::ValuesIn(make_cases(Ops::all, Placement::separate, {},
                                                      {"R1", "R2", "R3", "R8_g2_s4"})),
                         case_name);

INSTANTIATE_TEST_SUITE_P(Huge, ReduceScatter,
                         testing::ValuesIn(huge_cases(Ops::all, Placement::separate)), case_name);

}  // namespace
}  // namespace conformance
