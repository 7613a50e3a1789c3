// The data loader through the C API (plx_loader_*) and the C++ wrapper (plx::Loader):
// misuse returns one specific status with a message naming what is wrong and leaves
// out-parameters alone; the fill callbacks never throw, return their status and set
// plx_last_error() of the calling thread.
#include <plexus/plexus.h>

#include <plexus/plexus.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

struct LoaderDeleter {
  void operator()(plx_loader* p) const { plx_loader_destroy(p); }
};
using LoaderPtr = std::unique_ptr<plx_loader, LoaderDeleter>;

// A dataset of 12 samples of 2 x 2 pixels (pixel value = 10 x sample), label = sample.
class CApiLoader : public CApiDatasetFiles {
 protected:
  void SetUp() override {
    CApiDatasetFiles::SetUp();
    std::vector<uint8_t> pixels, labels;
    for (uint8_t s = 0; s < 12; ++s) {
      pixels.insert(pixels.end(), 4, static_cast<uint8_t>(10 * s));
      labels.push_back(s);
    }
    images_path_ = write_idx("images", {12, 2, 2}, pixels);
    labels_path_ = write_idx("labels", {12}, labels);
    plx_dataset* raw = nullptr;
    ASSERT_PLX_OK(plx_dataset_load_idx(images_path_.c_str(), labels_path_.c_str(), &raw));
    dataset_.reset(raw);
    plx_loader_options_init(&options_);
    options_.batch_size = 2;
    options_.replicas = 2;
    options_.steps_per_run = 3;  // P = 12
  }

  // The status of plx_loader_create with `o`; on failure checks out_loader is untouched.
  plx_status create(const plx_loader_options& o) {
    plx_loader* sentinel = reinterpret_cast<plx_loader*>(uintptr_t{0x4321});
    plx_loader* out = sentinel;
    const plx_status status = plx_loader_create(dataset_.get(), &o, &out);
    if (status == PLX_OK) {
      plx_loader_destroy(out);
    } else {
      EXPECT_EQ(out, sentinel);
    }
    return status;
  }

  LoaderPtr make_loader() {
    plx_loader* raw = nullptr;
    EXPECT_EQ(plx_loader_create(dataset_.get(), &options_, &raw), PLX_OK) << plx_last_error();
    return LoaderPtr(raw);
  }

  std::string images_path_, labels_path_;
  DatasetPtr dataset_;
  plx_loader_options options_;
};

TEST_F(CApiLoader, OptionsInitSetsTheDefaults) {
  plx_loader_options o;
  plx_loader_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(plx_loader_options));
  EXPECT_EQ(o.batch_size, 1);
  EXPECT_EQ(o.replicas, 1);
  EXPECT_EQ(o.steps_per_run, 1);
  EXPECT_EQ(o.shuffle, 1);
  EXPECT_EQ(o.seed, 0u);
  EXPECT_FLOAT_EQ(o.mean, 0.1307f);
  EXPECT_FLOAT_EQ(o.std, 0.3081f);
  EXPECT_EQ(o.drop_last, 1);
  EXPECT_EQ(o.workers, 2);
  EXPECT_EQ(o.num_shards, 1);
  EXPECT_EQ(o.shard_index, 0);
  plx_loader_options_init(nullptr);
  plx_loader_destroy(nullptr);
}

