#include "core/streams/spin_wait.h"

#include <gtest/gtest.h>

#include <thread>

namespace plexus::streams {
namespace {

TEST(SpinWait, ReturnsAtOnceWhenTheCounterAlreadyChanged) {
  std::atomic<uint32_t> counter{5};
  SpinWait w(true);
  w.wait(counter, 4);
  EXPECT_EQ(w.budget_micros(), SpinWait::kMaxMicros);
}

TEST(SpinWait, SlowPartnersShrinkTheSpinBudgetToZero) {
  std::atomic<uint32_t> counter{0};
  SpinWait w(true);
  // The change always comes long after the spin window (20 ms against at most 200 us, with
  // room for a loaded machine descheduling the waiter).
  for (uint32_t i = 0; i < 12; ++i) {
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      counter.fetch_add(1);
      counter.notify_all();
    });
    w.wait(counter, i);
    t.join();
  }
  EXPECT_EQ(w.budget_micros(), 0);
}

TEST(SpinWait, DisabledNeverSpinsButStillWakesUp) {
  std::atomic<uint32_t> counter{0};
  SpinWait w(false);
  std::thread t([&] {
    counter.store(1);
    counter.notify_all();
  });
  w.wait(counter, 0);
  t.join();
  EXPECT_EQ(counter.load(), 1u);
  EXPECT_EQ(w.budget_micros(), 0);
}

}  // namespace
}  // namespace plexus::streams
