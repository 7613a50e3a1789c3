// distributed_training: seed 002 (IPU TensorFlow "Distributed training": IPUMultiWorkerStrategy
// / IPUHorovodStrategy with an IPUEstimator) on Plexus: data-parallel training of seed 002's
// CNN (network.h) on real MNIST over several worker processes started by mpirun, each
// hosting --replicas-per-worker replicas and reading its own shard of every step's data
// (seed 002's Dataset.shard(num_workers, index)); gradients are mean-reduced across all
// replicas of all workers through the mpi collectives plugin. Without mpirun it is one
// worker.
//
//   mpirun -np 2 samples/distributed_training/distributed_training --num-steps 2000
//   samples/distributed_training/distributed_training --num-steps 2000 --replicas-per-worker 2
//
// Where it differs from the seed, and why:
//  - --host-update runs the weight update on the host as the seed does (variables_on_host=True:
//    gradients streamed to the host, all-reduced there, Adam with its state in host memory);
//    without it the devices all-reduce and update. Both train to the same weights.
//  - Batches are per replica (--batch-size, 64 as the seed's BATCH_SIZE): a worker of R_local
//    replicas takes R_local x 64 samples per step; the global batch is 64 x R.
//  - Progress (worker 0's replicas' running loss and accuracy), the test accuracy at the end,
//    and the files are worker 0's; the seed's estimator logs every worker.
//  - --model-dir holds a checkpoint (samples/common/checkpointing.h) that training resumes
//    from when it exists, as the estimator's model_dir; worker 0 writes it. With several
//    hosts the folder must be shared.
#include <plexus/plexus.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "samples/common/checkpointing.h"
#include "samples/common/cli.h"
#include "samples/common/metrics.h"
#include "samples/common/mnist_data.h"
#include "samples/common/progress.h"
#include "samples/common/train_run.h"
#include "samples/distributed_training/network.h"

