#include "core/data/loader.h"

#include "core/data/idx_image_source.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>

#include "core/ir/dtype.h"
#include "core/ir/error.h"
#include "core/ir/shape.h"

namespace plexus::data {

using ir::ErrorCode;
using ir::fail;

// The sample order of one epoch, shared by the runs of that epoch. Allocated by
// begin_run(); drawn by the first worker that needs it.
struct Loader::Order {
  int64_t epoch = 0;
  std::once_flag drawn;
  std::vector<int64_t> positions;  // position -> sample index
};

// One run's samples of this shard, as the source wrote them, in position order
// ([steps, R, batch] host array order, R the local replicas).
struct Loader::Run {
  int64_t epoch = 0;
  int64_t run = 0;
  std::shared_ptr<Order> order;
  std::array<std::unique_ptr<std::byte[]>, 2> fields;  // per role: this shard's P x field bytes
  int64_t chunks_left = 0;             // tasks not finished yet (guarded by mutex_)
  bool ready = false;                  // all tasks finished (guarded by mutex_)
};

namespace {

void check_at_least(int64_t value, int64_t min, const char* name) {
  if (value < min) {
    fail(ErrorCode::InvalidArgument, std::string("loader options: ") + name + " is " + std::to_string(value) +
                                         ", must be >= " + std::to_string(min));
  }
}

constexpr std::array<LoaderRole, 2> kRoles = {LoaderRole::Images, LoaderRole::Labels};

// The layout of one run's micro-batches over `replicas` replicas.
streams::HostArrayLayout run_layout(const LoaderOptions& o, int64_t replicas) {
  return streams::HostArrayLayout::input({.device_iterations = o.steps_per_run, .replicas = replicas}, ir::DType::Int32,
                                         {o.batch_size});
}

}  // namespace

Loader::Loader(const IdxDataset& dataset, const LoaderOptions& options)
    : Loader(std::make_unique<IdxImageSource>(dataset, options.mean, options.std), options) {}

Loader::Loader(std::unique_ptr<const SampleSource>&& owned, const LoaderOptions& options)
    : Loader(*owned, options, std::move(owned)) {}

Loader::Loader(const SampleSource& source, const LoaderOptions& options, std::unique_ptr<const SampleSource>&& owned)
    : owned_(std::move(owned)),
      source_(source),
      options_(options),
      local_layout_(run_layout(options, options.replicas)),
      // Wrapping multiplication: an overflowing product is refused below, before any use.
      global_layout_(run_layout(options, static_cast<int64_t>(static_cast<uint64_t>(options.replicas) *
                                                              static_cast<uint64_t>(options.num_shards)))) {
  check_at_least(options.batch_size, 1, "batch_size");
  check_at_least(options.replicas, 1, "replicas");
  check_at_least(options.steps_per_run, 1, "steps_per_run");
  check_at_least(options.workers, 1, "workers");
  check_at_least(options.num_shards, 1, "num_shards");
  if (options.shard_index < 0 || options.shard_index >= options.num_shards) {
    fail(ErrorCode::InvalidArgument, "loader options: shard_index is " + std::to_string(options.shard_index) +
                                         ", must be in [0, " + std::to_string(options.num_shards) + ") (num_shards)");
  }
  if (options.workers > kMaxLoaderWorkers) {
    fail(ErrorCode::InvalidArgument, "loader options: workers is " + std::to_string(options.workers) +
                                         ", must be <= " + std::to_string(kMaxLoaderWorkers));
  }
  const int64_t n = source.num_samples();
  if (n < 1) fail(ErrorCode::InvalidArgument, "loader: " + source.describe() + " has no samples");
  const int64_t sample_bytes = static_cast<int64_t>(std::max(source.field(LoaderRole::Images).bytes(),
                                                             source.field(LoaderRole::Labels).bytes()));

  const std::string run_shape = "steps_per_run " + std::to_string(options.steps_per_run) + " x replicas " +
                                std::to_string(options.replicas) + " x num_shards " +
                                std::to_string(options.num_shards) + " x batch_size " +
                                std::to_string(options.batch_size);
  int64_t run_bytes = 0;
  if (__builtin_mul_overflow(options.steps_per_run, options.replicas, &local_samples_per_run_) ||
      __builtin_mul_overflow(local_samples_per_run_, options.batch_size, &local_samples_per_run_) ||
      __builtin_mul_overflow(local_samples_per_run_, options.num_shards, &samples_per_run_) ||
      __builtin_mul_overflow(local_samples_per_run_, sample_bytes, &run_bytes)) {
    fail(ErrorCode::InvalidArgument, "loader options: one run (" + run_shape + " samples of " +
                                         std::to_string(sample_bytes) + " bytes) is too large");
  }
  if (options.drop_last && n < samples_per_run_) {
    fail(ErrorCode::InvalidArgument, "loader: " + source.describe() + " has " + std::to_string(n) +
                                         " samples, fewer than one run of " + std::to_string(samples_per_run_) +
                                         " (" + run_shape + ") with drop_last");
  }
  runs_per_epoch_ = options.drop_last ? n / samples_per_run_ : (n - 1) / samples_per_run_ + 1;

  try {
    for (int32_t w = 0; w < options.workers; ++w) workers_.emplace_back([this] { work(); });
  } catch (...) {
    stop();
    throw;
  }
}

Loader::~Loader() { stop(); }

void Loader::stop() noexcept {
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    work_cv_.notify_all();
    ready_cv_.notify_all();
    ready_cv_.wait(lock, [&] { return stats_.waiting_fills == 0; });
  }
  for (std::thread& w : workers_) w.join();
}

