// Agreement: when one member's call differs from the others' (collective, count, dtype,
// op, root, buffer kind), the call fails on EVERY member with PLX_ERR_INVALID_ARGUMENT and
// a message naming the group, the replica and the values; nobody hangs, and the group
// stays usable for the next (agreeing) call.
#include <gtest/gtest.h>

#include <functional>

#include "harness.h"
#include "reference.h"

namespace conformance {
namespace {

struct MismatchCase {
  std::string name;
  Kind kind;                               // what replicas 0 and 2 call
  std::function<void(Call&)> change;       // what replica 1 does differently
  std::vector<std::string> message_parts;  // every member's message contains these
};

void PrintTo(const MismatchCase& c, std::ostream* os) { *os << c.name; }

class Mismatch : public testing::TestWithParam<MismatchCase> {};

// What replicas 0 and 2 pass: small enough for a cross-worker plugin to send the data
// with the call (collectives_workers/call_exchange.h), so a mismatch is found in the
// message that carries the data.
constexpr size_t kCount = 100;
// A count whose data does not travel with the call (3 x 100,000 floats), for replica 1.
constexpr size_t kLargestCount = 100000;

TEST_P(Mismatch, FailsOnEveryMemberAndNamesTheValues) {
  const MismatchCase& c = GetParam();
  constexpr int64_t kReplicas = 3;
  const std::vector<int64_t> group{0, 1, 2};
  CONFORMANCE_SKIP_UNLESS_SPLITS(kReplicas);
  Comm comm(kReplicas, /*timeout_ms=*/20000);
  std::vector<std::vector<float>> send(kReplicas, std::vector<float>(3 * kLargestCount, 1.0f));
  std::vector<std::vector<float>> recv(kReplicas, std::vector<float>(3 * kLargestCount));
  std::vector<Result> results(kReplicas);
  std::vector<Result> after(kReplicas);
  run_replicas(kReplicas, [&](int64_t r) {
    const auto i = static_cast<size_t>(r);
    Call call{c.kind, group, r, send[i].data(), recv[i].data(), kCount};
    if (r == 1) c.change(call);
    results[i] = invoke(comm.get(), call);
    // The group still works: the next call agrees and succeeds.
    after[i] = invoke(comm.get(),
                      Call{Kind::all_reduce, group, r, send[i].data(), recv[i].data(), kCount});
  });
  for (size_t r = 0; r < kReplicas; ++r) {
    if (!hosted(kReplicas, static_cast<int64_t>(r))) continue;
    SCOPED_TRACE("replica " + std::to_string(r));
    EXPECT_EQ(status_name(results[r].status), status_name(PLX_ERR_INVALID_ARGUMENT));
    EXPECT_LT(results[r].seconds, 10.0) << "a mismatch must fail at once, not time out";
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(results[r].message.find(part), std::string::npos)
          << "message lacks \"" << part << "\": " << results[r].message;
    }
    EXPECT_EQ(after[r].status, PLX_OK) << after[r].message;
    EXPECT_EQ(recv[r][0], 3.0f);
  }
}

std::vector<MismatchCase> mismatch_cases() {
  return {
      {"count",
       Kind::all_reduce,
       [](Call& c) { c.count = 99; },
       {"{0,1,2}", "replica 1", "99", "100"}},
      {"count_too_large_to_travel_with_the_call",
       Kind::all_reduce,
       [](Call& c) { c.count = kLargestCount; },
       {"{0,1,2}", "replica 1", "100000", "100"}},
      {"dtype",
       Kind::all_reduce,
       [](Call& c) { c.dtype = PLX_DTYPE_INT32; },
       {"{0,1,2}", "replica 1", "int32", "float32"}},
      {"op",
       Kind::all_reduce,
       [](Call& c) { c.op = PLX_REDUCE_MAX; },
       {"{0,1,2}", "replica 1", "max", "sum"}},
      {"reduce_scatter_op",
       Kind::reduce_scatter,
       [](Call& c) { c.op = PLX_REDUCE_MIN; },
       {"{0,1,2}", "replica 1", "min", "sum"}},
      {"all_gather_count",
       Kind::all_gather,
       [](Call& c) { c.count = 7; },
       {"{0,1,2}", "replica 1", "7", "100"}},
      {"broadcast_root",
       Kind::broadcast,
       [](Call& c) { c.root = 2; },
       {"{0,1,2}", "replica 1", "root"}},
      {"collective",
       Kind::all_reduce,
       [](Call& c) { c.kind = Kind::all_gather; },
       {"{0,1,2}", "replica 1", "all_gather", "all_reduce"}},
      {"barrier_vs_all_reduce",
       Kind::all_reduce,
       [](Call& c) { c.kind = Kind::barrier; },
       {"{0,1,2}", "replica 1", "barrier", "all_reduce"}},
      {"buffer_kind",
       Kind::all_reduce,
       [](Call& c) { c.buffer_kind = PLX_BUFFER_HOST; },
       {"{0,1,2}", "replica 1"}},
  };
}

INSTANTIATE_TEST_SUITE_P(Fields, Mismatch, testing::ValuesIn(mismatch_cases()),
                         [](const testing::TestParamInfo<MismatchCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace conformance