namespace {

namespace po = samples::po;

struct Options {
  int64_t num_steps = 2000;
  std::string model_dir;
  int64_t checkpoint_every = 0;
  int64_t replicas_per_worker = 1;
  int64_t batch_size = 64;
  int64_t test_batch_size = 100;
  int64_t device_iterations = 10;
  int64_t gradient_accumulation = 1;
  double lr = 0.001;
  uint64_t seed = 42;
  int64_t prefetch_depth = 2;
  int64_t loader_workers = 2;
  int64_t threads_per_device = 0;
  std::string data_dir = "data";
  std::string metrics_out;
  std::string weights_out;
  bool skip_test = false;
  bool host_update = false;
};

constexpr const char* kUsage =
    "Usage: [mpirun -np N] distributed_training [options]\n"
    "Seed 002: data-parallel training of a CNN on MNIST over worker processes (Open MPI), each hosting\n"
    "--replicas-per-worker replicas; without mpirun, one worker.";

po::options_description describe(Options& o) {
  po::options_description desc("Options");
  desc.add_options()("help,h", "show this help")
      ("num-steps", po::value(&o.num_steps)->default_value(o.num_steps),
       "training steps (weight updates), counting those of a resumed checkpoint; rounded up to whole runs")
      ("model-dir", po::value(&o.model_dir),
       "folder of the checkpoint (weights, Adam state, step, data position): training resumes from it when it "
       "exists and saves it at the end (worker 0 writes it)")
      ("checkpoint-every", po::value(&o.checkpoint_every)->default_value(o.checkpoint_every),
       "also save every N steps (needs --model-dir; 0: only at the end)")
      ("replicas-per-worker", po::value(&o.replicas_per_worker)->default_value(o.replicas_per_worker),
       "replicas each worker process hosts")
      ("batch-size", po::value(&o.batch_size)->default_value(o.batch_size), "samples per micro-batch per replica")
      ("test-batch-size", po::value(&o.test_batch_size)->default_value(o.test_batch_size),
       "test batch (worker 0 tests alone)")
      ("device-iterations", po::value(&o.device_iterations)->default_value(o.device_iterations),
       "steps per session run")
      ("gradient-accumulation", po::value(&o.gradient_accumulation)->default_value(o.gradient_accumulation),
       "micro-batches of --batch-size per replica and weight update (seed 003): a step takes "
       "batch x this x replicas samples")
      ("lr", po::value(&o.lr)->default_value(o.lr), "Adam learning rate")
      ("seed", po::value(&o.seed)->default_value(o.seed), "seed for weight init and shuffling")
      ("prefetch-depth", po::value(&o.prefetch_depth)->default_value(o.prefetch_depth),
       "micro-batches the io threads prepare ahead per stream and replica")
      ("loader-workers", po::value(&o.loader_workers)->default_value(o.loader_workers),
       "data loader threads per worker")
      ("threads-per-device", po::value(&o.threads_per_device)->default_value(o.threads_per_device),
       "BLIS threads per replica (0: cores / replicas of this worker, each GEMM shape then timed single- and "
       "multi-threaded)")
      ("data-dir", po::value(&o.data_dir)->default_value(o.data_dir), "folder holding mnist/")
      ("metrics-out", po::value(&o.metrics_out), "write metrics as JSON to this file (worker 0)")
      ("weights-out", po::value(&o.weights_out),
       "write the trained parameters to this file (worker 0; float32, little-endian, in network.h's order)")
      ("host-update", po::bool_switch(&o.host_update),
       "the weight update on the host (seed 002's host_call, variables_on_host): gradients go to host memory "
       "as the backward pass finishes them, are all-reduced there, and Adam runs there with its state only "
       "in host memory")
      ("skip-test", po::bool_switch(&o.skip_test), "train only: no test pass at the end");
  return desc;
}

void check(const Options& o) {
  using samples::require_at_least;
  require_at_least<int64_t>("num-steps", o.num_steps, 1);
  require_at_least<int64_t>("checkpoint-every", o.checkpoint_every, 0);
  require_at_least<int64_t>("replicas-per-worker", o.replicas_per_worker, 1);
  require_at_least<int64_t>("batch-size", o.batch_size, 1);
  require_at_least<int64_t>("test-batch-size", o.test_batch_size, 1);
  require_at_least<int64_t>("device-iterations", o.device_iterations, 1);
  require_at_least<int64_t>("gradient-accumulation", o.gradient_accumulation, 1);
  require_at_least<int64_t>("prefetch-depth", o.prefetch_depth, 0);
  require_at_least<int64_t>("loader-workers", o.loader_workers, 1);
  require_at_least<int64_t>("threads-per-device", o.threads_per_device, 0);
  if (!(o.lr > 0.0)) throw samples::UsageError("--lr must be > 0, got " + std::to_string(o.lr));
  if (o.checkpoint_every > 0 && o.model_dir.empty()) throw samples::UsageError("--checkpoint-every needs --model-dir");
}

struct Trained {
  std::vector<std::vector<float>> weights;
  int64_t steps = 0;
  double seconds = 0, loss = 0, accuracy = 0;
};

// Trains on this worker's shard of every step; returns worker 0's view of the result.
Trained train(const Options& o, const plx::WorkerPlace& place, samples::ImageSplit& data) {
  const int64_t replicas = place.count * o.replicas_per_worker;
  samples::DistProgram t = samples::build_dist_train(replicas, o.batch_size, o.seed, o.lr, o.host_update);
  plx::SessionOptions opts;
  opts.device_iterations = o.device_iterations;
  opts.gradient_accumulation = o.gradient_accumulation;
  opts.prefetch_depth = o.prefetch_depth;
  opts.num_workers = place.count;
  opts.worker_index = place.index;
  opts.weight_update_on_host = o.host_update;
  opts.threads_per_device = static_cast<int32_t>(o.threads_per_device);
  if (place.count > 1 && std::getenv("PLEXUS_COLLECTIVES") == nullptr) opts.collectives_plugin = "mpi";
  plx::Session session(t.ir, opts);

  plx_loader_options lo = plx::Loader::default_options();
  lo.batch_size = o.batch_size;
  lo.replicas = o.replicas_per_worker;
  lo.steps_per_run = o.device_iterations * o.gradient_accumulation;  // micro-batches per replica
  lo.seed = o.seed;
  lo.mean = 0.0f;  // the seed's image / 255
  lo.std = 1.0f;
  lo.workers = static_cast<int32_t>(o.loader_workers);
  lo.num_shards = place.count;
  lo.shard_index = place.index;
  plx::Loader loader(data.dataset(), lo);
  const int64_t runs_per_epoch = loader.runs_per_epoch();

  const bool leader = place.index == 0;
  samples::CheckpointOptions c{o.model_dir, leader ? o.checkpoint_every : 0, false};
  samples::Checkpointing checkpointing(c, o.seed, runs_per_epoch);
  c.resume = !o.model_dir.empty() && std::filesystem::exists(checkpointing.path());
  samples::Checkpointing resumer(c, o.seed, runs_per_epoch);
  samples::DataPosition at = resumer.start(session);

  const int64_t di = o.device_iterations;
  const samples::TrainRun run(session, loader, t.images, t.labels, t.loss, t.correct);

  const int64_t first_step = session.step();
  const int64_t runs = (o.num_steps - first_step + di - 1) / di;
  std::optional<samples::Progress> bar;
  if (leader) bar.emplace("train", runs);
  Trained result;
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < runs; ++r) {
    if (at.run >= runs_per_epoch) at = {at.epoch + 1, 0};
    loader.begin_run(at.epoch, at.run);
    run.run(session);
    ++at.run;
    for (size_t i = 0; i < run.losses().size(); ++i) {
      loss_sum += run.losses()[i];
      correct += run.corrects()[i];
    }
    seen += static_cast<int64_t>(run.losses().size()) * o.batch_size;
    if (!leader) continue;
    checkpointing.after_run(session, at);
    char suffix[96];
    std::snprintf(suffix, sizeof suffix, "step %lld loss %.4f acc %.2f%%", static_cast<long long>(session.step()),
                  loss_sum * static_cast<double>(o.batch_size) / static_cast<double>(seen),
                  100.0 * static_cast<double>(correct) / static_cast<double>(seen));
    bar->update(r + 1, suffix);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.steps = session.step() - first_step;
  result.loss = seen ? loss_sum * static_cast<double>(o.batch_size) / static_cast<double>(seen) : 0.0;
  result.accuracy = seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
  if (leader) {
    checkpointing.finish(session, at);
    for (const plx::Tensor& p : t.params) result.weights.push_back(session.read<float>(p));
  }
  return result;
}

// Test accuracy of `weights` on the test split, on one replica.
double test_accuracy(const Options& o, samples::ImageSplit& data, const std::vector<std::vector<float>>& weights) {
  samples::DistProgram t = samples::build_dist_test(weights, o.test_batch_size);
  plx::Session session(t.ir);
  const int64_t batches = data.size() / o.test_batch_size;
  std::vector<float> images(static_cast<size_t>(o.test_batch_size * data.image_size()));
  std::vector<int32_t> labels(static_cast<size_t>(o.test_batch_size));
  int32_t batch_correct = 0;
  int64_t correct = 0;
  samples::Progress bar("test", batches);
  for (int64_t i = 0; i < batches; ++i) {
    data.fill(i * o.test_batch_size, o.test_batch_size, images.data(), labels.data());
    for (float& x : images) x = x * samples::kMnistStd + samples::kMnistMean;  // back to image / 255
    session.run({plx::HostArray(t.images, images.data(), session.host_shape(t.images)),
                 plx::HostArray(t.labels, labels.data(), session.host_shape(t.labels))},
                {plx::HostArray(t.correct, &batch_correct, session.host_shape(t.correct))});
    correct += batch_correct;
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, "acc %.2f%%",
                  100.0 * static_cast<double>(correct) / static_cast<double>((i + 1) * o.test_batch_size));
    bar.update(i + 1, suffix);
  }
  return batches ? static_cast<double>(correct) / static_cast<double>(batches * o.test_batch_size) : 0.0;
}