size_t Loader::fill_bytes(LoaderRole role) const {
  return static_cast<size_t>(options_.batch_size) * source_.field(role).bytes();
}

void Loader::begin_run(int64_t epoch, int64_t run) {
  if (epoch < 0) fail(ErrorCode::InvalidArgument, "loader begin_run: epoch is " + std::to_string(epoch) + ", must be >= 0");
  if (run < 0 || run >= runs_per_epoch_) {
    fail(ErrorCode::InvalidArgument, "loader begin_run: run is " + std::to_string(run) + ", must be in [0, " +
                                         std::to_string(runs_per_epoch_) + ") (runs per epoch)");
  }
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Run>> kept;
  std::vector<Task> new_tasks;
  kept.push_back(find_or_schedule(epoch, run, kept, new_tasks));
  if (run + 1 < runs_per_epoch_) {
    kept.push_back(find_or_schedule(epoch, run + 1, kept, new_tasks));
  } else if (epoch < std::numeric_limits<int64_t>::max()) {
    kept.push_back(find_or_schedule(epoch + 1, 0, kept, new_tasks));
  }
  std::erase_if(tasks_, [&](const Task& t) { return std::find(kept.begin(), kept.end(), t.run) == kept.end(); });
  tasks_.insert(tasks_.end(), new_tasks.begin(), new_tasks.end());
  runs_ = std::move(kept);
  work_cv_.notify_all();
  ready_cv_.notify_all();
}

std::shared_ptr<Loader::Run> Loader::find_or_schedule(int64_t epoch, int64_t run,
                                                      const std::vector<std::shared_ptr<Run>>& kept,
                                                      std::vector<Task>& new_tasks) {
  for (const std::shared_ptr<Run>& r : runs_) {
    if (r->epoch == epoch && r->run == run) return r;
  }
  auto out = std::make_shared<Run>();
  out->epoch = epoch;
  out->run = run;
  for (const std::vector<std::shared_ptr<Run>>* list : {&std::as_const(runs_), &kept}) {
    for (const std::shared_ptr<Run>& r : *list) {
      if (r->epoch == epoch) out->order = r->order;
    }
  }
  if (!out->order) {
    out->order = std::make_shared<Order>();
    out->order->epoch = epoch;
    out->order->positions.resize(static_cast<size_t>(source_.num_samples()));
  }
  const int64_t p = local_samples_per_run_;
  for (LoaderRole role : kRoles) {
    out->fields[static_cast<size_t>(role)] =
        std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(p) * source_.field(role).bytes());
  }
  // Split the run's positions evenly among the workers (the first p % workers get one more).
  const int64_t workers = options_.workers, base = p / workers, extra = p % workers;
  int64_t first = 0;
  for (int64_t w = 0; w < workers; ++w) {
    const int64_t count = base + (w < extra ? 1 : 0);
    if (count == 0) continue;
    new_tasks.push_back(Task{out, first, count});
    first += count;
    ++out->chunks_left;
  }
  return out;
}

