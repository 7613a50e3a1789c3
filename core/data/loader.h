// Data loader (seed 003's poptorch.DataLoader in async mode) over a SampleSource (IDX
// images and labels, windows of a text): each epoch a seeded permutation of the samples,
// cut into runs of steps_per_run x replicas x batch_size samples. Worker threads prepare
// the current run and the next one while the caller computes; fill() copies one
// (step, replica) micro-batch out.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/data/idx_reader.h"
#include "core/data/sample_source.h"
#include "core/streams/host_array_layout.h"

namespace plexus::data {

/// How a Loader cuts, orders and normalises the samples (plx_loader_options).
struct LoaderOptions {
  int64_t batch_size = 1;     ///< samples per micro-batch per replica, >= 1
  int64_t replicas = 1;       ///< R of the session, >= 1
  int64_t steps_per_run = 1;  ///< micro-batches per replica per run, >= 1
  bool shuffle = true;        ///< a new order each epoch; false: the dataset's order
  uint64_t seed = 0;          ///< epoch e is shuffled with mt19937_64(seed + e)
  float mean = 0.1307f;       ///< IDX images: normalisation mean, finite
  float std = 0.3081f;        ///< IDX images: normalisation standard deviation, finite and > 0
  bool drop_last = true;      ///< floor(N / P) runs per epoch; false: ceil(N / P)
  int32_t workers = 2;        ///< threads preparing runs, 1 .. kMaxLoaderWorkers
  int64_t num_shards = 1;     ///< processes (seed 002's workers) sharing each run, >= 1
  int64_t shard_index = 0;    ///< this process's shard, in [0, num_shards)
};

/// Upper bound of LoaderOptions::workers.
inline constexpr int32_t kMaxLoaderWorkers = 256;


/// Counters of a Loader (for tests and tuning the worker count).
struct LoaderStats {
  int64_t waiting_fills = 0;  ///< fill() calls waiting for their run right now
  int64_t fill_waits = 0;     ///< fill() calls so far that found their run not ready yet
};

/**
 * Serves the micro-batches of one run at a time from a SampleSource: a fill of `role` is
 * batch_size samples of the source's field for that role.
 *
 * Sample order: epoch e is a permutation of [0, N) (std::iota, then std::shuffle with
 * std::mt19937_64(seed + e); the identity without shuffle). Run n takes positions
 * [n * P, (n + 1) * P), P = steps_per_run * G * batch_size for G = replicas * num_shards
 * global replicas, wrapping to the start of the epoch's order past N (only without
 * drop_last); step k of global replica g takes the batch_size positions from
 * (k * G + g) * batch_size: a run is laid out as a session's input host array
 * [steps_per_run, G, batch_size] + image shape (streams/host_array_layout.h), and this
 * shard's part of it as the array [steps_per_run, replicas, batch_size] + image shape
 * that fill() serves.
 *
 * Sharding by worker (seed 002's Dataset.shard(num_workers, index)): shard w serves the
 * global replicas [w * replicas, (w + 1) * replicas) as its replicas 0 .. replicas - 1. So
 * W processes of R replicas each see exactly the samples, in the same order, that one
 * process of W * R replicas gives its replicas, and the global batch is
 * batch_size * W * R.
 *
 * Thread-safety: fill() may be called from several threads at once; the constructor,
 * begin_run() and the destructor from one thread, not concurrently with each other.
 * Errors are ir::Error.
 */
class Loader {
 public:
  /// Starts options.workers threads. `source` is borrowed and must outlive the loader.
  /// Throws InvalidArgument naming the option out of range, when one run's size
  /// overflows, and with drop_last when the source has fewer samples than one run.
  Loader(const SampleSource& source, const LoaderOptions& options) : Loader(source, options, nullptr) {}

  /// Serves IDX images and labels (IdxImageSource with options.mean and options.std).
  /// `dataset` is borrowed and must outlive the loader. Throws as above and as
  /// IdxImageSource's constructor.
  Loader(const IdxDataset& dataset, const LoaderOptions& options);

