// The run queue (core/runtime/run_queue.cpp): order, the calling thread for an idle run,
// asynchronous runs, cancellation, errors and completion callbacks.
#include "core/runtime/run_queue.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/ir/error.h"

namespace plexus::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A request told apart by its number of inputs.
RunRequest request_of(size_t n) {
  RunRequest r;
  r.inputs.resize(n, HostArray{0, nullptr, ir::DType::Float32, {}});
  return r;
}

TEST(RunQueue, AnIdleRunExecutesOnTheCallingThreadAndSucceeds) {
  std::thread::id ran_on;
  RunQueue q([&](const RunRequest&, const std::function<bool()>& cancelled) {
               ran_on = std::this_thread::get_id();
               EXPECT_FALSE(cancelled());
               return std::exception_ptr();
             },
             [](const std::string&) {});
  q.run(request_of(1));
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(RunQueue, SubmittedRunsExecuteInOrderOnTheControllerAndCallOnCompleteFirst) {
  std::mutex m;
  std::vector<size_t> order;
  std::vector<std::thread::id> threads;
  RunQueue q([&](const RunRequest& r, const std::function<bool()>&) {
               std::lock_guard lock(m);
               order.push_back(r.inputs.size());
               threads.push_back(std::this_thread::get_id());
               return std::exception_ptr();
             },
             [](const std::string&) {});
  std::vector<std::shared_ptr<RunHandle>> handles;
  std::atomic<int> completed{0};
  for (size_t n = 1; n <= 3; ++n) {
    RunRequest r = request_of(n);
    r.on_complete = [&, n](std::exception_ptr e) {
      EXPECT_EQ(e, nullptr);
      EXPECT_EQ(completed.fetch_add(1), static_cast<int>(n) - 1);
    };
    handles.push_back(q.submit(std::move(r)));
  }
  for (auto& h : handles) h->wait();
  EXPECT_THAT(order, ElementsAre(1u, 2u, 3u));
  EXPECT_EQ(completed.load(), 3);
  for (const auto& t : threads) EXPECT_NE(t, std::this_thread::get_id());
}

TEST(RunQueue, TheRunsErrorReachesRunAndTheHandle) {
  RunQueue q([](const RunRequest&, const std::function<bool()>&) {
               return std::make_exception_ptr(ir::Error(ir::ErrorCode::Runtime, "device 3 broke"));
             },
             [](const std::string&) {});
  try {
    q.run(request_of(0));
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Runtime);
    EXPECT_THAT(e.what(), HasSubstr("device 3 broke"));
  }
  auto h = q.submit(request_of(0));
  EXPECT_THROW(h->wait(), ir::Error);
  EXPECT_TRUE(h->done());
}

TEST(RunQueue, CancelAbortsTheRunningRunEndsTheQueuedOnesAndLeavesLaterRunsAlone) {
  std::atomic<bool> release{false}, started{false};
  std::vector<std::string> reasons;
  std::atomic<int> executed{0};
  RunQueue q(
      [&](const RunRequest& r, const std::function<bool()>& cancelled) {
        ++executed;
        if (r.inputs.size() == 1) {
          started = true;
          while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          EXPECT_TRUE(cancelled());
        }
        return cancelled() ? cancelled_run() : std::exception_ptr();
      },
      [&](const std::string& reason) {
        reasons.push_back(reason);
        release = true;
      });
  auto running = q.submit(request_of(1));
  auto queued = q.submit(request_of(2));
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  q.cancel();
  for (auto* h : {&running, &queued}) {
    try {
      (*h)->wait();
      ADD_FAILURE() << "not cancelled";
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), ir::ErrorCode::Cancelled);
    }
  }
  EXPECT_THAT(reasons, ElementsAre("the run was cancelled"));
  EXPECT_EQ(executed.load(), 1);  // the queued run never executed
  q.run(request_of(3));           // a run after the cancel succeeds
  EXPECT_EQ(executed.load(), 2);
}

TEST(RunQueue, AThrowingCompletionCallbackDoesNotChangeTheOutcome) {
  RunQueue q([](const RunRequest&, const std::function<bool()>&) { return std::exception_ptr(); },
             [](const std::string&) {});
  RunRequest r;
  r.on_complete = [](std::exception_ptr) { throw std::runtime_error("callback failed"); };
  auto h = q.submit(std::move(r));
  EXPECT_NO_THROW(h->wait());
}

TEST(RunQueue, CancelledRunIsACancelledError) {
  try {
    std::rethrow_exception(cancelled_run());
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Cancelled);
    EXPECT_THAT(e.what(), HasSubstr("plx_session_cancel"));
  }
}

}  // namespace
}  // namespace plexus::runtime
