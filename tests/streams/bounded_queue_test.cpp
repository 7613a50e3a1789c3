#include "core/streams/bounded_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "core/ir/error.h"

namespace plexus::streams {
namespace {

std::byte* as_bytes(int64_t& v) { return reinterpret_cast<std::byte*>(&v); }

TEST(BoundedQueue, ItemsArriveInOrderAcrossThreadsWhateverTheCapacity) {
  for (size_t capacity : {1u, 2u, 4u}) {
    BoundedQueue q("q", sizeof(int64_t), capacity, false);
    constexpr int64_t kItems = 2000;
    std::thread producer([&] {
      for (int64_t i = 0; i < kItems; ++i) q.push(as_bytes(i));
    });
    for (int64_t i = 0; i < kItems; ++i) {
      int64_t v = -1;
      q.pop(as_bytes(v));
      ASSERT_EQ(v, i) << "capacity " << capacity;
    }
    producer.join();
  }
}

TEST(BoundedQueue, AFullQueueBlocksItsProducerInsteadOfGrowing) {
  BoundedQueue q("q", 8, 2, false);
  int64_t v = 7;
  q.push(as_bytes(v));
  q.push(as_bytes(v));
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.try_producer_slot(), nullptr);
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    q.push(as_bytes(v));
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(pushed);  // still waiting: back-pressure
  q.pop(as_bytes(v));
  producer.join();
  EXPECT_TRUE(pushed);
  EXPECT_EQ(q.size(), 2u);
}

TEST(BoundedQueue, ZeroCopySlotsAreAlignedAndReused) {
  BoundedQueue q("q", 100, 3, false);
  std::vector<std::byte*> seen;
  for (int round = 0; round < 2; ++round) {
    for (int k = 0; k < 3; ++k) {
      std::byte* slot = q.producer_slot();
      EXPECT_EQ(reinterpret_cast<uintptr_t>(slot) % 64, 0u);
      std::memset(slot, k, 100);
      if (round == 0) seen.push_back(slot);
      EXPECT_EQ(slot, seen[static_cast<size_t>(k)]);
      q.commit();
    }
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(q.consumer_slot()[99], static_cast<std::byte>(k));
      q.release();
    }
  }
  EXPECT_EQ(q.try_consumer_slot(), nullptr);
}

TEST(BoundedQueue, ItemsProducedByIndexAreReadInTheirSlotsWhileTheConsumerHoldsSeveral) {
  // The in-place pattern: two producers take turns by index (the io thread and a device
  // that produces an item itself), item k always in slot k % capacity, committed in
  // index order; the consumer holds 2 items at once and releases the oldest first.
  constexpr size_t kCapacity = 3;
  constexpr uint64_t kItems = 3000;
  BoundedQueue q("q", sizeof(uint64_t), kCapacity, true);
  std::atomic<uint64_t> claimed{0};
  auto produce = [&](uint64_t k, std::byte* slot) { std::memcpy(slot, &k, sizeof k); };
  std::thread io([&] {
    for (;;) {
      uint64_t k = claimed.load();
      if (k == kItems) return;
      std::byte* slot = q.try_producer_slot_at(k);
      if (slot == nullptr || !claimed.compare_exchange_strong(k, k + 1)) continue;
      produce(k, slot);
      q.commit_at(k);
    }
  });
  for (uint64_t k = 0; k < kItems; ++k) {
    uint64_t expected = k;
    if (k % 5 == 0 && q.committed() <= k && claimed.compare_exchange_strong(expected, k + 1)) {
      produce(k, q.slot_of(k));  // the consumer produces this one itself
      q.commit_at(k);
    }
    uint64_t v = 0;
    std::memcpy(&v, q.consumer_item(k), sizeof v);
    ASSERT_EQ(v, k);
    ASSERT_EQ(q.slot_of(k), q.slot_of(k + kCapacity));
    if (k >= 1) q.release();  // holds items k-1 and k
  }
  q.release();
  io.join();
  EXPECT_EQ(q.size(), 0u);
}

TEST(BoundedQueue, AbortWakesAWaitingConsumerWithCancelledNamingTheQueue) {
  BoundedQueue q("stream 'x' of replica 1", 8, 2, true);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    q.abort();
  });
  try {
    q.consumer_slot();
    FAIL() << "expected Cancelled";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Cancelled);
    EXPECT_NE(std::string(e.what()).find("stream 'x' of replica 1"), std::string::npos) << e.what();
  }
  aborter.join();
  q.reset();
  int64_t v = 3;
  q.push(as_bytes(v));
  EXPECT_EQ(q.size(), 1u);
}

TEST(BoundedQueue, DoorbellRingsOnEveryCommitAndRelease) {
  BoundedQueue q("q", 8, 2, false);
  std::atomic<uint32_t> bell{0};
  q.set_doorbell(&bell);
  int64_t v = 1;
  q.push(as_bytes(v));
  q.pop(as_bytes(v));
  EXPECT_EQ(bell.load(), 2u);
}

TEST(BoundedQueue, BuffersLargerThanTheMachineAreRefusedNamingTheQueue) {
  for (const size_t item_bytes : {size_t{1} << 42, SIZE_MAX - 1}) {
    try {
      BoundedQueue q("stream 'images' of replica 0", item_bytes, 3, false);
      FAIL() << "expected OutOfDeviceMemory for items of " << item_bytes << " bytes";
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), ir::ErrorCode::OutOfDeviceMemory);
      EXPECT_NE(std::string(e.what()).find("the buffers of queue stream 'images' of replica 0"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace plexus::streams