  /// Stops and joins the workers. fill() calls still waiting end with Cancelled; no fill()
  /// may start once destruction has begun.
  ~Loader();

  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Runs per epoch: floor(N / P) with drop_last, else ceil(N / P).
  int64_t runs_per_epoch() const { return runs_per_epoch_; }

  /// Bytes of one fill() of `role`: batch_size x the source's field(role).bytes().
  size_t fill_bytes(LoaderRole role) const;

  /// The field a fill of `role` serves (dtype, elements per sample, name).
  const SampleField& field(LoaderRole role) const { return source_.field(role); }

  /**
   * Makes run `run` of epoch `epoch` current and has the workers prepare it and the run
   * after it (run + 1, or run 0 of the next epoch); prepared runs other than these two
   * are discarded. fill() calls still waiting for the previous current run end with
   * Runtime. Throws InvalidArgument for epoch < 0 or run outside [0, runs_per_epoch()).
   */
  void begin_run(int64_t epoch, int64_t run);

  /**
   * Copies micro-batch (`step`, `replica`) of the current run's `role` into `buffer`
   * (`bytes` bytes, which must equal fill_bytes(role)), waiting until the workers have
   * prepared the run. Throws ShapeMismatch naming the role and both sizes for a wrong
   * `bytes`; InvalidArgument for a NULL buffer or step / replica out of range; Runtime
   * before the first begin_run() or when begin_run() made another run current while this
   * call waited; Cancelled when the loader is destroyed while this call waits.
   */
  void fill(LoaderRole role, int64_t step, int64_t replica, void* buffer, size_t bytes);

  /// A snapshot of the counters.
  LoaderStats stats() const;

 private:
  struct Order;
  struct Run;
  // One worker task: positions [first, first + count) of a run.
  struct Task {
    std::shared_ptr<Run> run;
    int64_t first = 0;
    int64_t count = 0;
  };

  // The run (epoch, run) from runs_, or a new one whose tasks go to `new_tasks` (sharing
  // the order of a run of the same epoch in runs_ or `kept`). Caller holds mutex_.
  std::shared_ptr<Run> find_or_schedule(int64_t epoch, int64_t run, const std::vector<std::shared_ptr<Run>>& kept,
                                        std::vector<Task>& new_tasks);
  // Writes the task's positions of its run (drawing the epoch's order first if needed).
  void prepare(const Task& task) const;
  // Position within the run's P positions of this shard's sample j (sharding by worker).
  int64_t run_position(int64_t j) const;
  // A worker thread: prepares queued tasks until stopping_.
  void work();
  /// One chunk of `run` done (under mutex_): the last one makes the run ready.
  void finish_chunk(Run& run);
  /// Called by a fill whose run is not ready (under mutex_, released while preparing):
  /// prepares the run's chunks no worker has taken yet, instead of waiting for a worker.
  void help_prepare(const std::shared_ptr<Run>& run, std::unique_lock<std::mutex>& lock);
  // Sets stopping_, wakes everyone, waits for waiting fills to leave, joins the workers.
  void stop() noexcept;

  Loader(std::unique_ptr<const SampleSource>&& owned, const LoaderOptions& options);
  Loader(const SampleSource& source, const LoaderOptions& options, std::unique_ptr<const SampleSource>&& owned);

  const std::unique_ptr<const SampleSource> owned_;  // the IDX source the IdxDataset constructor made
  const SampleSource& source_;
  const LoaderOptions options_;
  /// Micro-batches of a run: this shard's [steps_per_run, replicas], and every shard's
  /// [steps_per_run, replicas * num_shards] (one value = batch_size samples).
  const streams::HostArrayLayout local_layout_, global_layout_;
  int64_t samples_per_run_ = 0;        // P, over every shard
  int64_t local_samples_per_run_ = 0;  // this shard's part of P: what a run holds
  int64_t runs_per_epoch_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;   // workers: a task was queued, or stopping
  std::condition_variable ready_cv_;  // fills: a run became ready, the current run changed, or
                                      // stopping; destructor: a waiting fill left
  std::deque<Task> tasks_;
  std::vector<std::shared_ptr<Run>> runs_;  // the current run, then the one prepared after it
  bool stopping_ = false;
  LoaderStats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace plexus::data
