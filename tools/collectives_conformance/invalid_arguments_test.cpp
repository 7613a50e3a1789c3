// Invalid arguments fail at once with PLX_ERR_INVALID_ARGUMENT and a message, never a
// crash or a wait: NULL buffers with count > 0, bad groups, a caller outside the group or
// the communicator, bad dtype / op / buffer kind / root, overlapping buffers where the
// ABI forbids it, a too-small struct_size.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <functional>

#include "harness.h"
#include "plugin_under_test.h"

namespace conformance {
namespace {

constexpr int64_t kReplicas = 4;
constexpr size_t kCount = 8;
constexpr double kPrompt = 5.0;  // seconds; the comm's timeout is 30 s

struct InvalidCase {
  std::string name;
  Kind kind;
  std::function<void(plx_coll_args&)> change;
  bool writes_message = true;  // false when args cannot be trusted (struct_size too small)
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

const int64_t kUnsorted[] = {2, 1};
const int64_t kDuplicate[] = {1, 1};
const int64_t kOutOfRange[] = {1, 4};
const int64_t kNegative[] = {-1, 1};
const int64_t kWithoutCaller[] = {0, 2};

void use_members(plx_coll_args& a, const int64_t* members, size_t size) {
  a.group.members = members;
  a.group.size = size;
}

class InvalidArguments : public testing::TestWithParam<InvalidCase> {};

// Argument checks are each caller's own: the single-process runs of every plugin cover them.
TEST_P(InvalidArguments, FailPromptlyWithAMessage) {
  CONFORMANCE_SINGLE_PROCESS_ONLY("names replicas of a single-process layout");
  const InvalidCase& c = GetParam();
  Comm comm(kReplicas, /*timeout_ms=*/30000);
  std::vector<float> send(4 * kCount, 1.0f);
  std::vector<float> recv(4 * kCount, 0.0f);
  // A valid call of replica 1 on the group {1}, then the case's change.
  Call call{c.kind, {1}, 1, send.data(), recv.data(), kCount};
  call.root = 1;
  char message[512];
  std::memset(message, 'x', sizeof(message));
  message[sizeof(message) - 1] = '\0';
  plx_coll_args args = make_args(call, message, sizeof(message));
  c.change(args);
  const Result result = invoke_raw(c.kind, comm.get(), &args);
  EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_INVALID_ARGUMENT));
  EXPECT_LT(result.seconds, kPrompt);
  if (c.writes_message) {
    EXPECT_GT(std::strlen(message), 0u);
    EXPECT_EQ(std::string(message).find("xxxx"), std::string::npos) << "no message written";
  }
}

std::vector<InvalidCase> invalid_cases() {
  const auto r = Kind::all_reduce;
  return {
      {"null_send", r, [](plx_coll_args& a) { a.send = nullptr; }},
      {"null_recv", r, [](plx_coll_args& a) { a.recv = nullptr; }},
      {"empty_group", r, [](plx_coll_args& a) { a.group.size = 0; }},
      {"null_members", r, [](plx_coll_args& a) { a.group.members = nullptr; }},
      {"members_not_increasing", r, [](plx_coll_args& a) { use_members(a, kUnsorted, 2); }},
      {"duplicate_members", r, [](plx_coll_args& a) { use_members(a, kDuplicate, 2); }},
      {"member_out_of_range", r, [](plx_coll_args& a) { use_members(a, kOutOfRange, 2); }},
      {"negative_member", r, [](plx_coll_args& a) { use_members(a, kNegative, 2); }},
      {"caller_not_a_member", r, [](plx_coll_args& a) { use_members(a, kWithoutCaller, 2); }},
      {"replica_outside_the_comm", r, [](plx_coll_args& a) { a.replica = 9; }},
      {"negative_replica", r, [](plx_coll_args& a) { a.replica = -1; }},
      {"dtype_uint8", r, [](plx_coll_args& a) { a.dtype = PLX_DTYPE_UINT8; }},
      {"dtype_unknown", r, [](plx_coll_args& a) { a.dtype = 99; }},
      {"op_unknown", r, [](plx_coll_args& a) { a.op = 4; }},
      {"op_negative", r, [](plx_coll_args& a) { a.op = -1; }},
      {"buffer_kind_unknown", r, [](plx_coll_args& a) { a.buffer_kind = 2; }},
      {"struct_size_too_small", r,
       [](plx_coll_args& a) { a.struct_size = offsetof(plx_coll_args, message); }, false},
      {"reduce_scatter_op_unknown", Kind::reduce_scatter, [](plx_coll_args& a) { a.op = 17; }},
      {"reduce_scatter_null_send", Kind::reduce_scatter,
       [](plx_coll_args& a) { a.send = nullptr; }},
      {"reduce_scatter_overlap", Kind::reduce_scatter,
       [](plx_coll_args& a) { a.recv = const_cast<void*>(a.send); }},
      {"all_gather_null_recv", Kind::all_gather, [](plx_coll_args& a) { a.recv = nullptr; }},
      {"all_gather_overlap", Kind::all_gather, [](plx_coll_args& a) { a.send = a.recv; }},
      {"all_gather_dtype_unknown", Kind::all_gather, [](plx_coll_args& a) { a.dtype = 0; }},
      {"broadcast_root_not_a_member", Kind::broadcast, [](plx_coll_args& a) { a.root = 3; }},
      {"broadcast_root_null_send", Kind::broadcast, [](plx_coll_args& a) { a.send = nullptr; }},
      {"broadcast_null_recv", Kind::broadcast, [](plx_coll_args& a) { a.recv = nullptr; }},
      {"barrier_caller_not_a_member", Kind::barrier,
       [](plx_coll_args& a) { use_members(a, kWithoutCaller, 2); }},
      {"barrier_bad_group", Kind::barrier, [](plx_coll_args& a) { use_members(a, kUnsorted, 2); }},
  };
}

INSTANTIATE_TEST_SUITE_P(Cases, InvalidArguments, testing::ValuesIn(invalid_cases()),
                         [](const testing::TestParamInfo<InvalidCase>& info) {
                           return info.param.name;
                         });

TEST(InvalidArgumentsRaw, NullArgsAndNullComm) {
  CONFORMANCE_SINGLE_PROCESS_ONLY("calls as replica 0");
  Comm comm(2);
  for (Kind kind :
       {Kind::all_reduce, Kind::all_gather, Kind::reduce_scatter, Kind::broadcast, Kind::barrier}) {
    SCOPED_TRACE(kind_name(kind));
    EXPECT_EQ(invoke_raw(kind, comm.get(), nullptr).status, PLX_ERR_INVALID_ARGUMENT);
    const Result no_comm = invoke(nullptr, Call{kind, {0}, 0});
    EXPECT_EQ(no_comm.status, PLX_ERR_INVALID_ARGUMENT);
    EXPECT_FALSE(no_comm.message.empty());
  }
}

TEST(ValidEdgeCases, CountZeroAcceptsNullBuffers) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(2);
  Comm comm(2);
  run_replicas(2, [&](int64_t r) {
    for (Kind kind : {Kind::all_reduce, Kind::all_gather, Kind::reduce_scatter, Kind::broadcast}) {
      const Result result = invoke(comm.get(), Call{kind, {0, 1}, r, nullptr, nullptr, 0});
      EXPECT_EQ(result.status, PLX_OK) << kind_name(kind) << ": " << result.message;
    }
  });
}

