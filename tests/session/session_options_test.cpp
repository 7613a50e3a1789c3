// Session options on their own (core/session/session_options.cpp): every check, the
// launcher's environment, and the replicas a worker hosts.
#include "core/session/session_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/ir/error.h"

namespace plexus::session {
namespace {

using ::testing::HasSubstr;
using runtime::HostedReplicas;

std::string error_of(const SessionOptions& o) {
  try {
    check_session_options(o);
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(SessionOptions, DefaultsPass) { EXPECT_EQ(error_of({}), "no error"); }

TEST(SessionOptions, EachBadOptionIsNamedWithItsValue) {
  auto with = [](auto set) {
    SessionOptions o;
    set(o);
    return error_of(o);
  };
  EXPECT_THAT(with([](auto& o) { o.device_iterations = 0; }), HasSubstr("device_iterations is 0, must be >= 1"));
  EXPECT_THAT(with([](auto& o) { o.gradient_accumulation = -2; }), HasSubstr("gradient_accumulation is -2"));
  EXPECT_THAT(with([](auto& o) { o.io_threads = 0; }), HasSubstr("io_threads is 0"));
  EXPECT_THAT(with([](auto& o) { o.prefetch_depth = -1; }), HasSubstr("prefetch_depth is -1, must be >= 0"));
  EXPECT_THAT(with([](auto& o) { o.num_workers = -1; }), HasSubstr("num_workers is -1"));
  EXPECT_THAT(with([](auto& o) { o.num_workers = 2, o.worker_index = 2; }),
              HasSubstr("worker_index is 2, must be in [0, num_workers = 2)"));
  EXPECT_THAT(with([](auto& o) { o.threads_per_device = -1; }), HasSubstr("threads_per_device is -1"));
  EXPECT_THAT(with([](auto& o) { o.output_mode = static_cast<OutputMode>(9); }), HasSubstr("output_mode is 9"));
  EXPECT_THAT(with([](auto& o) { o.output_mode = OutputMode::EveryN, o.device_iterations = 5, o.output_return_period = 2; }),
              HasSubstr("output_return_period is 2, must divide device_iterations (5)"));
}

TEST(SessionOptions, ZeroWorkersTakesTheLaunchersEnvironment) {
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  SessionOptions o;
  o.num_workers = 0;
  const SessionOptions r = resolve_workers(o);
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(r.num_workers, 4);
  EXPECT_EQ(r.worker_index, 3);
  o.num_workers = 2;
  EXPECT_EQ(resolve_workers(o).num_workers, 2);  // given: kept
}

TEST(SessionOptions, AWorkerHostsAnEqualShareOfTheReplicas) {
  SessionOptions o;
  o.num_workers = 4;
  o.worker_index = 2;
  const HostedReplicas h = hosted_by_worker(o, 8);
  EXPECT_EQ(h.first, 4);
  EXPECT_EQ(h.count, 2);
  EXPECT_TRUE(h.hosts(5));
  EXPECT_FALSE(h.hosts(6));
  try {
    hosted_by_worker(o, 6);
    ADD_FAILURE() << "no error";
  } catch (const ir::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("num_workers is 4, which does not divide the replication factor 6"));
  }
}

}  // namespace
}  // namespace plexus::session
