// Replication through the C API only: replication factor, replica groupings (seed 001,
// tables 13.1-13.3), variables with groupings and retrieval modes, replicated streams,
// and the collectives plugin options.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

plx_replica_grouping grouping(int64_t r, int64_t g, int64_t s) {
  plx_replica_grouping out{};
  EXPECT_EQ(plx_replica_grouping_create(r, g, s, &out), PLX_OK) << plx_last_error();
  return out;
}

std::vector<int64_t> members(const plx_replica_grouping& g, int64_t group) {
  std::vector<int64_t> m(16);
  size_t count = 0;
  EXPECT_EQ(plx_replica_grouping_get_members(&g, group, m.data(), m.size(), &count), PLX_OK) << plx_last_error();
  m.resize(count);
  return m;
}

TEST(CApiReplication, GroupingsOfTheSeedsTables) {
  const plx_replica_grouping t1 = grouping(16, 4, 1), t2 = grouping(16, 4, 4), t3 = grouping(16, 1, 1);
  EXPECT_EQ(members(t1, 2), (std::vector<int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(members(t2, 2), (std::vector<int64_t>{2, 6, 10, 14}));
  EXPECT_EQ(members(t3, 15), (std::vector<int64_t>{15}));
  int64_t n = 0, group = 0;
  ASSERT_PLX_OK(plx_replica_grouping_get_num_groups(&t3, &n));
  EXPECT_EQ(n, 16);
  ASSERT_PLX_OK(plx_replica_grouping_get_group(&t2, 13, &group));
  EXPECT_EQ(group, 1);
  plx_replica_grouping t{};
  ASSERT_PLX_OK(plx_replica_grouping_transpose(&t1, &t));
  EXPECT_EQ(t.group_size, 4);
  EXPECT_EQ(t.stride, 4);
  // group_size 0 is PopXL's default, R / stride
  const plx_replica_grouping orthogonal = grouping(8, 0, 4);
  EXPECT_EQ(orthogonal.group_size, 2);
  EXPECT_EQ(members(orthogonal, 1), (std::vector<int64_t>{1, 5}));
  // valid although the seed's wording would reject it
  EXPECT_EQ(members(grouping(8, 2, 2), 2), (std::vector<int64_t>{4, 6}));
}

TEST(CApiReplication, InvalidGroupingsAreClearErrors) {
  plx_replica_grouping out{7, 7, 7};
  EXPECT_PLX_ERROR(plx_replica_grouping_create(8, 3, 1, &out), PLX_ERR_INVALID_GROUPING,
                   "replication factor 8, group_size 3, stride 1");
  EXPECT_PLX_ERROR(plx_replica_grouping_create(8, 2, 3, &out), PLX_ERR_INVALID_GROUPING, "stride 3");
  EXPECT_EQ(out.replication_factor, 7);  // untouched
  EXPECT_PLX_ERROR(plx_replica_grouping_create(8, 2, 1, nullptr), PLX_ERR_INVALID_ARGUMENT, "out_grouping is NULL");
  const plx_replica_grouping forged{8, 3, 1};  // never went through _create
  int64_t n = 0;
  EXPECT_PLX_ERROR(plx_replica_grouping_get_num_groups(&forged, &n), PLX_ERR_INVALID_GROUPING, "group_size 3");
  const plx_replica_grouping g = grouping(8, 2, 2);
  plx_replica_grouping t{};
  EXPECT_PLX_ERROR(plx_replica_grouping_transpose(&g, &t), PLX_ERR_INVALID_GROUPING, "does not exist");
  int64_t small[1];
  size_t count = 0;
  EXPECT_PLX_ERROR(plx_replica_grouping_get_members(&g, 0, small, 1, &count), PLX_ERR_BUFFER_TOO_SMALL,
                   "group 0 has 2 members but the buffer holds 1");
  EXPECT_EQ(count, 2u);
  EXPECT_PLX_ERROR(plx_replica_grouping_get_members(&g, 4, small, 1, &count), PLX_ERR_INVALID_ARGUMENT,
                   "group 4 is outside [0, 4)");
}

TEST(CApiReplication, ReplicationFactorIsSetBeforeTensors) {
  IrPtr ir = make_ir();
  EXPECT_PLX_ERROR(plx_ir_set_replication_factor(ir.get(), 0), PLX_ERR_INVALID_ARGUMENT, "must be >= 1");
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 4));
  const int64_t shape[] = {2};
  const float data[] = {1, 2};
  plx_tensor t = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &t));
  EXPECT_PLX_ERROR(plx_ir_set_replication_factor(ir.get(), 2), PLX_ERR_INVALID_ARGUMENT,
                   "set the replication factor before adding tensors");
  int64_t r = 0;
  ASSERT_PLX_OK(plx_ir_get_replication_factor(ir.get(), &r));
  EXPECT_EQ(r, 4);
}