TEST_F(CApiLoader, NullArgumentsAreRefused) {
  plx_loader* out = nullptr;
  EXPECT_PLX_ERROR(plx_loader_create(nullptr, &options_, &out), PLX_ERR_INVALID_ARGUMENT, "plx_loader_create",
                   "dataset is NULL");
  EXPECT_PLX_ERROR(plx_loader_create(dataset_.get(), nullptr, &out), PLX_ERR_INVALID_ARGUMENT, "plx_loader_create",
                   "options is NULL");
  EXPECT_PLX_ERROR(plx_loader_create(dataset_.get(), &options_, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_loader_create", "out_loader is NULL");
  int64_t runs = -7;
  EXPECT_PLX_ERROR(plx_loader_get_runs_per_epoch(nullptr, &runs), PLX_ERR_INVALID_ARGUMENT, "plx_loader_get_runs_per_epoch",
                   "loader is NULL");
  EXPECT_EQ(runs, -7);
  EXPECT_PLX_ERROR(plx_loader_begin_run(nullptr, 0, 0), PLX_ERR_INVALID_ARGUMENT, "plx_loader_begin_run",
                   "loader is NULL");
  plx_stream_callback callbacks[2];
  EXPECT_PLX_ERROR(plx_loader_get_callbacks(nullptr, 1, 2, callbacks), PLX_ERR_INVALID_ARGUMENT,
                   "plx_loader_get_callbacks", "loader is NULL");
  LoaderPtr loader = make_loader();
  EXPECT_PLX_ERROR(plx_loader_get_runs_per_epoch(loader.get(), nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_loader_get_runs_per_epoch", "out_runs is NULL");
  EXPECT_PLX_ERROR(plx_loader_get_callbacks(loader.get(), 1, 2, nullptr), PLX_ERR_INVALID_ARGUMENT,
                   "plx_loader_get_callbacks", "out_callbacks is NULL");
}

TEST_F(CApiLoader, OptionsOutOfRangeAreNamed) {
  auto expect_refused = [&](void (*change)(plx_loader_options&), std::initializer_list<std::string> parts) {
    plx_loader_options o = options_;
    change(o);
    capi_test::reset_last_error();
    EXPECT_EQ(create(o), PLX_ERR_INVALID_ARGUMENT);
    for (const std::string& part : parts) EXPECT_THAT(plx_last_error(), HasSubstr(part));
    EXPECT_THAT(plx_last_error(), HasSubstr("plx_loader_create"));
  };
  expect_refused([](plx_loader_options& o) { o.batch_size = 0; }, {"batch_size is 0", ">= 1"});
  expect_refused([](plx_loader_options& o) { o.replicas = 0; }, {"replicas is 0"});
  expect_refused([](plx_loader_options& o) { o.steps_per_run = 0; }, {"steps_per_run is 0"});
  expect_refused([](plx_loader_options& o) { o.workers = 0; }, {"workers is 0"});
  expect_refused([](plx_loader_options& o) { o.std = 0.0f; }, {"std is 0", "> 0"});
  expect_refused([](plx_loader_options& o) { o.shuffle = 2; }, {"options->shuffle is 2", "0 or 1"});
  expect_refused([](plx_loader_options& o) { o.drop_last = -1; }, {"options->drop_last is -1", "0 or 1"});
  expect_refused([](plx_loader_options& o) { o.num_shards = 0; }, {"num_shards is 0"});
  expect_refused([](plx_loader_options& o) { o.num_shards = 2, o.shard_index = 2; },
                 {"shard_index is 2", "[0, 2)"});
  constexpr size_t kVersion5Size = offsetof(plx_loader_options, workers) + sizeof(int32_t);
  expect_refused([](plx_loader_options& o) { o.struct_size = kVersion5Size - 4; },
                 {"options->struct_size is " + std::to_string(kVersion5Size - 4), "plx_loader_options_init"});
  expect_refused([](plx_loader_options& o) { o.struct_size = 0; }, {"options->struct_size is 0"});
  // 12 samples, a run of 3 x 2 x 8 = 48: refused with drop_last, one wrapped run without.
  expect_refused([](plx_loader_options& o) { o.batch_size = 8; },
                 {images_path_, "12 samples", "fewer than one run of 48", "drop_last"});
  // A caller built against version 5 (no shard fields) gets one shard, whatever follows.
  plx_loader_options v5 = options_;
  v5.struct_size = kVersion5Size;
  v5.num_shards = 0;
  EXPECT_EQ(create(v5), PLX_OK) << plx_last_error();
  plx_loader_options wrapped = options_;
  wrapped.batch_size = 8;
  wrapped.drop_last = 0;
  EXPECT_EQ(create(wrapped), PLX_OK) << plx_last_error();
}

TEST_F(CApiLoader, BeginRunOutOfRangeIsRefused) {
  LoaderPtr loader = make_loader();
  int64_t runs = 0;
  ASSERT_PLX_OK(plx_loader_get_runs_per_epoch(loader.get(), &runs));
  EXPECT_EQ(runs, 1);
  EXPECT_PLX_ERROR(plx_loader_begin_run(loader.get(), -1, 0), PLX_ERR_INVALID_ARGUMENT, "plx_loader_begin_run",
                   "epoch is -1");
  EXPECT_PLX_ERROR(plx_loader_begin_run(loader.get(), 0, 1), PLX_ERR_INVALID_ARGUMENT, "plx_loader_begin_run",
                   "run is 1", "[0, 1)");
  EXPECT_PLX_ERROR(plx_loader_begin_run(loader.get(), 0, -1), PLX_ERR_INVALID_ARGUMENT, "run is -1");
  ASSERT_PLX_OK(plx_loader_begin_run(loader.get(), 4, 0));
}

TEST_F(CApiLoader, CallbacksServeTheRunAndReportFailuresByStatus) {
  options_.shuffle = 0;
  LoaderPtr loader = make_loader();
  plx_stream_callback callbacks[2];
  ASSERT_PLX_OK(plx_loader_get_callbacks(loader.get(), 111, 222, callbacks));
  const plx_stream_callback& images = callbacks[0];
  const plx_stream_callback& labels = callbacks[1];
  EXPECT_EQ(images.stream, 111u);
  EXPECT_EQ(labels.stream, 222u);
  ASSERT_NE(images.fill, nullptr);
  EXPECT_EQ(images.deliver, nullptr);
  EXPECT_EQ(labels.deliver, nullptr);

  int32_t label_batch[2] = {-1, -1};
  EXPECT_PLX_ERROR(labels.fill(labels.user_data, 222, 0, 0, label_batch, sizeof label_batch), PLX_ERR_RUNTIME,
                   "labels callback of stream 222", "no current run");
  ASSERT_PLX_OK(plx_loader_begin_run(loader.get(), 0, 0));
  ASSERT_PLX_OK(labels.fill(labels.user_data, 222, 2, 1, label_batch, sizeof label_batch));
  EXPECT_EQ(label_batch[0], 10);  // step 2, replica 1: positions (2 x 2 + 1) x 2 = 10, 11
  EXPECT_EQ(label_batch[1], 11);
  float image_batch[8];
  ASSERT_PLX_OK(images.fill(images.user_data, 111, 0, 1, image_batch, sizeof image_batch));
  EXPECT_FLOAT_EQ(image_batch[0], (20.0f / 255.0f - 0.1307f) / 0.3081f);  // sample 2, pixel 20

  EXPECT_PLX_ERROR(images.fill(images.user_data, 111, 0, 0, image_batch, 16), PLX_ERR_SHAPE_MISMATCH,
                   "images callback of stream 111", "16 bytes", "32 expected");
  EXPECT_PLX_ERROR(labels.fill(labels.user_data, 222, 3, 0, label_batch, sizeof label_batch),
                   PLX_ERR_INVALID_ARGUMENT, "step is 3");
  EXPECT_PLX_ERROR(labels.fill(nullptr, 222, 0, 0, label_batch, sizeof label_batch), PLX_ERR_INVALID_ARGUMENT,
                   "user_data is NULL");
}

TEST_F(CApiLoader, CppWrapperOwnsTheLoaderAndThrowsOnErrors) {
  plx::Dataset dataset(images_path_, labels_path_);
  plx_loader_options o = plx::Loader::default_options();
  o.batch_size = 3;
  o.seed = 42;
  plx::Loader loader(dataset, o);
  EXPECT_EQ(loader.runs_per_epoch(), 4);
  loader.begin_run(1, 3);
  const std::array<plx_stream_callback, 2> callbacks = loader.callbacks(5, 6);
  int32_t labels[3];
  ASSERT_PLX_OK(callbacks[1].fill(callbacks[1].user_data, 6, 0, 0, labels, sizeof labels));
  for (int32_t l : labels) EXPECT_THAT(l, ::testing::AllOf(::testing::Ge(0), ::testing::Lt(12)));
  o.workers = 0;
  try {
    plx::Loader bad(dataset, o);
    ADD_FAILURE() << "no error";
  } catch (const plx::Error& e) {
    EXPECT_EQ(e.status(), PLX_ERR_INVALID_ARGUMENT);
    EXPECT_THAT(e.what(), HasSubstr("workers is 0"));
  }
}

}  // namespace
