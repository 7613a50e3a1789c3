// Workers through the C API only (PLX_API_VERSION 8; seed 002): num_workers / worker_index
// session options, plx_session_get_replicas, plx_workers_read_environment, and callers
// built against an older plx_session_options.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

// An IR of R replicas with one input stream x [2] (no collectives).
IrPtr replicated_ir(int64_t replicas, plx_stream* x) {
  IrPtr ir = make_ir();
  EXPECT_EQ(plx_ir_set_replication_factor(ir.get(), replicas), PLX_OK) << plx_last_error();
  const int64_t shape[] = {2};
  plx_tensor t{};
  EXPECT_EQ(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, x, &t), PLX_OK) << plx_last_error();
  return ir;
}

TEST(CApiWorkers, ASessionHostsItsWorkersShare) {
  plx_stream x{};
  const IrPtr ir = replicated_ir(4, &x);
  plx_session_options o;
  plx_session_options_init(&o);
  EXPECT_EQ(o.num_workers, 1);
  EXPECT_EQ(o.worker_index, 0);
  o.num_workers = 2;
  o.worker_index = 1;
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), &o, &raw));
  const SessionPtr s(raw);
  plx_replica_info info{};
  info.struct_size = sizeof info;
  ASSERT_PLX_OK(plx_session_get_replicas(s.get(), &info));
  EXPECT_EQ(info.replication_factor, 4);
  EXPECT_EQ(info.num_workers, 2);
  EXPECT_EQ(info.worker_index, 1);
  EXPECT_EQ(info.first_local_replica, 2);
  EXPECT_EQ(info.local_replicas, 2);
  int64_t shape[4] = {};
  size_t rank = 0;
  ASSERT_PLX_OK(plx_session_get_host_shape(s.get(), x, shape, 4, &rank));
  ASSERT_EQ(rank, 2u);  // [local replicas, 2]
  EXPECT_EQ(shape[0], 2);
  info.struct_size = sizeof(size_t);
  EXPECT_PLX_ERROR(plx_session_get_replicas(s.get(), &info), PLX_ERR_INVALID_ARGUMENT, "struct_size");
  EXPECT_PLX_ERROR(plx_session_get_replicas(s.get(), nullptr), PLX_ERR_INVALID_ARGUMENT, "out");
}

TEST(CApiWorkers, BadWorkerOptionsAreClearErrors) {
  plx_stream x{};
  const IrPtr ir = replicated_ir(4, &x);
  plx_session_options o;
  plx_session_options_init(&o);
  o.num_workers = 3;
  plx_session* s = nullptr;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT,
                   "num_workers is 3, which does not divide the replication factor 4");
  o.num_workers = 2;
  o.worker_index = -1;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &o, &s), PLX_ERR_INVALID_ARGUMENT, "worker_index is -1");
  EXPECT_EQ(s, nullptr);
}

TEST(CApiWorkers, AnOlderCallersOptionsMeanOneWorker) {
  plx_stream x{};
  const IrPtr ir = replicated_ir(2, &x);
  plx_session_options o;
  plx_session_options_init(&o);
  o.struct_size = offsetof(plx_session_options, num_workers);  // a version 7 caller
  o.num_workers = 2;  // beyond its struct: never read
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), &o, &raw));
  const SessionPtr s(raw);
  plx_replica_info info{};
  info.struct_size = sizeof info;
  ASSERT_PLX_OK(plx_session_get_replicas(s.get(), &info));
  EXPECT_EQ(info.num_workers, 1);
  EXPECT_EQ(info.local_replicas, 2);
}

TEST(CApiWorkers, TheLaunchersEnvironment) {
  int64_t count = 0, index = 0;
  ASSERT_PLX_OK(plx_workers_read_environment(&count, &index));
  EXPECT_EQ(count, 1);
  EXPECT_EQ(index, 0);
  ::setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  ASSERT_PLX_OK(plx_workers_read_environment(&count, &index));
  EXPECT_EQ(count, 3);
  EXPECT_EQ(index, 2);
  ::setenv("OMPI_COMM_WORLD_RANK", "x", 1);
  EXPECT_PLX_ERROR(plx_workers_read_environment(&count, &index), PLX_ERR_INVALID_ARGUMENT, "OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  EXPECT_PLX_ERROR(plx_workers_read_environment(nullptr, &index), PLX_ERR_INVALID_ARGUMENT, "out_num_workers");
}

// Workers started by hand from a cluster definition (PLX_API_VERSION 11; seed 002's TF_CONFIG).
TEST(CApiWorkers, TheClusterDefinition) {
  int64_t count = 0, index = 0;
  ::setenv("TF_CONFIG", R"({"cluster": {"worker": ["h1:1", "h2:1"]}, "task": {"type": "worker", "index": 1}})", 1);
  ASSERT_PLX_OK(plx_workers_read_environment(&count, &index));
  EXPECT_EQ(count, 2);
  EXPECT_EQ(index, 1);
  ::setenv("PLEXUS_CLUSTER", R"({"workers": ["h1:1", "h2:1", "h3:1"], "index": 0})", 1);
  ASSERT_PLX_OK(plx_workers_read_environment(&count, &index));
  EXPECT_EQ(count, 3);
  EXPECT_EQ(index, 0);
  ::setenv("PLEXUS_CLUSTER", R"({"workers": ["h1:1"], "index": 5})", 1);
  EXPECT_PLX_ERROR(plx_workers_read_environment(&count, &index), PLX_ERR_INVALID_ARGUMENT,
                   "cluster definition PLEXUS_CLUSTER: \"index\" is 5, not a worker in [0, 1)");
  ::unsetenv("PLEXUS_CLUSTER");
  ::unsetenv("TF_CONFIG");
}

}  // namespace
