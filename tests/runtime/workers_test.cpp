// Workers in one process (seed 002; core/runtime/workers.h and SessionOptions::num_workers):
// the launcher's environment, option checks, and what a worker hosts, feeds and reads. The
// multi-process behaviour (collectives across workers) is tests/runtime/workers_mpi_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/ir/error.h"
#include "tests/error_of.h"
#include "tests/scoped_env.h"
#include "core/session/session.h"
#include "core/session/session_checkpoint.h"
#include "core/runtime/workers.h"
#include "tests/runtime/test_graphs.h"

namespace plexus::runtime {
namespace {

using ::testing::HasSubstr;
using testing::f32;
using session::Session;
using session::SessionOptions;
using session::snapshot_session;

// Sets environment variables for one test and removes them after.
class Environment {
 public:
  void set(const char* name, const char* value) {
    ::setenv(name, value, 1);
    names_.push_back(name);
  }
  ~Environment() {
    for (const char* name : names_) ::unsetenv(name);
  }

 private:
  std::vector<const char*> names_;
};

using plexus::test::error_of;
using plexus::test::ScopedEnv;

TEST(WorkersFromEnvironment, OneWorkerWithoutALauncher) {
  const WorkerPlace place = workers_from_environment();
  EXPECT_EQ(place.count, 1);
  EXPECT_EQ(place.index, 0);
}

TEST(WorkersFromEnvironment, ReadsOpenMpiThenPmi) {
  Environment env;
  env.set("PMI_SIZE", "4");
  env.set("PMI_RANK", "3");
  EXPECT_EQ(workers_from_environment().count, 4);
  EXPECT_EQ(workers_from_environment().index, 3);
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_RANK", "1");
  EXPECT_EQ(workers_from_environment().count, 2);  // Open MPI's wins
  EXPECT_EQ(workers_from_environment().index, 1);
}

TEST(WorkersFromEnvironment, RefusesBadValuesNamingThem) {
  Environment env;
  env.set("OMPI_COMM_WORLD_SIZE", "two");
  const ir::Error e = error_of([] { workers_from_environment(); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("OMPI_COMM_WORLD_SIZE is 'two'"));
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_RANK", "2");
  EXPECT_THAT(error_of([] { workers_from_environment(); }).what(), HasSubstr("rank 2 of 2"));
}

TEST(WorkerSession, BadOptionsAreRefusedNamingThem) {
  const testing::Accumulator a(3);
  SessionOptions o;
  o.num_workers = 2;
  ir::Error e = error_of([&] { Session s(a.graph, o); });
  EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("num_workers is 2, which does not divide the replication factor 3"));
  o.num_workers = 3;
  o.worker_index = 3;
  EXPECT_THAT(error_of([&] { Session s(a.graph, o); }).what(), HasSubstr("worker_index is 3"));
  o.num_workers = -1;
  EXPECT_THAT(error_of([&] { Session s(a.graph, o); }).what(), HasSubstr("num_workers is -1"));
}

TEST(WorkerSession, TheLocalPluginRefusesSeveralWorkers) {
  ir::Graph g;
  g.set_replication_factor(2);
  const ir::StreamId x = g.add_h2d_stream("x", ir::DType::Float32, {2});
  g.add_d2h_stream("sum", g.add_op("replicated_all_reduce", {g.stream(x).tensor}, {}).front());
  SessionOptions o;
  o.num_workers = 2;
  o.collectives_plugin = "local";
  const ir::Error e = error_of([&] { Session s(g, o); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("single-process"));
}

TEST(WorkerSession, HostsItsShareFeedsItAndReadsHostedRows) {
  // R = 4 over 2 workers: worker 1 hosts replicas 2 and 3; its streams carry 2 replicas.
  testing::Accumulator a(4);
  const ir::TensorId per_replica = a.graph.add_variable("per_replica", ir::DType::Float32, {1}, f32({5.0f}),
                                                        std::nullopt, ir::RetrievalMode::AllReplicas);
  SessionOptions o;
  o.num_workers = 2;
  o.worker_index = 1;
  o.device_iterations = 3;
  Session s(a.graph, o);
  EXPECT_EQ(s.hosted_replicas().first, 2);
  EXPECT_EQ(s.hosted_replicas().count, 2);
  EXPECT_EQ(s.host_shape(a.x_stream), (ir::Shape{3, 2, 2}));
  EXPECT_EQ(s.num_devices(), 2u);
  std::vector<float> x(12, 1.0f);
  x[2] = 10.0f;  // step 0, replica 3 (the worker's second), element 0
  const HostArray in{a.x_stream, x.data(), ir::DType::Float32, s.host_shape(a.x_stream)};
  s.run(std::span(&in, 1), {});
  // One group of 4: its row is read from replica 2, the lowest replica hosted here.
  std::vector<float> acc(2);
  s.read_variable(a.acc, std::as_writable_bytes(std::span(acc)));
  EXPECT_EQ(acc, (std::vector<float>{3.0f, 3.0f}));
  // A row per replica: rows 0 and 1 live on the other worker, so reading is a collective
  // of every worker (workers_mpi_test.cpp), which the single-process plugin cannot serve.
  std::vector<float> rows(4);
  const ir::Error e = error_of([&] { s.read_variable(per_replica, std::as_writable_bytes(std::span(rows))); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Plugin);
  EXPECT_THAT(e.what(), HasSubstr("single-process"));
  // Writing gives the hosted replicas their rows (2 and 3) and ignores the others.
  const std::vector<float> written{7.0f, 8.0f};
  s.write_variable(a.acc, std::as_bytes(std::span(written)));
  s.read_variable(a.acc, std::as_writable_bytes(std::span(acc)));
  EXPECT_EQ(acc, written);
}

TEST(WorkerSession, ACheckpointOfBareRemoteSlotsIsRefusedWithSeveralWorkers) {
  // A slot that holds no variable is saved per replica; a worker holds only its own.
  testing::Accumulator a(4);
  a.graph.add_remote_buffer(ir::DType::Float32, {2}, 1);
  SessionOptions o;
  o.num_workers = 2;
  const Session s(a.graph, o);
  const ir::Error e = error_of([&] { snapshot_session(s, {}); });
  EXPECT_EQ(e.code(), ir::ErrorCode::Unsupported);
  EXPECT_THAT(e.what(), HasSubstr("remote buffer 0 slot 0 holds no variable"));
  EXPECT_THAT(e.what(), HasSubstr("2 workers"));
}

TEST(WorkerSession, WorkersFromTheLaunchersEnvironment) {
  Environment env;
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_RANK", "1");
  const testing::Accumulator a(2);
  SessionOptions o;
  o.num_workers = 0;
  Session s(a.graph, o);
  EXPECT_EQ(s.options().num_workers, 2);
  EXPECT_EQ(s.options().worker_index, 1);
  EXPECT_EQ(s.hosted_replicas().first, 1);
  EXPECT_EQ(s.hosted_replicas().count, 1);
}

// Cluster definitions (PLEXUS_CLUSTER, TF_CONFIG) come before the MPI launcher's variables.
TEST(WorkersFromEnvironment, PlexusClusterComesBeforeTfConfigAndTheMpiLauncher) {
  const ScopedEnv ompi_size("OMPI_COMM_WORLD_SIZE", "4"), ompi_rank("OMPI_COMM_WORLD_RANK", "3");
  const ScopedEnv tf("TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})");
  {
    const ScopedEnv plexus("PLEXUS_CLUSTER", R"({"workers": ["a:1", "b:1", "c:1"], "index": 1})");
    EXPECT_EQ(workers_from_environment().count, 3);
    EXPECT_EQ(workers_from_environment().index, 1);
  }
  EXPECT_EQ(workers_from_environment().count, 2);
  EXPECT_EQ(workers_from_environment().index, 0);
}

TEST(WorkersFromEnvironment, NoClusterDefinitionLeavesTheLauncherVariables) {
  const ScopedEnv plexus("PLEXUS_CLUSTER", nullptr), tf("TF_CONFIG", nullptr);
  const ScopedEnv ompi_size("OMPI_COMM_WORLD_SIZE", "4"), ompi_rank("OMPI_COMM_WORLD_RANK", "3");
  EXPECT_EQ(workers_from_environment().count, 4);
  EXPECT_EQ(workers_from_environment().index, 3);
}

}  // namespace
}  // namespace plexus::runtime
