// Remote buffers, remote and replica-sharded variables and in_sequence through the C API
// only (seed 000 17.2, seed 001 13.3): ids of the right kind, clear errors, and a sharded
// round trip with the storage it reports.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

plx_remote_buffer make_buffer(plx_ir* ir, int64_t elements, int64_t entries) {
  plx_remote_buffer b = 0;
  const int64_t shape[] = {elements};
  EXPECT_EQ(plx_ir_add_remote_buffer(ir, PLX_DTYPE_FLOAT32, shape, 1, entries, &b), PLX_OK) << plx_last_error();
  return b;
}

TEST(CApiRemote, BufferIdsAreCheckedLikeOtherIds) {
  IrPtr ir = make_ir(), other = make_ir();
  const int64_t shape[] = {4};
  plx_remote_buffer b = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_remote_buffer(ir.get(), PLX_DTYPE_FLOAT32, shape, 1, 0, &b), PLX_ERR_INVALID_ARGUMENT,
                   "entries is 0, must be >= 1");
  EXPECT_PLX_ERROR(plx_ir_add_remote_buffer(ir.get(), 42, shape, 1, 1, &b), PLX_ERR_INVALID_ARGUMENT, "dtype 42");
  EXPECT_EQ(b, kSentinelId);
  b = make_buffer(ir.get(), 4, 2);
  const plx_remote_buffer foreign = make_buffer(other.get(), 4, 2);
  const float data[4] = {};
  plx_tensor t = kSentinelId;
  // a buffer id where a tensor id belongs, and the other way round
  EXPECT_PLX_ERROR(plx_ir_add_d2h_stream(ir.get(), "s", b, reinterpret_cast<plx_stream*>(&t)), PLX_ERR_INVALID_ARGUMENT,
                   "is a remote buffer id, not a tensor id");
  plx_tensor v = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "v", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, &v));
  EXPECT_PLX_ERROR(plx_ir_add_remote_variable(ir.get(), "r", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, v, 0,
                                              nullptr, &t),
                   PLX_ERR_INVALID_ARGUMENT, "is a tensor id, not a remote buffer id");
  EXPECT_PLX_ERROR(plx_ir_add_remote_variable(ir.get(), "r", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, foreign,
                                              0, nullptr, &t),
                   PLX_ERR_INVALID_ARGUMENT, "belongs to another IR");
  EXPECT_PLX_ERROR(plx_ir_add_remote_variable(ir.get(), "r", PLX_DTYPE_FLOAT32, shape, 1, data, sizeof data, b, 2,
                                              nullptr, &t),
                   PLX_ERR_INVALID_ARGUMENT, "entry 2 is outside [0, 2)");
  const int64_t wrong[] = {3};
  EXPECT_PLX_ERROR(plx_ir_add_remote_variable(ir.get(), "r", PLX_DTYPE_FLOAT32, wrong, 1, data, 12, b, 0, nullptr, &t),
                   PLX_ERR_SHAPE_MISMATCH, "holds float32[4] slots, the variable needs float32[3]");
  EXPECT_EQ(t, kSentinelId);
  // the op attribute "buffer" takes the same ids
  const plx_attr bad_buffer = plx_attr_int("buffer", static_cast<int64_t>(v));
  plx_tensor loaded = 0;
  EXPECT_PLX_ERROR(plx_ir_add_op(ir.get(), "remote_load", nullptr, 0, &bad_buffer, 1, &loaded, 1, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "attribute 'buffer'", "not a remote buffer id");
  const plx_attr attrs[] = {plx_attr_int("buffer", static_cast<int64_t>(b)), plx_attr_int("index", 2)};
  EXPECT_PLX_ERROR(plx_ir_add_op(ir.get(), "remote_load", nullptr, 0, attrs, 2, &loaded, 1, nullptr),
                   PLX_ERR_INVALID_ARGUMENT, "index 2 is outside [0, 2)");
}

