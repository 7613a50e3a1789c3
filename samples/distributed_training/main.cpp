// distributed_training: seed 002 (IPU TensorFlow "Distributed training": IPUMultiWorkerStrategy
// / IPUHorovodStrategy with an IPUEstimator) on Plexus: data-parallel training of seed 002's
// CNN (network.h) on real MNIST (or Fashion-MNIST) over several worker processes started by
// mpirun, or started by hand with a cluster definition (seed 002's TF_CONFIG), each hosting
// --replication-factor / workers replicas and reading its own shard of every step's data
// (seed 002's Dataset.shard(num_workers, index)); gradients are mean-reduced across all
// replicas of all workers through the mpi or gloo collectives plugin. Without either it is
// one worker.
//
//   mpirun -np 2 samples/distributed_training/distributed_training --num-steps 2000
//   # two shells, no mpirun (the Gloo plugin over TCP; worker 0 serves the rendezvous on :29500):
//   PLEXUS_CLUSTER='{"workers": ["hostA:29500", "hostB:29500"], "index": 0}' distributed_training --collectives gloo
//   PLEXUS_CLUSTER='{"workers": ["hostA:29500", "hostB:29500"], "index": 1}' distributed_training --collectives gloo
//   samples/distributed_training/distributed_training --num-steps 2000 --replication-factor 2
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
//    from when it exists, as the estimator's model_dir (the samples' --checkpoint-dir and
//    --resume work too); worker 0 writes it. With several hosts the folder must be shared.
#include <plexus/plexus.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "samples/common/checkpointing.h"
#include "samples/common/metrics.h"
#include "samples/common/mnist_data.h"
#include "samples/common/options.h"
#include "samples/common/profile.h"
#include "samples/common/progress.h"
#include "samples/common/train_run.h"
#include "samples/common/weights_file.h"
#include "samples/distributed_training/network.h"