TEST(ValidEdgeCases, LargerStructSizeFromANewerCallerIsAccepted) {
  CONFORMANCE_SKIP_UNLESS_SPLITS(1);
  Comm comm(1);
  struct Newer {
    plx_coll_args args;
    char appended_fields[32];
  } newer{};
  float in[3] = {1, 2, 3};
  float out[3] = {};
  char message[256] = "";
  const Call call{Kind::all_reduce, {0}, 0, in, out, 3};  // make_args borrows call.group
  newer.args = make_args(call, message, sizeof(message));
  newer.args.struct_size = sizeof(newer);
  EXPECT_EQ(invoke_raw(Kind::all_reduce, comm.get(), &newer.args).status, PLX_OK) << message;
  EXPECT_EQ(out[2], 3.0f);
}

TEST(Messages, AreTruncatedToTheCapacityAndTerminated) {
  CONFORMANCE_SINGLE_PROCESS_ONLY("calls as replica 0");
  Comm comm(2);
  for (size_t capacity : {size_t{1}, size_t{2}, size_t{12}}) {
    char message[32];
    std::memset(message, 'x', sizeof(message));
    const Call call{Kind::barrier, {0, 2}, 0};  // replica 2 is outside the comm
    plx_coll_args args = make_args(call, message, capacity);
    EXPECT_EQ(invoke_raw(Kind::barrier, comm.get(), &args).status, PLX_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(std::strlen(message), capacity - 1) << "capacity " << capacity;
    EXPECT_EQ(message[capacity], 'x') << "wrote past the capacity";
  }
}

}  // namespace
}  // namespace conformance