TEST(CApiReplication, GroupedVariableErrorsAddNothing) {
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 4));
  const int64_t shape[] = {2};
  const float data[4] = {1, 2, 3, 4};
  plx_variable_options o;
  plx_variable_options_init(&o);
  const plx_replica_grouping other_r = grouping(8, 2, 1);
  o.grouping = &other_r;
  plx_tensor t = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_variable_with_options(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &o, &t),
                   PLX_ERR_INVALID_GROUPING, "another replication factor");
  const plx_replica_grouping forged{4, 3, 1};
  o.grouping = &forged;
  EXPECT_PLX_ERROR(plx_ir_add_variable_with_options(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &o, &t),
                   PLX_ERR_INVALID_GROUPING, "group_size 3");
  const plx_replica_grouping pairs = grouping(4, 2, 1);
  o.grouping = &pairs;
  EXPECT_PLX_ERROR(plx_ir_add_variable_with_options(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, 8, &o, &t),
                   PLX_ERR_INVALID_ARGUMENT, "8 bytes, expected 16 for float32[2,2] ([num_groups] + shape)");
  o.retrieval_mode = 7;
  EXPECT_PLX_ERROR(plx_ir_add_variable_with_options(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &o, &t),
                   PLX_ERR_INVALID_ARGUMENT, "retrieval mode 7");
  o.retrieval_mode = PLX_RETRIEVAL_ONE_PER_GROUP;
  o.struct_size = 3;
  EXPECT_PLX_ERROR(plx_ir_add_variable_with_options(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &o, &t),
                   PLX_ERR_INVALID_ARGUMENT, "options->struct_size is 3");
  EXPECT_EQ(t, kSentinelId);
  plx_variable_options_init(&o);
  o.grouping = &pairs;
  ASSERT_PLX_OK(plx_ir_add_variable_with_options(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &o, &t));
}

// R=4, pairs {0,1} {2,3}; each replica adds its own stream data, so replicas diverge.
TEST(CApiReplication, RetrievalModesAndReplicatedStreamsEndToEnd) {
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 4));
  const plx_replica_grouping pairs = grouping(4, 2, 1);
  const int64_t shape[] = {2};
  const float init[4] = {10, 10, 20, 20};  // group 0, group 1
  plx_variable_options o;
  plx_variable_options_init(&o);
  o.grouping = &pairs;
  plx_tensor per_group = 0, per_replica = 0;
  ASSERT_PLX_OK(plx_ir_add_variable_with_options(ir.get(), "g", PLX_DTYPE_FLOAT32, shape, 1, init, sizeof init, &o,
                                                 &per_group));
  o.retrieval_mode = PLX_RETRIEVAL_ALL_REPLICAS;
  ASSERT_PLX_OK(plx_ir_add_variable_with_options(ir.get(), "r", PLX_DTYPE_FLOAT32, shape, 1, init, sizeof init, &o,
                                                 &per_replica));
  plx_stream xs = 0;
  plx_tensor x = 0;
  ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &xs, &x));
  for (plx_tensor v : {per_group, per_replica}) {
    const plx_tensor in[] = {v, x};
    plx_tensor out = 0;
    ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "scaled_add_", in, 2, nullptr, 0, &out, 1, nullptr));
  }
  plx_session_options so;
  plx_session_options_init(&so);
  so.device_iterations = 2;
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), &so, &raw));
  SessionPtr s(raw);

  int64_t host[PLX_MAX_RANK];
  size_t rank = 0;
  ASSERT_PLX_OK(plx_session_get_host_shape(s.get(), xs, host, PLX_MAX_RANK, &rank));
  ASSERT_EQ(std::vector<int64_t>(host, host + rank), (std::vector<int64_t>{2, 4, 2}));  // [iterations, R] + S
  ASSERT_PLX_OK(plx_session_get_variable_shape(s.get(), per_group, host, PLX_MAX_RANK, &rank));
  EXPECT_EQ(std::vector<int64_t>(host, host + rank), (std::vector<int64_t>{2, 2}));  // [num_groups] + shape
  ASSERT_PLX_OK(plx_session_get_variable_shape(s.get(), per_replica, host, PLX_MAX_RANK, &rank));
  EXPECT_EQ(std::vector<int64_t>(host, host + rank), (std::vector<int64_t>{4, 2}));  // [R] + shape

  std::vector<float> xdata(16);
  for (size_t i = 0; i < 16; ++i) xdata[i] = static_cast<float>((i / 2) % 4 + 1);  // replica r adds r+1 per step
  const int64_t xshape[] = {2, 4, 2};
  const plx_host_array in{xs, PLX_DTYPE_FLOAT32, xdata.data(), xshape, 3};
  ASSERT_PLX_OK(plx_session_run(s.get(), &in, 1, nullptr, 0));

  float groups[4] = {}, replicas[8] = {};
  ASSERT_PLX_OK(plx_session_read_variable(s.get(), per_group, groups, sizeof groups));
  EXPECT_EQ(std::vector<float>(groups, groups + 4), (std::vector<float>{12, 12, 26, 26}));  // from replicas 0 and 2
  ASSERT_PLX_OK(plx_session_read_variable(s.get(), per_replica, replicas, sizeof replicas));
  EXPECT_EQ(std::vector<float>(replicas, replicas + 8), (std::vector<float>{12, 12, 14, 14, 26, 26, 28, 28}));
  EXPECT_PLX_ERROR(plx_session_read_variable(s.get(), per_replica, groups, sizeof groups), PLX_ERR_INVALID_ARGUMENT,
                   "16 bytes, expected 32 for float32[4,2]");
  const float written[4] = {1, 2, 3, 4};
  ASSERT_PLX_OK(plx_session_write_variable(s.get(), per_group, written, sizeof written));
  ASSERT_PLX_OK(plx_session_read_variable(s.get(), per_group, groups, sizeof groups));
  EXPECT_EQ(std::vector<float>(groups, groups + 4), (std::vector<float>{1, 2, 3, 4}));

  const int64_t wrong[] = {8, 2};
  const plx_host_array bad{xs, PLX_DTYPE_FLOAT32, xdata.data(), wrong, 2};
  EXPECT_PLX_ERROR(plx_session_run(s.get(), &bad, 1, nullptr, 0), PLX_ERR_SHAPE_MISMATCH,
                   "input stream 'x': host array has shape [8,2], expected [2,4,2]", "replication_factor=4");
}

