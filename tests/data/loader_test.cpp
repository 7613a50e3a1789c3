// Tests of core/data/loader: a small synthetic IDX dataset in memory (label = sample
// index, so the labels a loader serves spell out its sample order); order, layout and
// normalisation against the formulas of the spec, concurrent fills, and every refusal.
#include "core/data/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "core/ir/error.h"

namespace plexus::data {
namespace {

using ::testing::HasSubstr;

// n samples of h x w uint8 pixels (pixel p of sample s = (s * 31 + p * 7) mod 256) and
// uint8 labels s mod 256.
IdxDataset make_dataset(int64_t n, int64_t h = 2, int64_t w = 3) {
  IdxDataset d;
  d.images.path = "synthetic-images";
  d.images.shape = {n, h, w};
  d.images.data.resize(static_cast<size_t>(n * h * w));
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t p = 0; p < h * w; ++p) {
      d.images.data[static_cast<size_t>(s * h * w + p)] = static_cast<std::byte>((s * 31 + p * 7) % 256);
    }
  }
  d.labels.path = "synthetic-labels";
  d.labels.shape = {n};
  d.labels.data.resize(static_cast<size_t>(n));
  for (int64_t s = 0; s < n; ++s) d.labels.data[static_cast<size_t>(s)] = static_cast<std::byte>(s % 256);
  return d;
}

LoaderOptions options(int64_t batch, int64_t replicas, int64_t steps, uint64_t seed = 0) {
  LoaderOptions o;
  o.batch_size = batch;
  o.replicas = replicas;
  o.steps_per_run = steps;
  o.seed = seed;
  return o;
}

// The spec's order of an epoch: samples/common/mnist_data.h ImageSplit::shuffle(seed + epoch).
std::vector<int64_t> spec_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed + static_cast<uint64_t>(epoch));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

// Everything one run serves, in position order ([steps, R, batch]).
struct RunData {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

RunData fill_run(Loader& loader, const LoaderOptions& o, int64_t epoch, int64_t run) {
  loader.begin_run(epoch, run);
  const size_t image_floats = loader.fill_bytes(LoaderRole::Images) / sizeof(float);
  const auto batch = static_cast<size_t>(o.batch_size);
  RunData out;
  out.images.resize(static_cast<size_t>(o.steps_per_run * o.replicas) * image_floats);
  out.labels.resize(static_cast<size_t>(o.steps_per_run * o.replicas) * batch);
  for (int64_t k = 0; k < o.steps_per_run; ++k) {
    for (int64_t r = 0; r < o.replicas; ++r) {
      const auto slot = static_cast<size_t>(k * o.replicas + r);
      loader.fill(LoaderRole::Images, k, r, out.images.data() + slot * image_floats,
                  loader.fill_bytes(LoaderRole::Images));
      loader.fill(LoaderRole::Labels, k, r, out.labels.data() + slot * batch, loader.fill_bytes(LoaderRole::Labels));
    }
  }
  return out;
}

// The labels (= sample indices) of a whole epoch.
std::vector<int64_t> epoch_samples(Loader& loader, const LoaderOptions& o, int64_t epoch) {
  std::vector<int64_t> out;
  for (int64_t run = 0; run < loader.runs_per_epoch(); ++run) {
    const RunData d = fill_run(loader, o, epoch, run);
    out.insert(out.end(), d.labels.begin(), d.labels.end());
  }
  return out;
}

// Expects `body` to throw ir::Error with `code` and a message containing every part.
template <class F>
void expect_error(F&& body, ir::ErrorCode code, std::initializer_list<const char*> parts) {
  try {
    body();
    ADD_FAILURE() << "no error thrown";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const char* part : parts) EXPECT_THAT(e.what(), HasSubstr(part));
  }
}

