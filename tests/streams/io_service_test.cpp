#include "core/streams/io_service.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <future>
#include <string>

namespace plexus::streams {
namespace {

struct ThreadFacts {
  int policy = -1;
  std::string name;
};

ThreadFacts facts_of_a_task(IoService& io) {
  std::promise<ThreadFacts> facts;
  io.post([&] {
    ThreadFacts f;
    f.policy = sched_getscheduler(0);
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    f.name = name;
    facts.set_value(f);
  });
  return facts.get_future().get();
}

TEST(IoService, NormalThreadsRunUnderTheDefaultPolicy) {
  IoService io(1);
  const ThreadFacts f = facts_of_a_task(io);
  EXPECT_EQ(f.policy, SCHED_OTHER);
  EXPECT_EQ(f.name, "plx-io0");
}

TEST(IoService, BackgroundThreadsRunOnlyOnIdleCores) {
  // Asynchronous checkpoint saves run here so that they do not slow the devices
  // (bench/README.md, checkpoint_bench: async_save overhead 5.4 % -> 1.8 % with SCHED_IDLE).
  IoService io(2, IoService::Priority::kBackground, "plx-ckpt");
  const ThreadFacts f = facts_of_a_task(io);
  EXPECT_EQ(f.policy, SCHED_IDLE);
  EXPECT_TRUE(f.name == "plx-ckpt0" || f.name == "plx-ckpt1") << f.name;
}

}  // namespace
}  // namespace plexus::streams
