// The names C API version 10 deprecated (plexus.h, "Deprecated names") still work until
// 1.0: each old symbol gives what its replacement gives, errors included.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

// This file calls the deprecated names on purpose.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

using namespace capi_test;

TEST(CApiDeprecated, InSequenceBeginAndEnd) {
  const IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_in_sequence_begin(ir.get()));
  ASSERT_PLX_OK(plx_ir_begin_sequence(ir.get()));  // scopes nest, old and new names alike
  ASSERT_PLX_OK(plx_ir_in_sequence_end(ir.get()));
  ASSERT_PLX_OK(plx_ir_end_sequence(ir.get()));
  EXPECT_PLX_ERROR(plx_ir_in_sequence_end(ir.get()), PLX_ERR_INVALID_ARGUMENT);
  EXPECT_PLX_ERROR(plx_ir_in_sequence_begin(nullptr), PLX_ERR_INVALID_ARGUMENT, "plx_ir_begin_sequence", "ir");
}

TEST(CApiDeprecated, ReplicaGroupingNumGroups) {
  plx_replica_grouping g{};
  ASSERT_PLX_OK(plx_replica_grouping_create(8, 2, 1, &g));
  int64_t old_count = 0, new_count = 0;
  ASSERT_PLX_OK(plx_replica_grouping_num_groups(&g, &old_count));
  ASSERT_PLX_OK(plx_replica_grouping_get_num_groups(&g, &new_count));
  EXPECT_EQ(old_count, 4);
  EXPECT_EQ(new_count, 4);
  EXPECT_PLX_ERROR(plx_replica_grouping_num_groups(nullptr, &old_count), PLX_ERR_INVALID_ARGUMENT, "grouping");
}

TEST(CApiDeprecated, GetRuntimeInfo) {
  size_t old_size = 0, new_size = 0;
  EXPECT_EQ(plx_get_runtime_info(nullptr, 0, &old_size), PLX_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(plx_runtime_get_info(nullptr, 0, &new_size), PLX_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(old_size, new_size);
  std::vector<char> text(old_size);
  ASSERT_PLX_OK(plx_get_runtime_info(text.data(), text.size(), nullptr));
  EXPECT_THAT(std::string(text.data()), HasSubstr("Plexus API " + std::to_string(PLX_API_VERSION)));
}

TEST(CApiDeprecated, WorkersFromEnvironment) {
  int64_t count = -1, index = -1;
  ASSERT_PLX_OK(plx_workers_from_environment(&count, &index));
  EXPECT_EQ(count, 1);
  EXPECT_EQ(index, 0);
  EXPECT_PLX_ERROR(plx_workers_from_environment(nullptr, &index), PLX_ERR_INVALID_ARGUMENT, "out_num_workers");
}

TEST(CApiDeprecated, SessionNumDevices) {
  const IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 3));
  const int64_t shape[] = {1};
  const float one = 1;
  plx_tensor w = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, shape, 1, &one, sizeof one, &w));
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), nullptr, &raw));
  const SessionPtr s(raw);
  size_t old_count = 0, new_count = 0;
  ASSERT_PLX_OK(plx_session_num_devices(s.get(), &old_count));
  ASSERT_PLX_OK(plx_session_get_num_devices(s.get(), &new_count));
  EXPECT_EQ(old_count, 3u);
  EXPECT_EQ(new_count, 3u);
  EXPECT_PLX_ERROR(plx_session_num_devices(nullptr, &old_count), PLX_ERR_INVALID_ARGUMENT, "session");
}

class CApiDeprecatedLoader : public CApiDatasetFiles {};

TEST_F(CApiDeprecatedLoader, LoaderRunsPerEpoch) {
  // 12 images of 2x2 and their labels: 6 runs of batch 2.
  std::vector<uint8_t> images(12 * 4, 7), labels(12, 1);
  const std::string images_path = write_idx("images", {12, 2, 2}, images);
  const std::string labels_path = write_idx("labels", {12}, labels);
  plx_dataset* dataset = nullptr;
  ASSERT_PLX_OK(plx_dataset_load_idx(images_path.c_str(), labels_path.c_str(), &dataset));
  const DatasetPtr d(dataset);
  plx_loader_options o;
  plx_loader_options_init(&o);
  o.batch_size = 2;
  plx_loader* loader = nullptr;
  ASSERT_PLX_OK(plx_loader_create(d.get(), &o, &loader));
  int64_t old_runs = 0, new_runs = 0;
  EXPECT_EQ(plx_loader_runs_per_epoch(loader, &old_runs), PLX_OK) << plx_last_error();
  EXPECT_EQ(plx_loader_get_runs_per_epoch(loader, &new_runs), PLX_OK) << plx_last_error();
  EXPECT_EQ(old_runs, 6);
  EXPECT_EQ(new_runs, 6);
  EXPECT_PLX_ERROR(plx_loader_runs_per_epoch(loader, nullptr), PLX_ERR_INVALID_ARGUMENT, "out_runs");
  plx_loader_destroy(loader);
}

void on_saved(void* user_data, plx_status status, const char*) { *static_cast<plx_status*>(user_data) = status; }

// plx_checkpoint_done is plx_run_complete_fn under its old name: an asynchronous save calls it.
TEST_F(CApiDeprecatedLoader, CheckpointDoneIsTheCompletionCallback) {
  const IrPtr ir = make_ir();
  const int64_t shape[] = {2};
  const float values[] = {1, 2};
  plx_tensor w = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, shape, 1, values, sizeof values, &w));
  plx_session* raw = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), nullptr, &raw));
  const SessionPtr s(raw);
  const plx_checkpoint_done old_type = on_saved;
  plx_checkpoint_options o;
  plx_checkpoint_options_init(&o);
  o.on_complete = old_type;
  plx_status seen = PLX_ERR_INTERNAL;
  o.user_data = &seen;
  const std::string path = (dir_ / "w.ckpt").string();
  plx_run* save = nullptr;
  ASSERT_PLX_OK(plx_session_save_checkpoint_async(s.get(), path.c_str(), &o, &save));
  EXPECT_EQ(plx_run_wait(save, -1), PLX_OK) << plx_last_error();
  plx_run_destroy(save);
  EXPECT_EQ(seen, PLX_OK);
}

}  // namespace