TEST(Loader, AnEpochIsTheSeededPermutationWhenPDividesN) {
  const IdxDataset d = make_dataset(24);
  for (bool drop_last : {true, false}) {
    LoaderOptions o = options(2, 2, 3, 7);  // P = 12
    o.drop_last = drop_last;
    Loader loader(d, o);
    ASSERT_EQ(loader.runs_per_epoch(), 2);
    const std::vector<int64_t> served = epoch_samples(loader, o, 0);
    EXPECT_EQ(served, spec_order(24, 7, 0));
    std::vector<int64_t> sorted = served;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(24);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all) << "every sample exactly once";
  }
}

TEST(Loader, OrderDependsOnSeedAndEpochOnly) {
  const IdxDataset d = make_dataset(40);
  const LoaderOptions a = options(4, 1, 2, 1), b = options(4, 1, 2, 2);
  Loader first(d, a), again(d, a), other_seed(d, b);
  const std::vector<int64_t> e0 = epoch_samples(first, a, 0), e1 = epoch_samples(first, a, 1);
  EXPECT_EQ(epoch_samples(again, a, 0), e0);
  EXPECT_EQ(epoch_samples(again, a, 1), e1);
  EXPECT_NE(e0, e1);
  EXPECT_NE(epoch_samples(other_seed, b, 0), e0);
  EXPECT_EQ(epoch_samples(other_seed, b, 0), spec_order(40, 2, 0));
  // Going back to an earlier run re-serves the same data.
  EXPECT_EQ(fill_run(first, a, 0, 1).labels, fill_run(again, a, 0, 1).labels);
}

TEST(Loader, WithoutShuffleTheOrderIsTheDatasets) {
  const IdxDataset d = make_dataset(12);
  LoaderOptions o = options(3, 1, 1, 99);
  o.shuffle = false;
  Loader loader(d, o);
  for (int64_t epoch : {0, 5}) {
    std::vector<int64_t> all(12);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(epoch_samples(loader, o, epoch), all);
  }
}

TEST(Loader, DropLastDropsTheTailAndOtherwiseWrapsToTheStart) {
  const IdxDataset d = make_dataset(26);
  const std::vector<int64_t> order = spec_order(26, 3, 2);
  LoaderOptions o = options(2, 3, 2, 3);  // P = 12
  Loader dropping(d, o);
  EXPECT_EQ(dropping.runs_per_epoch(), 2);
  EXPECT_EQ(epoch_samples(dropping, o, 2), std::vector<int64_t>(order.begin(), order.begin() + 24));

  o.drop_last = false;
  Loader wrapping(d, o);
  ASSERT_EQ(wrapping.runs_per_epoch(), 3);
  std::vector<int64_t> expected = order;
  expected.insert(expected.end(), order.begin(), order.begin() + 10);  // 36 positions
  EXPECT_EQ(epoch_samples(wrapping, o, 2), expected);
}

TEST(Loader, FewerSamplesThanOneRunWrapWithoutDropLast) {
  const IdxDataset d = make_dataset(5);
  LoaderOptions o = options(4, 1, 3, 0);  // P = 12 > N
  o.drop_last = false;
  o.shuffle = false;
  Loader loader(d, o);
  ASSERT_EQ(loader.runs_per_epoch(), 1);
  EXPECT_EQ(epoch_samples(loader, o, 0), (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}));
}

TEST(Loader, ImagesAreBitIdenticalToTheImageSplitFormula) {
  const int64_t h = 5, w = 7;
  const IdxDataset d = make_dataset(20, h, w);
  const LoaderOptions o = options(5, 2, 2, 11);  // defaults: MNIST mean and std
  Loader loader(d, o);
  const RunData run = fill_run(loader, o, 0, 0);
  // samples/common/mnist_data.h ImageSplit::fill, verbatim.
  constexpr float kMnistMean = 0.1307f, kMnistStd = 0.3081f;
  constexpr float scale = 1.0f / (255.0f * kMnistStd), shift = -kMnistMean / kMnistStd;
  const auto* pixels = reinterpret_cast<const uint8_t*>(d.images.data.data());
  const std::vector<int64_t> order = spec_order(20, 11, 0);
  std::vector<float> expected(run.images.size());
  for (size_t i = 0; i < 20; ++i) {
    const uint8_t* src = pixels + order[i] * h * w;
    float* dst = expected.data() + i * static_cast<size_t>(h * w);
    for (int64_t p = 0; p < h * w; ++p) dst[p] = static_cast<float>(src[p]) * scale + shift;
  }
  ASSERT_EQ(run.images.size(), expected.size());
  EXPECT_EQ(std::memcmp(run.images.data(), expected.data(), expected.size() * sizeof(float)), 0);
  EXPECT_NEAR(run.images[0], (static_cast<float>(pixels[order[0] * h * w]) / 255.0f - kMnistMean) / kMnistStd, 1e-5);
}