void write_weights(const std::string& path, const std::vector<std::vector<float>>& weights) {
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr;
  for (const std::vector<float>& w : weights) {
    ok = ok && std::fwrite(w.data(), sizeof(float), w.size(), f) == w.size();
  }
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok) throw std::runtime_error("cannot write weights to '" + path + "'");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    po::variables_map vm;
    if (!samples::parse_command_line(argc, argv, describe(o), vm, kUsage)) return 0;
    check(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "distributed_training: error: %s (see --help)\n", e.what());
    return 2;
  }
  plx::WorkerPlace place;
  try {
    place = plx::workers_from_environment();
    const bool leader = place.index == 0;
    const int64_t replicas = place.count * o.replicas_per_worker;
    const std::string folder = samples::dataset_folder(o.data_dir, "mnist");
    samples::ImageSplit train_data(folder, true);
    if (leader) {
      std::printf("plexus: %s\n", plx::runtime_info().c_str());
      std::printf("%lld worker(s) x %lld replica(s) = %lld replicas, batch %lld per replica x %lld micro-batch(es) "
                  "(global batch %lld), %lld training images from %s\n",
                  static_cast<long long>(place.count), static_cast<long long>(o.replicas_per_worker),
                  static_cast<long long>(replicas), static_cast<long long>(o.batch_size),
                  static_cast<long long>(o.gradient_accumulation),
                  static_cast<long long>(replicas * o.batch_size * o.gradient_accumulation),
                  static_cast<long long>(train_data.size()),
                  folder.c_str());
    }
    const Trained trained = train(o, place, train_data);
    if (!leader) return 0;
    const double samples_per_second =
        trained.seconds > 0
            ? static_cast<double>(trained.steps * replicas * o.batch_size * o.gradient_accumulation) / trained.seconds
            : 0.0;
    write_weights(o.weights_out, trained.weights);
    std::printf("trained: %lld worker(s) x %lld replica(s), %lld steps in %.1f s, %.0f samples/s; worker 0's train "
                "loss %.4f, accuracy %.2f%%\n",
                static_cast<long long>(place.count), static_cast<long long>(o.replicas_per_worker),
                static_cast<long long>(trained.steps), trained.seconds, samples_per_second, trained.loss,
                100.0 * trained.accuracy);
    double accuracy = -1;
    if (!o.skip_test) {
      samples::ImageSplit test_data(folder, false);
      accuracy = test_accuracy(o, test_data, trained.weights);
      std::printf("test accuracy: %.2f%% on %lld images\n", 100.0 * accuracy,
                  static_cast<long long>(test_data.size() / o.test_batch_size * o.test_batch_size));
    }
    samples::write_metrics(o.metrics_out, {{"test_accuracy", o.skip_test ? nlohmann::json() : nlohmann::json(accuracy)},
                                           {"train_samples_per_second", samples_per_second},
                                           {"train_seconds", trained.seconds},
                                           {"train_steps", trained.steps},
                                           {"train_loss", trained.loss},
                                           {"train_accuracy", trained.accuracy},
                                           {"workers", place.count},
                                           {"replicas_per_worker", o.replicas_per_worker},
                                           {"batch_size", o.batch_size},
                                           {"device_iterations", o.device_iterations},
                                           {"gradient_accumulation", o.gradient_accumulation},
                                           {"lr", o.lr},
                                           {"host_update", o.host_update},
                                           {"seed", o.seed},
                                           {"runtime", plx::runtime_info()}});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distributed_training (worker %lld of %lld): %s\n", static_cast<long long>(place.index),
                 static_cast<long long>(place.count), e.what());
    return 1;
  }
  return 0;
}
