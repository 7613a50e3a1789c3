// Run handles (core/runtime/run_handle.cpp): completion once, waiting with and without a
// timeout, and the run's error thrown anew in every waiting thread.
#include "core/runtime/run_handle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace plexus::runtime {
namespace {

using ::testing::HasSubstr;

TEST(RunHandle, WaitsUntilCompletedAndSucceeds) {
  RunHandle h;
  EXPECT_FALSE(h.done());
  EXPECT_FALSE(h.wait_for(std::chrono::milliseconds(1)));
  std::thread t([&] { h.complete(nullptr); });
  h.wait();
  t.join();
  EXPECT_TRUE(h.done());
  EXPECT_TRUE(h.wait_for(std::chrono::milliseconds(0)));
}

TEST(RunHandle, ThrowsTheRunsErrorWithItsCodeInEveryWaiter) {
  RunHandle h;
  h.complete(std::make_exception_ptr(ir::Error(ir::ErrorCode::Timeout, "replica 2 did not come")));
  for (int i = 0; i < 2; ++i) {
    try {
      h.wait();
      ADD_FAILURE() << "no error";
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), ir::ErrorCode::Timeout);
      EXPECT_THAT(e.what(), HasSubstr("replica 2 did not come"));
    }
  }
  EXPECT_THROW(h.wait_for(std::chrono::milliseconds(0)), ir::Error);
}

TEST(RunHandle, OtherExceptionsBecomeInternalErrorsAndOnlyTheFirstCompletionCounts) {
  RunHandle h;
  h.complete(std::make_exception_ptr(std::runtime_error("bad_alloc-like")));
  h.complete(nullptr);  // ignored: already complete
  try {
    h.wait();
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Internal);
    EXPECT_THAT(e.what(), HasSubstr("internal error: bad_alloc-like"));
  }
}

}  // namespace
}  // namespace plexus::runtime