TEST(Loader, StepAndReplicaTakeTheirSliceOfTheRun) {
  const IdxDataset d = make_dataset(72);
  const LoaderOptions o = options(2, 3, 4, 5);  // P = 24
  Loader loader(d, o);
  const std::vector<int64_t> order = spec_order(72, 5, 1);
  loader.begin_run(1, 2);
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t r = 0; r < 3; ++r) {
      int32_t labels[2] = {-1, -1};
      loader.fill(LoaderRole::Labels, k, r, labels, sizeof labels);
      for (int64_t i = 0; i < 2; ++i) {
        EXPECT_EQ(labels[i], order[static_cast<size_t>(2 * 24 + (k * 3 + r) * 2 + i)]) << "step " << k << " replica " << r;
      }
    }
  }
  EXPECT_EQ(loader.fill_bytes(LoaderRole::Images), 2 * 6 * sizeof(float));
  EXPECT_EQ(loader.fill_bytes(LoaderRole::Labels), 2 * sizeof(int32_t));
}

// Seed 002's Dataset.shard(num_workers, index): W processes of R replicas see, replica for
// replica, what one process of W * R replicas sees (the sample order the issue's "2 workers
// x 1 replica = 1 worker x 2 replicas" comparison needs).
TEST(Loader, ShardsServeTheGlobalReplicasOfOneProcess) {
  const IdxDataset d = make_dataset(100, 2, 3);
  for (const int64_t shards : {2, 3}) {
    const int64_t replicas = 2;
    LoaderOptions whole = options(3, replicas * shards, 2, 9);
    Loader one(d, whole);
    for (const int64_t epoch : {0, 1}) {
      for (int64_t run = 0; run < one.runs_per_epoch(); ++run) {
        const RunData all = fill_run(one, whole, epoch, run);
        for (int64_t w = 0; w < shards; ++w) {
          LoaderOptions part = options(3, replicas, 2, 9);
          part.num_shards = shards;
          part.shard_index = w;
          Loader shard(d, part);
          ASSERT_EQ(shard.runs_per_epoch(), one.runs_per_epoch());
          const RunData mine = fill_run(shard, part, epoch, run);
          for (int64_t k = 0; k < 2; ++k) {
            for (int64_t r = 0; r < replicas; ++r) {
              const int64_t global = w * replicas + r;
              for (int64_t b = 0; b < 3; ++b) {
                EXPECT_EQ(mine.labels[static_cast<size_t>((k * replicas + r) * 3 + b)],
                          all.labels[static_cast<size_t>((k * replicas * shards + global) * 3 + b)])
                    << shards << " shards, shard " << w << ", epoch " << epoch << ", run " << run << ", step " << k
                    << ", replica " << r;
              }
            }
          }
          const size_t image = 6;
          const size_t first_mine = static_cast<size_t>(replicas * 3) * image;  // step 1, replica 0
          const size_t first_all = static_cast<size_t>((replicas * shards + w * replicas) * 3) * image;
          EXPECT_TRUE(std::equal(mine.images.begin() + static_cast<std::ptrdiff_t>(first_mine),
                                 mine.images.begin() + static_cast<std::ptrdiff_t>(first_mine + 3 * image),
                                 all.images.begin() + static_cast<std::ptrdiff_t>(first_all)));
        }
      }
    }
  }
}