// An all-reduce needs the collectives plugin; naming a missing one is a clear error.
TEST(CApiReplication, CollectivesPluginOptionAndEnvironment) {
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 2));
  const int64_t shape[] = {3};
  plx_stream xs = 0, ys = 0;
  plx_tensor x = 0, y = 0;
  ASSERT_PLX_OK(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, &xs, &x));
  const plx_attr mean = plx_attr_string("op", "mean");
  ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "replicated_all_reduce", &x, 1, &mean, 1, &y, 1, nullptr));
  ASSERT_PLX_OK(plx_ir_add_d2h_stream(ir.get(), "y", y, &ys));

  plx_session_options so;
  plx_session_options_init(&so);
  so.collectives_plugin = "does_not_exist";
  plx_session* raw = nullptr;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &so, &raw), PLX_ERR_PLUGIN,
                   "collectives plugin 'does_not_exist' not found", "libplexus-collectives-does_not_exist.so");
  EXPECT_EQ(raw, nullptr);
  setenv("PLEXUS_COLLECTIVES", "also_missing", 1);
  so.collectives_plugin = nullptr;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &so, &raw), PLX_ERR_PLUGIN, "'also_missing' not found");
  unsetenv("PLEXUS_COLLECTIVES");
  so.collective_timeout_ms = 0;
  EXPECT_PLX_ERROR(plx_session_create(ir.get(), &so, &raw), PLX_ERR_INVALID_ARGUMENT, "collective_timeout_ms is 0");

  plx_session_options_init(&so);
  ASSERT_PLX_OK(plx_session_create(ir.get(), &so, &raw));
  SessionPtr s(raw);
  const float xdata[6] = {1, 2, 3, 5, 6, 7};
  float ydata[6] = {};
  const int64_t host[] = {2, 3};
  const plx_host_array in{xs, PLX_DTYPE_FLOAT32, const_cast<float*>(xdata), host, 2};
  const plx_host_array out{ys, PLX_DTYPE_FLOAT32, ydata, host, 2};
  ASSERT_PLX_OK(plx_session_run(s.get(), &in, 1, &out, 1));
  EXPECT_EQ(std::vector<float>(ydata, ydata + 6), (std::vector<float>{3, 4, 5, 3, 4, 5}));
  size_t size = 0;
  plx_session_get_report(s.get(), nullptr, 0, &size);
  std::string report(size, '\0');
  ASSERT_PLX_OK(plx_session_get_report(s.get(), report.data(), size, &size));
  EXPECT_THAT(report, HasSubstr("\"plugin\": \"local\""));
  EXPECT_THAT(report, HasSubstr("\"replication_factor\": 2"));
}

}  // namespace
