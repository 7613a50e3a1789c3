// Asynchronous checkpoint saves (issue 7): the snapshot is taken when save() returns, so
// runs that follow do not change what is written; completion callbacks fire once with
// the save's error, on background (SCHED_IDLE) threads; the snapshots held at once stay
// within the staging budget.
#include "core/session/async_saver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "core/ir/error.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::session {
namespace {

using runtime::testing::f32;
using runtime::HostArray;
using runtime::RunHandle;

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("plexus-async-" + std::to_string(::getpid()) + "-" + name)).string();
}

// acc [2] += x each step.
struct Acc {
  runtime::testing::Accumulator m;
  Session s{m.graph, {}};
  void step(float v) {
    const float x[2] = {v, v};
    const HostArray in{m.x_stream, const_cast<float*>(x), ir::DType::Float32, s.host_shape(m.x_stream)};
    s.run(std::span(&in, 1), {});
  }
  std::vector<float> acc() const {
    std::vector<float> out(2);
    s.read_variable(m.acc, std::as_writable_bytes(std::span(out)));
    return out;
  }
};

TEST(AsyncSaver, WritesTheStateOfWhenItWasCalledAndCompletesOnce) {
  Acc a;
  a.step(1.0f);
  const std::string file = temp_file("a.ckpt");
  std::atomic<int> calls{0};
  std::exception_ptr seen;
  std::shared_ptr<RunHandle> handle;
  {
    AsyncSaver saver(1, 1 << 20);
    handle = saver.save(a.s, file, {}, [&](std::exception_ptr e) {
      seen = e;
      ++calls;
    });
    a.step(5.0f);  // after the snapshot
  }  // the destructor waits for the write
  EXPECT_TRUE(handle->done());
  handle->wait();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(seen, nullptr);
  load_session(a.s, file, {});
  EXPECT_EQ(a.acc(), (std::vector<float>{1.0f, 1.0f}));
  std::filesystem::remove(file);
}

TEST(AsyncSaver, CompressesOnBackgroundThreads) {
  // SCHED_IDLE: a save uses only a core the devices leave idle.
  Acc a;
  AsyncSaver saver(1, 1 << 20);
  const std::string file = temp_file("idle.ckpt");
  std::atomic<int> policy{-1};
  saver.save(a.s, file, {}, [&](std::exception_ptr) { policy = sched_getscheduler(0); })->wait();
  EXPECT_EQ(policy.load(), SCHED_IDLE);
  std::filesystem::remove(file);
}

TEST(AsyncSaver, AFailedWriteCompletesWithItsError) {
  Acc a;
  AsyncSaver saver(1, 1 << 20);
  std::atomic<int> calls{0};
  ir::ErrorCode code = ir::ErrorCode::Internal;
  auto handle = saver.save(a.s, "/nonexistent-plexus-dir/a.ckpt", {}, [&](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const ir::Error& error) {
      code = error.code();
    }
    ++calls;
  });
  EXPECT_THROW(handle->wait(), ir::Error);
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(code, ir::ErrorCode::Io);
}

TEST(AsyncSaver, SnapshotsHeldAtOnceStayWithinTheStagingBudget) {
  Acc a;
  const uint64_t one = snapshot_session(a.s, {}).bytes();  // 8 bytes of acc
  ASSERT_EQ(one, 8u);
  AsyncSaver saver(1, one);  // room for one snapshot: each save waits for the previous one
  std::vector<std::shared_ptr<RunHandle>> handles;
  for (int k = 0; k < 8; ++k) {
    handles.push_back(saver.save(a.s, temp_file("b" + std::to_string(k) + ".ckpt"), {}, nullptr));
    EXPECT_LE(saver.staged_bytes(), one);
  }
  for (auto& h : handles) h->wait();
  EXPECT_EQ(saver.staged_bytes(), 0u);
  for (int k = 0; k < 8; ++k) std::filesystem::remove(temp_file("b" + std::to_string(k) + ".ckpt"));
}

}  // namespace
}  // namespace plexus::session