TEST(Loader, ShardsTogetherCoverEachEpochOnce) {
  const IdxDataset d = make_dataset(48);
  std::vector<int64_t> seen;
  for (int64_t w = 0; w < 3; ++w) {
    LoaderOptions o = options(2, 2, 2, 4);  // P = 2 x 2 x 3 x 2 = 24 over the shards
    o.num_shards = 3;
    o.shard_index = w;
    Loader loader(d, o);
    EXPECT_EQ(loader.runs_per_epoch(), 2);
    const std::vector<int64_t> mine = epoch_samples(loader, o, 0);
    EXPECT_EQ(mine.size(), 16u);
    seen.insert(seen.end(), mine.begin(), mine.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> all(48);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all);
}

TEST(Loader, ConcurrentFillsServeTheSameBytesAsSerialOnes) {
  const IdxDataset d = make_dataset(200, 8, 8);
  LoaderOptions o = options(5, 4, 5, 13);  // P = 100
  o.workers = 3;
  Loader serial(d, o), concurrent(d, o);
  for (int64_t run = 0; run < 2; ++run) {
    const RunData expected = fill_run(serial, o, 0, run);
    concurrent.begin_run(0, run);
    RunData got;
    got.images.resize(expected.images.size());
    got.labels.resize(expected.labels.size());
    const size_t image_floats = concurrent.fill_bytes(LoaderRole::Images) / sizeof(float);
    std::vector<std::thread> threads;
    for (int64_t t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {  // thread t serves replica t, both streams
        for (int64_t k = 0; k < o.steps_per_run; ++k) {
          const auto slot = static_cast<size_t>(k * o.replicas + t);
          concurrent.fill(LoaderRole::Images, k, t, got.images.data() + slot * image_floats,
                          concurrent.fill_bytes(LoaderRole::Images));
          concurrent.fill(LoaderRole::Labels, k, t, got.labels.data() + slot * 5, concurrent.fill_bytes(LoaderRole::Labels));
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(got.labels, expected.labels);
    EXPECT_EQ(std::memcmp(got.images.data(), expected.images.data(), got.images.size() * sizeof(float)), 0);
  }
}

TEST(Loader, FillRefusesBadArguments) {
  const IdxDataset d = make_dataset(12);
  Loader loader(d, options(2, 2, 3));
  float images[12];
  int32_t labels[2];
  expect_error([&] { loader.fill(LoaderRole::Labels, 0, 0, labels, sizeof labels); }, ir::ErrorCode::Runtime,
               {"labels fill", "no current run", "begin_run"});
  loader.begin_run(0, 0);
  expect_error([&] { loader.fill(LoaderRole::Images, 0, 0, images, 40); }, ir::ErrorCode::ShapeMismatch,
               {"images fill", "40 bytes", "48 expected", "batch_size 2 x 6 float32"});
  expect_error([&] { loader.fill(LoaderRole::Labels, 0, 0, labels, 4); }, ir::ErrorCode::ShapeMismatch,
               {"labels fill", "4 bytes", "8 expected"});
  expect_error([&] { loader.fill(LoaderRole::Labels, 0, 0, nullptr, sizeof labels); }, ir::ErrorCode::InvalidArgument,
               {"buffer is NULL"});
  expect_error([&] { loader.fill(LoaderRole::Labels, 3, 0, labels, sizeof labels); }, ir::ErrorCode::InvalidArgument,
               {"step is 3", "[0, 3)"});
  expect_error([&] { loader.fill(LoaderRole::Labels, 0, -1, labels, sizeof labels); }, ir::ErrorCode::InvalidArgument,
               {"replica is -1", "[0, 2)"});
  expect_error([&] { loader.begin_run(-1, 0); }, ir::ErrorCode::InvalidArgument, {"epoch is -1"});
  expect_error([&] { loader.begin_run(0, 2); }, ir::ErrorCode::InvalidArgument, {"run is 2", "[0, 1)", "runs per epoch"});
}

TEST(Loader, ConstructorRefusesBadOptionsAndDatasets) {
  const IdxDataset d = make_dataset(12);
  auto refuse = [&](LoaderOptions o, std::initializer_list<const char*> parts) {
    expect_error([&] { Loader loader(d, o); }, ir::ErrorCode::InvalidArgument, parts);
  };
  LoaderOptions o = options(0, 1, 1);
  refuse(o, {"batch_size is 0"});
  o = options(1, 0, 1);
  refuse(o, {"replicas is 0"});
  o = options(1, 1, -2);
  refuse(o, {"steps_per_run is -2"});
  o = options(1, 1, 1);
  o.workers = 0;
  refuse(o, {"workers is 0"});
  o.workers = kMaxLoaderWorkers + 1;
  refuse(o, {"workers is 257", "<= 256"});
  o = options(1, 1, 1);
  o.std = 0.0f;
  refuse(o, {"std is 0"});
  o.std = -1.0f;
  refuse(o, {"std is -1"});
  refuse(options(INT64_MAX / 2, 4, 1), {"too large"});
  o = options(1, 1, 1);
  o.num_shards = 0;
  refuse(o, {"num_shards is 0"});
  o.num_shards = 2;
  o.shard_index = 2;
  refuse(o, {"shard_index is 2", "[0, 2)", "num_shards"});
  o.shard_index = -1;
  refuse(o, {"shard_index is -1"});
  o = options(4, 1, 2);
  o.num_shards = 2;
  refuse(o, {"12 samples", "fewer than one run of 16", "num_shards 2"});
  refuse(options(4, 2, 2), {"12 samples", "fewer than one run of 16", "drop_last"});
  IdxDataset ints = make_dataset(4);
  ints.labels.dtype = ir::DType::Int32;
  expect_error([&] { Loader loader(ints, options(1, 1, 1)); }, ir::ErrorCode::InvalidArgument,
               {"labels", "synthetic-labels", "int32", "uint8 expected"});
}

// A run big enough (with one worker) that a fill reliably waits for it; the counters show
// when it does.
struct SlowRun {
  IdxDataset data = make_dataset(4096, 32, 32);
  LoaderOptions opts = [] {
    LoaderOptions o = options(4096, 1, 1);
    o.workers = 1;
    return o;
  }();
};

// Starts a fill of run (0, 0) on a thread and returns once it waits (or has finished).
std::thread waiting_fill(Loader& loader, std::vector<int32_t>& labels, std::atomic<int>& code, std::atomic<bool>& done) {
  std::thread t([&] {
    try {
      loader.fill(LoaderRole::Labels, 0, 0, labels.data(), labels.size() * sizeof(int32_t));
      code = 0;
    } catch (const ir::Error& e) {
      code = static_cast<int>(e.code());
    }
    done = true;
  });
  while (loader.stats().waiting_fills == 0 && !done) std::this_thread::yield();
  return t;
}

TEST(Loader, AFillWaitingForARunNoLongerCurrentFails) {
  SlowRun slow;
  Loader loader(slow.data, slow.opts);
  std::vector<int32_t> labels(4096);
  std::atomic<int> code{-1};
  std::atomic<bool> done{false};
  loader.begin_run(0, 0);
  std::thread t = waiting_fill(loader, labels, code, done);
  loader.begin_run(3, 0);
  t.join();
  if (loader.stats().fill_waits == 0) GTEST_SKIP() << "the run was ready before the fill";
  // The run may have become ready just before begin_run(3, 0): then the fill succeeded.
  EXPECT_THAT(code.load(), ::testing::AnyOf(0, static_cast<int>(ir::ErrorCode::Runtime)));
}

TEST(Loader, DestructionWakesAWaitingFill) {
  SlowRun slow;
  auto loader = std::make_unique<Loader>(slow.data, slow.opts);
  std::vector<int32_t> labels(4096);
  std::atomic<int> code{-1};
  std::atomic<bool> done{false};
  loader->begin_run(0, 0);
  std::thread t = waiting_fill(*loader, labels, code, done);
  const bool waited = !done;
  const auto start = std::chrono::steady_clock::now();
  loader.reset();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  if (!waited) GTEST_SKIP() << "the run was ready before the fill";
  EXPECT_THAT(code.load(), ::testing::AnyOf(0, static_cast<int>(ir::ErrorCode::Cancelled)));
}

}  // namespace
}  // namespace plexus::data
