// Chaos (issue 21): every layout of group size 2..8 (one group, and several groups at once,
// contiguous and strided) under every fault, each member arriving after its own random
// delay. One member of the first group, picked at random, is at fault:
//   none           nobody: every call succeeds with the exact sum;
//   count, dtype,  it calls with another count, dtype or reduce op: every member of its
//   op             group fails at once (well before the timeout) with
//                  PLX_ERR_INVALID_ARGUMENT naming it and both values;
//   grouping       it calls with another group (all replicas, or its group short of one
//                  member): its group's other members fail within the timeout naming it;
//   never_arrives  it never calls: the others fail with PLX_ERR_TIMEOUT naming it;
//   aborts         its process aborts the communicator instead of calling: that process's
//                  waiters fail with PLX_ERR_CANCELLED and the reason, other processes'
//                  within the timeout.
// The other groups' calls succeed (abort aside: it ends every group), and a new
// communicator afterwards (the next session) all-reduces correctly. The random choices are
// seeded by the case's name, so every process of a multi-process run makes the same ones
// and a failure replays. Worker 0 prints one line per case: the chaos matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "plugin_under_test.h"

namespace conformance {
namespace {

constexpr int64_t kTimeoutMs = 1000;
constexpr double kTimeout = kTimeoutMs / 1000.0;
constexpr double kSlack = 3.0;   // seconds: loaded machines, sanitizers
constexpr size_t kCount = 1000;  // floats per member
constexpr int kMaxDelayMs = 20;

enum class Fault { none, count, dtype, op, grouping, never_arrives, aborts };

const char* fault_name(Fault fault) {
  static const char* const kNames[] = {"none", "count", "dtype", "op", "grouping", "never_arrives", "aborts"};
  return kNames[static_cast<int>(fault)];
}

struct ChaosCase {
  Fault fault;
  Layout layout;
  std::string name() const { return std::string(fault_name(fault)) + "_" + layout.name; }
};

void PrintTo(const ChaosCase& c, std::ostream* os) { *os << c.name(); }

// The seeded choices of one case: the member at fault (in the first group) and every
// replica's delay before it calls.
struct Plan {
  int64_t victim = 0;
  std::vector<int> delay_ms;
};

Plan make_plan(const ChaosCase& c) {
  const std::string name = c.name();
  std::seed_seq seed(name.begin(), name.end());
  std::mt19937_64 rng(seed);
  const std::vector<int64_t>& first = c.layout.groups.front();
  Plan plan;
  plan.victim = first[std::uniform_int_distribution<size_t>(0, first.size() - 1)(rng)];
  std::uniform_int_distribution<int> delay(0, kMaxDelayMs);
  for (int64_t r = 0; r < c.layout.replicas; ++r) plan.delay_ms.push_back(delay(rng));
  return plan;
}

// The group the member at fault calls with instead of its own: every replica when the
// layout has several groups, else its group short of one other member.
std::vector<int64_t> wrong_group(const Layout& layout, int64_t victim) {
  if (layout.groups.size() > 1) {
    std::vector<int64_t> all(static_cast<size_t>(layout.replicas));
    for (int64_t r = 0; r < layout.replicas; ++r) all[static_cast<size_t>(r)] = r;
    return all;
  }
  std::vector<int64_t> group = layout.groups.front();
  group.erase(std::find_if(group.begin(), group.end(), [&](int64_t m) { return m != victim; }));
  return group;
}

// Applies the fault to the victim's call.
void apply(Fault fault, const Layout& layout, Call& call) {
  switch (fault) {
    case Fault::count: call.count = kCount - 1; break;
    case Fault::dtype: call.dtype = PLX_DTYPE_INT32; break;
    case Fault::op: call.op = PLX_REDUCE_MAX; break;
    case Fault::grouping: call.group = wrong_group(layout, call.replica); break;
    default: break;
  }
}

// True when `message` names replica r: "replica r", or a list "replicas a,b,..." holding r
// (another worker's replicas, when this worker only knows that worker's part is missing).
bool names_replica(const std::string& message, int64_t r) {
  const std::string id = std::to_string(r);
  for (size_t at = message.find("replica"); at != std::string::npos; at = message.find("replica", at + 1)) {
    size_t p = at + 7;
    if (p < message.size() && message[p] == 's') ++p;
    if (p >= message.size() || message[p] != ' ') continue;
    for (++p; p < message.size() && std::isdigit(static_cast<unsigned char>(message[p]));) {
      const size_t end = message.find_first_not_of("0123456789", p);
      if (message.substr(p, end - p) == id) return true;
      if (end == std::string::npos || message[end] != ',') break;
      p = end + 1;
    }
  }
  return false;
}

// What every member of the first group must see (the member at fault's own result
// included only where the fault defines it).
void expect_first_group(const ChaosCase& c, const Plan& plan, int64_t r, const Result& result) {
  const std::string victim = "replica " + std::to_string(plan.victim);
  const bool at_fault = r == plan.victim;
  switch (c.fault) {
    case Fault::none:
      EXPECT_EQ(status_name(result.status), status_name(PLX_OK)) << result.message;
      return;
    case Fault::count:
    case Fault::dtype:
    case Fault::op: {
      static const char* const kValues[][2] = {{"999", "1000"}, {"int32", "float32"}, {"max", "sum"}};
      const auto* values = kValues[static_cast<int>(c.fault) - static_cast<int>(Fault::count)];
      EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_INVALID_ARGUMENT)) << result.message;
      EXPECT_LT(result.seconds, kTimeout) << "a disagreement must fail at once, not time out";
      for (const std::string& part : {victim, std::string(values[0]), std::string(values[1])}) {
        EXPECT_NE(result.message.find(part), std::string::npos) << "no \"" << part << "\" in: " << result.message;
      }
      return;
    }
    case Fault::grouping:
    case Fault::never_arrives:
      if (at_fault) return;  // with another group it waits for members that never come
      EXPECT_NE(result.status, PLX_OK);
      if (c.fault == Fault::never_arrives) {
        EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_TIMEOUT)) << result.message;
      }
      EXPECT_TRUE(names_replica(result.message, plan.victim)) << "no " << victim << " in: " << result.message;
      return;
    case Fault::aborts:
      if (at_fault) return;
      if (hosted(c.layout.replicas, plan.victim)) {
        EXPECT_EQ(status_name(result.status), status_name(PLX_ERR_CANCELLED)) << result.message;
        EXPECT_NE(result.message.find("chaos: " + victim + " aborts"), std::string::npos) << result.message;
      } else {  // another process: it times out or loses contact, naming that process's replicas
        EXPECT_NE(result.status, PLX_OK) << "a member on another process than the aborted one";
        EXPECT_TRUE(names_replica(result.message, plan.victim)) << "no " << victim << " in: " << result.message;
      }
      return;
  }
}