void Loader::prepare(const Task& task) const {
  Run& run = *task.run;
  Order& order = *run.order;
  std::call_once(order.drawn, [&] {
    std::iota(order.positions.begin(), order.positions.end(), 0);
    if (options_.shuffle) {
      std::mt19937_64 rng(options_.seed + static_cast<uint64_t>(order.epoch));
      std::shuffle(order.positions.begin(), order.positions.end(), rng);
    }
  });
  const int64_t n = source_.num_samples();
  for (int64_t j = task.first; j < task.first + task.count; ++j) {
    // Past the end of the epoch's order (only without drop_last), wrap to its start.
    const int64_t s = order.positions[static_cast<size_t>((run.run * samples_per_run_ + run_position(j)) % n)];
    for (LoaderRole role : kRoles) {
      const size_t bytes = source_.field(role).bytes();
      source_.write(role, s, run.fields[static_cast<size_t>(role)].get() + static_cast<size_t>(j) * bytes);
    }
  }
}

int64_t Loader::run_position(int64_t j) const {
  // Local sample j is sample j % b of local replica r at step k, i.e. of global replica
  // shard_index * replicas + r.
  const int64_t b = options_.batch_size;
  const auto [step, replica] = local_layout_.step_and_replica(j / b);
  return global_layout_.index(step, options_.shard_index * options_.replicas + replica) * b + j % b;
}

void Loader::finish_chunk(Run& run) {
  if (--run.chunks_left == 0) {
    run.ready = true;
    ready_cv_.notify_all();
  }
}

void Loader::help_prepare(const std::shared_ptr<Run>& run, std::unique_lock<std::mutex>& lock) {
  while (!run->ready) {
    const auto it = std::find_if(tasks_.begin(), tasks_.end(), [&](const Task& t) { return t.run == run; });
    if (it == tasks_.end()) return;  // the rest is being prepared by workers
    Task task = std::move(*it);
    tasks_.erase(it);
    lock.unlock();
    prepare(task);
    lock.lock();
    finish_chunk(*run);
  }
}

void Loader::work() {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (stopping_) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    prepare(task);
    std::lock_guard lock(mutex_);
    finish_chunk(*task.run);
  }
}

void Loader::fill(LoaderRole role, int64_t step, int64_t replica, void* buffer, size_t bytes) {
  const SampleField& f = source_.field(role);
  const auto what = [&f] { return "loader " + f.name + " fill"; };
  const size_t expected = fill_bytes(role);
  if (bytes != expected) {
    fail(ErrorCode::ShapeMismatch,
         what() + ": buffer is " + std::to_string(bytes) + " bytes, " + std::to_string(expected) + " expected (batch_size " +
             std::to_string(options_.batch_size) + " x " + std::to_string(f.elements) + " " +
             std::string(ir::dtype_name(f.dtype)) + ")");
  }
  if (buffer == nullptr) fail(ErrorCode::InvalidArgument, what() + ": buffer is NULL");
  if (step < 0 || step >= options_.steps_per_run) {
    fail(ErrorCode::InvalidArgument, what() + ": step is " + std::to_string(step) + ", must be in [0, " +
                                         std::to_string(options_.steps_per_run) + ") (steps_per_run)");
  }
  if (replica < 0 || replica >= options_.replicas) {
    fail(ErrorCode::InvalidArgument, what() + ": replica is " + std::to_string(replica) + ", must be in [0, " +
                                         std::to_string(options_.replicas) + ") (replicas)");
  }
  std::shared_ptr<Run> run;
  {
    std::unique_lock lock(mutex_);
    if (runs_.empty()) fail(ErrorCode::Runtime, what() + ": no current run (call begin_run first)");
    run = runs_.front();
    help_prepare(run, lock);  // a fill that would wait prepares the run's pending chunks itself
    if (!run->ready) {
      ++stats_.fill_waits;
      ++stats_.waiting_fills;
      ready_cv_.wait(lock, [&] { return run->ready || stopping_ || runs_.front() != run; });
      --stats_.waiting_fills;
      if (stopping_) {
        ready_cv_.notify_all();  // the destructor waits for the waiting fills to leave
        fail(ErrorCode::Cancelled, what() + ": the loader was destroyed while this fill waited for its run");
      }
      if (runs_.front() != run) {
        fail(ErrorCode::Runtime, what() + ": run " + std::to_string(run->run) + " of epoch " +
                                     std::to_string(run->epoch) + " is no longer current (begin_run(" +
                                     std::to_string(runs_.front()->epoch) + ", " +
                                     std::to_string(runs_.front()->run) + ") was called while this fill waited)");
      }
    }
  }
  // The run stays alive through `run` even if begin_run() discards it meanwhile.
  const auto first = static_cast<size_t>(local_layout_.index(step, replica) * options_.batch_size);
  std::memcpy(buffer, run->fields[static_cast<size_t>(role)].get() + first * f.bytes(), bytes);
}

LoaderStats Loader::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace plexus::data
