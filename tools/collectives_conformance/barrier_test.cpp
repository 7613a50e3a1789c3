// barrier: no member of a group leaves barrier k before every member has entered it.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "harness.h"

namespace conformance {
namespace {

class Barrier : public testing::TestWithParam<Layout> {};

TEST_P(Barrier, NoMemberLeavesBeforeAllArrived) {
  const Layout& layout = GetParam();
  constexpr int kRounds = 30;
  CONFORMANCE_SKIP_UNLESS_SPLITS(layout.replicas);
  Comm comm(layout.replicas);
  const auto entered = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(layout.replicas));
  std::atomic<int> early{0};
  std::atomic<int> failed{0};
  run_replicas(layout.replicas, [&](int64_t r) {
    const std::vector<int64_t>& group = layout.group_of(r);
    for (int round = 1; round <= kRounds; ++round) {
      entered[static_cast<size_t>(r)].store(round);
      const Result result = invoke(comm.get(), Call{Kind::barrier, group, r});
      if (result.status != PLX_OK) {
        ADD_FAILURE() << "replica " << r << ": " << result.message;
        ++failed;
        return;
      }
      for (int64_t m : group) {  // members hosted elsewhere are not visible here
        if (hosted(layout.replicas, m) && entered[static_cast<size_t>(m)].load() < round) ++early;
      }
    }
  });
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(early.load(), 0) << "a member left a barrier before another had entered it";
}

INSTANTIATE_TEST_SUITE_P(Layouts, Barrier, testing::ValuesIn(standard_layouts()),
                         [](const testing::TestParamInfo<Layout>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace conformance