namespace {

namespace po = samples::po;

constexpr unsigned kFeatures = samples::kTestBatch | samples::kCheckpoints | samples::kWeightsOut | samples::kLoader |
                               samples::kThreads | samples::kAccumulation | samples::kWorkers;

// The common options with seed 002's defaults, and this sample's own.
struct Options : samples::CommonOptions {
  Options() {
    num_steps = 2000;
    batch_size = 64;  // the seed's BATCH_SIZE
    test_batch_size = 100;
    device_iterations = 10;
    learning_rate = 0.001;  // TF1 AdamOptimizer's default
    replication_factor = 0;  // one replica per worker
  }
  bool skip_test = false;
  bool host_update = false;
  std::string collectives = "auto";  ///< --collectives
  int64_t collective_timeout_ms = plx::SessionOptions().collective_timeout_ms;  ///< --collective-timeout-ms
  int64_t replicas_per_worker = 1;  ///< --replication-factor / workers, set by resolve_replicas
};

constexpr const char* kUsage =
    "Usage: [mpirun -np N] distributed_training [options]\n"
    "       PLEXUS_CLUSTER='{\"workers\": [\"host:port\", ...], \"index\": i}' distributed_training --collectives gloo [options]\n"
    "Seed 002: data-parallel training of a CNN with Adam on MNIST (or Fashion-MNIST) over worker processes\n"
    "(Open MPI, or started by hand with a cluster definition: PLEXUS_CLUSTER or TF_CONFIG), each hosting\n"
    "--replication-factor / N replicas; without either, one worker.";

po::options_description describe(Options& o) {
  po::options_description desc("distributed_training options", samples::kHelpWidth, samples::kHelpWidth / 2);
  desc.add_options()("host-update", po::bool_switch(&o.host_update),
                     "the weight update on the host (seed 002's host_call, variables_on_host): gradients go to host "
                     "memory as the backward pass finishes them, are all-reduced there, and Adam runs there with its "
                     "state only in host memory")
      ("skip-test", po::bool_switch(&o.skip_test), "train only: no test pass at the end")
      ("collectives", po::value(&o.collectives)->default_value(o.collectives),
       "collectives plugin between the workers: gloo (TCP, workers from PLEXUS_CLUSTER / TF_CONFIG), mpi "
       "(under mpirun), local (one worker), or any installed plugin's name; auto: gloo with a cluster "
       "definition, mpi under mpirun, else local ($PLEXUS_COLLECTIVES when set)")
      ("collective-timeout-ms", po::value(&o.collective_timeout_ms)->default_value(o.collective_timeout_ms),
       "how long a collective waits for a missing replica (a lost worker) before the run fails naming it");
  return desc;
}

// Resolves --replication-factor (0: one per worker) for `place.count` workers; throws
// UsageError unless it is a multiple of the worker count.
void resolve_replicas(Options& o, const plx::WorkerPlace& place) {
  if (o.collectives.empty()) throw samples::UsageError("--collectives must name a plugin (or auto)");
  if (o.collective_timeout_ms < 1) {
    throw samples::UsageError("--collective-timeout-ms must be >= 1, got " + std::to_string(o.collective_timeout_ms));
  }
  if (o.replication_factor == 0) o.replication_factor = place.count;
  if (o.replication_factor % place.count != 0) {
    throw samples::UsageError("--replication-factor must be a multiple of the " + std::to_string(place.count) +
                              " worker processes, got " + std::to_string(o.replication_factor));
  }
  o.replicas_per_worker = o.replication_factor / place.count;
}

// The collectives plugin for --collectives (see describe()); "" leaves the session's default
// (local, or $PLEXUS_COLLECTIVES).
std::string collectives_plugin(const Options& o, const plx::WorkerPlace& place) {
  if (o.collectives != "auto") return o.collectives;
  if (place.count == 1 || std::getenv("PLEXUS_COLLECTIVES") != nullptr) return "";
  const bool cluster = std::getenv("PLEXUS_CLUSTER") != nullptr || std::getenv("TF_CONFIG") != nullptr;
  return cluster ? "gloo" : "mpi";
}

struct Trained {
  std::vector<std::vector<float>> weights;
  nlohmann::json profile;  ///< worker 0's --profile files
  int64_t steps = 0;
  double seconds = 0, loss = 0, accuracy = 0;
};

// Trains on this worker's shard of every step; returns worker 0's view of the result.
Trained train(const Options& o, const plx::WorkerPlace& place, samples::ImageSplit& data) {
  samples::DistProgram t =
      samples::build_dist_train(o.replication_factor, o.batch_size, o.seed, o.learning_rate, o.host_update);
  plx::SessionOptions opts = samples::common_session_options(o);
  opts.gradient_accumulation = o.gradient_accumulation;
  opts.num_workers = place.count;
  opts.worker_index = place.index;
  opts.weight_update_on_host = o.host_update;
  opts.collective_timeout_ms = o.collective_timeout_ms;
  const std::string plugin = collectives_plugin(o, place);  // outlives the session's creation
  if (!plugin.empty()) opts.collectives_plugin = plugin.c_str();
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
  samples::Checkpointing checkpointing(o.checkpoint, o.seed, runs_per_epoch);  // every worker loads, worker 0 saves
  samples::DataPosition at = checkpointing.start(session);

  const samples::TrainRun run(session, loader, t.images, t.labels, t.loss, t.correct);

  const int64_t first_step = session.step();
  const int64_t runs = o.runs_left(first_step);
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
    if (o.profile && result.steps > 0) result.profile = samples::profile_json(samples::write_profile(o, session, "training"));
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const auto status =
          samples::parse_sample_options(argc, argv, "distributed_training", kUsage, o, kFeatures, describe(o), [] {})) {
    return *status;
  }
  plx::WorkerPlace place;
  try {
    place = plx::workers_read_environment();
    resolve_replicas(o, place);
  } catch (const samples::UsageError& e) {
    std::fprintf(stderr, "distributed_training: error: %s (see --help)\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distributed_training: %s\n", e.what());
    return 1;
  }
  try {
    const bool leader = place.index == 0;
    const int64_t replicas = o.replication_factor;
    const std::string folder = o.dataset_folder();
    samples::ImageSplit train_data(folder, true);
    if (leader) {
      std::printf("plexus: %s\n", plx::runtime_info().c_str());
      std::printf("%lld worker(s) x %lld replica(s) = %lld replicas, batch %lld per replica x %lld micro-batch(es) "
                  "(global batch %lld), %lld training images from %s\n",
                  static_cast<long long>(place.count), static_cast<long long>(o.replicas_per_worker),
                  static_cast<long long>(replicas), static_cast<long long>(o.batch_size),
                  static_cast<long long>(o.gradient_accumulation),
                  static_cast<long long>(replicas * o.batch_size * o.gradient_accumulation),
                  static_cast<long long>(train_data.size()), folder.c_str());
    }
    const Trained trained = train(o, place, train_data);
    if (!leader) return 0;
    const double samples_per_second =
        trained.seconds > 0
            ? static_cast<double>(trained.steps * replicas * o.batch_size * o.gradient_accumulation) / trained.seconds
            : 0.0;
    samples::write_weights(o.weights_out, trained.weights);
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
    nlohmann::json metrics = samples::options_json(o, kFeatures);
    metrics.update({{"test_accuracy", o.skip_test ? nlohmann::json() : nlohmann::json(accuracy)},
                    {"train_samples_per_second", samples_per_second},
                    {"train_seconds", trained.seconds},
                    {"train_steps", trained.steps},
                    {"train_loss", trained.loss},
                    {"train_accuracy", trained.accuracy},
                    {"workers", place.count},
                    {"replicas_per_worker", o.replicas_per_worker},
                    {"host_update", o.host_update},
                    {"runtime", plx::runtime_info()}});
    if (o.profile) metrics["profile"] = {{"training", trained.profile}};
    samples::write_metrics(o.metrics_out, metrics);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "distributed_training (worker %lld of %lld): %s\n", static_cast<long long>(place.index),
                 static_cast<long long>(place.count), e.what());
    return 1;
  }
  return 0;
}