TEST(CApiRemote, InSequenceScopesMustBalance) {
  IrPtr ir = make_ir();
  EXPECT_PLX_ERROR(plx_ir_end_sequence(ir.get()), PLX_ERR_INVALID_ARGUMENT, "end without a matching begin");
  ASSERT_PLX_OK(plx_ir_begin_sequence(ir.get()));
  ASSERT_PLX_OK(plx_ir_begin_sequence(ir.get()));
  ASSERT_PLX_OK(plx_ir_end_sequence(ir.get()));
  ASSERT_PLX_OK(plx_ir_end_sequence(ir.get()));
  EXPECT_PLX_ERROR(plx_ir_begin_sequence(nullptr), PLX_ERR_INVALID_ARGUMENT, "ir is NULL");
}

// R=2: W (5 elements) sharded in 3-element shards, W1-like remote shards, read back in full.
TEST(CApiRemote, ShardedVariablesRoundTripAndReportTheirStorage) {
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 2));
  const int64_t full[] = {5};
  const float values[5] = {1, 2, 3, 4, 5};
  plx_tensor var = 0, shard = 0;
  ASSERT_PLX_OK(plx_ir_add_replica_sharded_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, full, 1, values, sizeof values,
                                                    nullptr, &var, &shard));
  EXPECT_EQ(var, shard);
  int64_t dims[PLX_MAX_RANK];
  size_t rank = 0;
  ASSERT_PLX_OK(plx_ir_get_tensor_type(ir.get(), shard, nullptr, dims, PLX_MAX_RANK, &rank));
  EXPECT_EQ(std::vector<int64_t>(dims, dims + rank), (std::vector<int64_t>{3}));
  const plx_remote_buffer b = make_buffer(ir.get(), 3, 1);
  plx_tensor remote = 0;
  ASSERT_PLX_OK(plx_ir_add_remote_replica_sharded_variable(ir.get(), "w1", PLX_DTYPE_FLOAT32, full, 1, values,
                                                           sizeof values, b, 0, nullptr, &remote));
  plx_variable_options o;
  plx_variable_options_init(&o);
  o.shard_over = 3;
  plx_tensor bad = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_replica_sharded_variable(ir.get(), "x", PLX_DTYPE_FLOAT32, full, 1, values,
                                                       sizeof values, &o, &bad, &bad),
                   PLX_ERR_INVALID_GROUPING, "shard_over 3 must divide the group size");
  EXPECT_EQ(bad, kSentinelId);

  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), nullptr, &raw));
  SessionPtr s(raw);
  float back[5] = {};
  for (plx_tensor t : {var, remote}) {
    ASSERT_PLX_OK(plx_session_read_variable(s.get(), t, back, sizeof back));
    EXPECT_EQ(std::vector<float>(back, back + 5), std::vector<float>(values, values + 5));
  }
  plx_variable_storage st{};
  st.struct_size = 8;
  EXPECT_PLX_ERROR(plx_session_get_variable_storage(s.get(), var, &st), PLX_ERR_INVALID_ARGUMENT,
                   "out_storage->struct_size is 8");
  st.struct_size = sizeof st;
  ASSERT_PLX_OK(plx_session_get_variable_storage(s.get(), var, &st));
  EXPECT_EQ(st.device_bytes, 12);  // 3 of the 5 floats, padded
  EXPECT_EQ(st.remote_bytes, 0);
  EXPECT_EQ(st.shard_over, 2);
  ASSERT_PLX_OK(plx_session_get_variable_storage(s.get(), remote, &st));
  EXPECT_EQ(st.device_bytes, 0);
  EXPECT_EQ(st.remote_bytes, 12);

  // plx_memory_stats: remote bytes for callers that know the field, untouched for older ones
  plx_memory_stats m{};
  m.struct_size = sizeof m;
  ASSERT_PLX_OK(plx_session_get_memory_stats(s.get(), 1, &m));
  EXPECT_EQ(m.remote_buffer_bytes, 12);
  plx_memory_stats old{};
  old.struct_size = offsetof(plx_memory_stats, remote_buffer_bytes);
  old.remote_buffer_bytes = -5;
  ASSERT_PLX_OK(plx_session_get_memory_stats(s.get(), 1, &old));
  EXPECT_EQ(old.remote_buffer_bytes, -5);
}

}  // namespace
