// Workers over MPI (seed 002), run by mpirun with 2 and 3 ranks (label mpi; also passes as a
// single process): sessions of one job split over the ranks train to the same weights as
// one process, with the weight update on the devices or on the hosts, and a worker whose replica fails is named by the others within the
// collective timeout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mpi.h>

#include <chrono>

#include "core/ir/error.h"
#include "core/session/session.h"
#include "core/runtime/workers.h"
#include "tests/runtime/data_parallel_mlp.h"

namespace plexus::runtime {
namespace {

using ::testing::HasSubstr;
using testing::max_abs_difference;
using testing::train_mlp;
using session::Session;
using session::SessionOptions;

constexpr int64_t kBatch = 4, kSteps = 30;

SessionOptions worker_options() {
  SessionOptions o;
  o.num_workers = 0;  // from mpirun's environment
  o.collectives_plugin = "mpi";
  o.collective_timeout_ms = 20000;
  return o;
}

class WorkersOverMpi : public ::testing::TestWithParam<int64_t> {};

TEST_P(WorkersOverMpi, TrainToTheWeightsOfOneProcess) {
  const int64_t workers = workers_from_environment().count;
  const int64_t replicas = workers * GetParam();  // GetParam() replicas per worker
  SessionOptions one_process;
  one_process.collectives_plugin = "local";
  one_process.gradient_bucket_bytes = 0;
  const std::vector<float> split = train_mlp(replicas, kBatch, kSteps, worker_options());
  // The same R replicas in this process alone, one all-reduce per gradient where the workers
  // fuse them into a gradient bucket: member-order reductions make them equal bit for bit.
  const std::vector<float> together = train_mlp(replicas, kBatch, kSteps, one_process);
  ASSERT_EQ(split.size(), together.size());
  EXPECT_EQ(max_abs_difference(split, together), 0.0f) << workers << " workers x " << GetParam() << " replicas";
  // And like one replica with the whole global batch (seed 000 17.1), within rounding.
  const std::vector<float> whole = train_mlp(1, kBatch * replicas, kSteps);
  EXPECT_LE(max_abs_difference(split, whole), 1e-5f);
}

TEST_P(WorkersOverMpi, TheWeightUpdateOnTheHostTrainsToTheWeightsOfTheDeviceUpdate) {
  const int64_t workers = workers_from_environment().count;
  const int64_t replicas = workers * GetParam();
  SessionOptions on_host = worker_options();
  on_host.weight_update_on_host = true;
  SessionOptions one_process;
  one_process.collectives_plugin = "local";
  for (const bool adam : {false, true}) {
    // Gradients all-reduced on the hosts across the workers, Adam's state in host memory:
    // the same weights bit for bit as the graph's all-reduce on the devices of one process.
    const std::vector<float> split = train_mlp(replicas, kBatch, kSteps, on_host, {adam, true});
    const std::vector<float> together = train_mlp(replicas, kBatch, kSteps, one_process, {adam, false});
    ASSERT_EQ(split.size(), together.size());
    EXPECT_EQ(max_abs_difference(split, together), 0.0f)
        << workers << " workers x " << GetParam() << " replicas, " << (adam ? "Adam" : "SGD");
  }
}

INSTANTIATE_TEST_SUITE_P(ReplicasPerWorker, WorkersOverMpi, ::testing::Values(1, 2));

TEST(WorkersOverMpiVariables, EveryWorkerReadsEveryReplicasRow) {
  const WorkerPlace place = workers_from_environment();
  const int64_t replicas = 2 * place.count;  // 2 per worker
  ir::Graph g;
  g.set_replication_factor(replicas);
  const ir::TensorId rows = g.add_variable("per_replica", ir::DType::Float32, {2}, testing::f32({0.0f, 0.0f}),
                                           std::nullopt, ir::RetrievalMode::AllReplicas);
  Session s(g, worker_options());
  // Each worker writes its own replicas' rows only (the others' rows of its data are -1).
  std::vector<float> data(static_cast<size_t>(replicas * 2), -1.0f);
  for (int64_t r = s.hosted_replicas().first; r < s.hosted_replicas().first + 2; ++r) {
    data[static_cast<size_t>(2 * r)] = static_cast<float>(100 * place.index + r);
    data[static_cast<size_t>(2 * r + 1)] = static_cast<float>(r);
  }
  s.write_variable(rows, std::as_bytes(std::span(data)));
  // Reading is a collective: every worker gets every replica's row, from whichever worker
  // hosts it.
  std::vector<float> all(data.size());
  s.read_variable(rows, std::as_writable_bytes(std::span(all)));
  for (int64_t r = 0; r < replicas; ++r) {
    EXPECT_EQ(all[static_cast<size_t>(2 * r)], static_cast<float>(100 * (r / 2) + r)) << "replica " << r;
    EXPECT_EQ(all[static_cast<size_t>(2 * r + 1)], static_cast<float>(r)) << "replica " << r;
  }
}

// The collective timeout of the failure tests: a failing run takes this long on the
// workers that wait for the failed one.
constexpr int64_t kFailureTimeoutMs = 2000;

// Lines the workers up at a known point: an MPI barrier over every rank (the plugin has
// initialised MPI by now), outside any collective with the session's timeout. Processes
// start, create their sessions and plan at different speeds, seconds apart on a loaded
// machine; without it a worker could reach a run more than the timeout after the others,
// which then time out in the run's first collective instead of failing as the test makes
// them. Returns the time the barrier let this worker go: what the test measures from.
std::chrono::steady_clock::time_point line_up() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) ADD_FAILURE() << "MPI is not initialised: the session did not load the mpi plugin";
  else MPI_Barrier(MPI_COMM_WORLD);
  return std::chrono::steady_clock::now();
}