// Every member of every other group: unaffected, or ended by the abort (a cancellation
// here, a timeout or lost contact on another process).
void expect_other_group(const ChaosCase& c, const Result& result) {
  if (c.fault == Fault::aborts && result.status != PLX_OK) {
    EXPECT_FALSE(result.message.empty());
    return;
  }
  EXPECT_EQ(status_name(result.status), status_name(PLX_OK)) << result.message;
}

// The exact sum of the members' inputs (member m sends m + 1 everywhere: exact in float).
float expected_sum(const std::vector<int64_t>& group) {
  float sum = 0;
  for (int64_t m : group) sum += static_cast<float>(m + 1);
  return sum;
}

// One line of the chaos matrix: the first group's outcome (statuses, longest call).
void print_matrix_line(const ChaosCase& c, const Plan& plan, const std::vector<Result>& results) {
  if (world().index != 0) return;
  std::set<std::string> statuses;
  double longest = 0;
  for (int64_t m : c.layout.groups.front()) {
    if (!hosted(c.layout.replicas, m) || m == plan.victim) continue;
    statuses.insert(status_name(results[static_cast<size_t>(m)].status));
    longest = std::max(longest, results[static_cast<size_t>(m)].seconds);
  }
  std::string joined;
  for (const std::string& s : statuses) joined += (joined.empty() ? "" : ",") + s;
  std::printf("chaos matrix: %s x%lld %-13s %-10s groups %zu, at fault replica %lld: %s in %.2f s\n",
              plugin().name, static_cast<long long>(world().workers), fault_name(c.fault), c.layout.name.c_str(),
              c.layout.groups.size(), static_cast<long long>(plan.victim), joined.empty() ? "-" : joined.c_str(),
              longest);
}

