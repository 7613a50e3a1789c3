#include "core/runtime/virtual_device.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <stdexcept>
#include <thread>

namespace plexus::runtime {
namespace {

TEST(VirtualDevice, RunsWorkOnItsOwnNamedThread) {
  for (bool spin : {false, true}) {
    VirtualDevice device(3, 128, spin);
    std::thread::id worker;
    char name[16] = {};
    device.execute([&] {
      worker = std::this_thread::get_id();
      pthread_getname_np(pthread_self(), name, sizeof name);
    });
    EXPECT_NE(worker, std::this_thread::get_id());
    EXPECT_STREQ(name, "plx-dev3");
    EXPECT_EQ(device.arena().capacity(), 128u);
  }
}

TEST(VirtualDevice, ManyHandOversInARow) {
  VirtualDevice device(0, 0, true);
  int count = 0;
  const std::function<void()> work = [&] { ++count; };
  for (int i = 0; i < 10000; ++i) device.execute(work);
  EXPECT_EQ(count, 10000);
}

TEST(VirtualDevice, ExceptionsReachTheCallerAndTheDeviceKeepsWorking) {
  VirtualDevice device(0, 0, false);
  EXPECT_THROW(device.execute([] { throw std::runtime_error("kernel failed"); }), std::runtime_error);
  bool ran = false;
  device.execute([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(VirtualDevice, SubmitThenWaitOverlapsWithTheCaller) {
  VirtualDevice a(0, 0, false), b(1, 0, false);
  std::atomic<int> done{0};
  const std::function<void()> work = [&] { done.fetch_add(1); };
  a.submit(work);
  b.submit(work);
  a.wait();
  b.wait();
  EXPECT_EQ(done.load(), 2);
}

}  // namespace
}  // namespace plexus::runtime