// Runs `good` on every worker, then `bad` on worker 1 and `good` on the others, where `bad`
// makes worker 1's replica fail before its first collective: worker 1 reports its own error,
// the others a timeout naming replica 1 within the timeout, measured from the barrier that
// lines the workers up before the failing run.
void expect_worker_1_named(Session& s, std::span<const HostArray> good, std::span<const HostArray> bad) {
  const WorkerPlace place = workers_from_environment();
  line_up();
  s.run(good, {});
  const auto start = line_up();
  try {
    s.run(place.index == 1 ? bad : good, {});
    ADD_FAILURE() << "the run succeeded";
  } catch (const ir::Error& e) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (place.index == 1) {
      EXPECT_THAT(e.what(), HasSubstr("label"));
    } else {
      EXPECT_EQ(e.code(), ir::ErrorCode::Timeout) << e.what();
      EXPECT_THAT(e.what(), HasSubstr("replica 1 (MPI rank 1)"));
      EXPECT_LE(seconds, kFailureTimeoutMs / 1000.0 + 3.0);
    }
  }
  // Every worker replaced its failed communicators: the same session runs again, in step.
  EXPECT_NO_THROW(s.run(good, {})) << "worker " << place.index;
}

TEST(WorkersOverMpiFailure, AWorkerWhoseReplicaFailsIsNamedByTheOthers) {
  const WorkerPlace place = workers_from_environment();
  if (place.count < 2) GTEST_SKIP() << "needs mpirun with 2 or more ranks";
  ir::Graph g;
  g.set_replication_factor(place.count);
  const ir::StreamId labels = g.add_h2d_stream("labels", ir::DType::Int32, {2});
  const ir::TensorId logits = g.add_variable("logits", ir::DType::Float32, {2, 3}, testing::f32({1, 2, 3, 4, 5, 6}));
  const ir::TensorId loss = g.add_op("softmax_cross_entropy", {logits, g.stream(labels).tensor}, {}).front();
  g.add_d2h_stream("loss", g.add_op("replicated_all_reduce", {loss}, {}).front());
  SessionOptions o = worker_options();
  o.collective_timeout_ms = kFailureTimeoutMs;
  Session s(g, o);
  int32_t good[2] = {0, 1};
  int32_t bad[2] = {0, 9};  // replica 1's label is out of range: it fails before the all-reduce
  const HostArray good_in{labels, good, ir::DType::Int32, s.host_shape(labels)};
  const HostArray bad_in{labels, bad, ir::DType::Int32, s.host_shape(labels)};
  expect_worker_1_named(s, std::span(&good_in, 1), std::span(&bad_in, 1));
  // A new session in the same processes after the failure: its collectives line up with
  // the other workers' (once failed with MPI_ERR_TRUNCATE, message sequences one apart).
  Session again(g, o);
  const HostArray in{labels, good, ir::DType::Int32, again.host_shape(labels)};
  line_up();
  EXPECT_NO_THROW(again.run(std::span(&in, 1), {})) << "worker " << place.index;
}

TEST(WorkersOverMpiFailure, AWorkerThatNeverSendsItsGradientToTheHostIsNamedByTheOthers) {
  const WorkerPlace place = workers_from_environment();
  if (place.count < 2) GTEST_SKIP() << "needs mpirun with 2 or more ranks";
  testing::Mlp m = testing::build_mlp(place.count, 2, {true, true});
  SessionOptions o = worker_options();
  o.collective_timeout_ms = kFailureTimeoutMs;
  o.weight_update_on_host = true;
  Session s(m.graph, o);
  std::vector<float> x(2 * testing::kMlpIn, 0.5f);
  int32_t good_labels[2] = {0, 1};
  int32_t bad_labels[2] = {0, 9};  // worker 1 fails in its forward pass
  const HostArray good[2] = {{m.x, x.data(), ir::DType::Float32, s.host_shape(m.x)},
                             {m.y, good_labels, ir::DType::Int32, s.host_shape(m.y)}};
  const HostArray bad[2] = {good[0], {m.y, bad_labels, ir::DType::Int32, s.host_shape(m.y)}};
  // The others' host threads wait in the all-reduce of the first gradient, their devices
  // for the host: the timeout ends both.
  expect_worker_1_named(s, good, bad);
  Session again(m.graph, o);  // a new session after the failure, as above
  const HostArray fresh[2] = {{m.x, x.data(), ir::DType::Float32, again.host_shape(m.x)},
                              {m.y, good_labels, ir::DType::Int32, again.host_shape(m.y)}};
  line_up();
  EXPECT_NO_THROW(again.run(fresh, {})) << "worker " << place.index;
}

}  // namespace
}  // namespace plexus::runtime