// A new communicator (the next session) over every replica all-reduces correctly.
void expect_next_session_works(int64_t replicas) {
  Comm comm(replicas, /*timeout_ms=*/20000);
  std::vector<int64_t> all(static_cast<size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r) all[static_cast<size_t>(r)] = r;
  run_replicas(replicas, [&](int64_t r) {
    const std::vector<float> in(kCount, static_cast<float>(r + 1));
    std::vector<float> out(kCount);
    const Result result = invoke(comm.get(), Call{Kind::all_reduce, all, r, in.data(), out.data(), kCount});
    EXPECT_EQ(result.status, PLX_OK) << "the next session, replica " << r << ": " << result.message;
    EXPECT_EQ(out[kCount - 1], expected_sum(all)) << "the next session, replica " << r;
  });
}

class Chaos : public testing::TestWithParam<ChaosCase> {};

TEST_P(Chaos, EndsWithinTheTimeoutNamingTheMemberAndTheNextSessionWorks) {
  const ChaosCase& c = GetParam();
  const Layout& layout = c.layout;
  CONFORMANCE_SKIP_UNLESS_SPLITS(layout.replicas);
  const Plan plan = make_plan(c);
  std::vector<Result> results(static_cast<size_t>(layout.replicas));
  {
    Comm comm(layout.replicas, kTimeoutMs);
    run_replicas(layout.replicas, [&](int64_t r) {
      const auto i = static_cast<size_t>(r);
      std::this_thread::sleep_for(std::chrono::milliseconds(plan.delay_ms[i]));
      if (r == plan.victim && c.fault == Fault::never_arrives) return;
      if (r == plan.victim && c.fault == Fault::aborts) {
        comm.abort(("chaos: replica " + std::to_string(r) + " aborts").c_str());
        return;
      }
      const std::vector<float> in(kCount, static_cast<float>(r + 1));
      std::vector<float> out(kCount);
      Call call{Kind::all_reduce, layout.group_of(r), r, in.data(), out.data(), kCount};
      if (r == plan.victim) apply(c.fault, layout, call);
      results[i] = invoke(comm.get(), call);
      if (results[i].status == PLX_OK && call.group == layout.group_of(r)) {
        EXPECT_EQ(out[0], expected_sum(call.group)) << "replica " << r;
      }
    });
  }
  for (int64_t r = 0; r < layout.replicas; ++r) {
    if (!hosted(layout.replicas, r)) continue;
    SCOPED_TRACE("replica " + std::to_string(r) + ", member at fault " + std::to_string(plan.victim));
    const Result& result = results[static_cast<size_t>(r)];
    EXPECT_LE(result.seconds, kTimeout + kSlack) << "no call may outlast the timeout";
    if (layout.group_of(r) == layout.groups.front()) {
      expect_first_group(c, plan, r, result);
    } else {
      expect_other_group(c, result);
    }
  }
  print_matrix_line(c, plan, results);
  expect_next_session_works(layout.replicas);
}

std::vector<ChaosCase> chaos_cases() {
  std::vector<ChaosCase> cases;
  for (Fault fault : {Fault::none, Fault::count, Fault::dtype, Fault::op, Fault::grouping, Fault::never_arrives,
                      Fault::aborts}) {
    for (const Layout& layout : standard_layouts()) {
      if (layout.groups.front().size() >= 2) cases.push_back({fault, layout});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Chaos, testing::ValuesIn(chaos_cases()),
                         [](const testing::TestParamInfo<ChaosCase>& info) { return info.param.name(); });

}  // namespace
}  // namespace conformance
