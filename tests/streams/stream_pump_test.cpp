#include "core/streams/stream_pump.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <thread>

#include "core/ir/error.h"

namespace plexus::streams {
namespace {

// A consumer thread plays the device: pops N feed items, pushes N results.
TEST(StreamPump, FeedsAheadAndDrainsInOrderOnTheIoThreads) {
  for (int threads : {1, 2}) {
    IoService io(threads);
    StreamPump pump(io, false);
    constexpr int64_t kItems = 500;
    BoundedQueue in_a("a", 8, 2, false), in_b("b", 8, 2, false), out("out", 8, 2, false);
    std::vector<int64_t> delivered;
    std::atomic<int64_t> claimed_a{0}, claimed_b{0};
    std::vector<Feed> feeds;
    for (auto [q, claimed] : {std::pair{&in_a, &claimed_a}, std::pair{&in_b, &claimed_b}}) {
      feeds.push_back({q, kItems, [](int64_t k, std::byte* slot) { std::memcpy(slot, &k, 8); }, claimed});
    }
    std::vector<Drain> drains{{&out, kItems, [&](int64_t, const std::byte* slot) {
                                 int64_t v;
                                 std::memcpy(&v, slot, 8);
                                 delivered.push_back(v);
                               }}};
    pump.start(std::move(feeds), std::move(drains), [](std::exception_ptr) { FAIL(); });
    for (int64_t k = 0; k < kItems; ++k) {
      int64_t a = -1, b = -1;
      in_a.pop(reinterpret_cast<std::byte*>(&a));
      in_b.pop(reinterpret_cast<std::byte*>(&b));
      ASSERT_EQ(a, k);
      ASSERT_EQ(b, k);
      const int64_t r = a * 10;
      out.push(reinterpret_cast<const std::byte*>(&r));
    }
    pump.wait();
    pump.detach();
    ASSERT_EQ(delivered.size(), static_cast<size_t>(kItems));
    for (int64_t k = 0; k < kItems; ++k) EXPECT_EQ(delivered[static_cast<size_t>(k)], 10 * k);
  }
}

TEST(StreamPump, AFailingProducerIsReportedOnceAndStopsThePump) {
  IoService io(1);
  StreamPump pump(io, false);
  BoundedQueue q("q", 8, 2, false);
  int reports = 0;
  std::atomic<int64_t> claimed{0};
  std::vector<Feed> feeds{{&q, 10,
                           [](int64_t k, std::byte*) {
                             if (k == 3) throw ir::Error(ir::ErrorCode::Runtime, "source broke at 3");
                           },
                           &claimed}};
  pump.start(std::move(feeds), {}, [&](std::exception_ptr e) {
    ++reports;
    try {
      std::rethrow_exception(e);
    } catch (const ir::Error& err) {
      EXPECT_STREQ(err.what(), "source broke at 3");
    }
    q.abort();
  });
  std::byte item[8];
  EXPECT_THROW(
      for (int k = 0; k < 10; ++k) q.pop(item), ir::Error);  // 3 items, then the abort
  pump.wait();
  pump.detach();
  EXPECT_EQ(reports, 1);
}

// Found by the C API sequence fuzzer (tests/abi/sequence_fuzz): a session destroyed as its
// run begins aborts the pump from the destroying thread while the run's thread is in
// start(), rebuilding the shares; abort() walked the vector as it grew (a moved-from, null
// share: UBSan's null member access). abort() is safe during start() (ThreadSanitizer runs
// this test: scripts/test.sh).
TEST(StreamPump, AbortWhileStartingIsSafe) {
  IoService io(8);
  StreamPump pump(io, false);
  std::atomic<bool> done{false};
  std::thread aborter([&] {
    while (!done.load()) pump.abort();
  });
  for (int run = 0; run < 300; ++run) {
    pump.start({}, {}, [](std::exception_ptr) {});
    pump.wait();
    pump.detach();
  }
  done = true;
  aborter.join();
}

}  // namespace
}  // namespace plexus::streams
