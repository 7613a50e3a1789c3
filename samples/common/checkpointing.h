// Checkpoints in the samples (issue 7; docs/design.md "Checkpoints"): --checkpoint-dir,
// --checkpoint-every N (steps), --checkpoint-every-seconds S (wall time, for long runs whose
// step rate is not known in advance: bench/soak.sh) and --resume, declared in
// samples/common/options.h. Every save prints "checkpoint: step N (epoch E, run R next) saved
// to PATH" (E counted from 1, as the resume line does). The
// checkpoint, <dir>/checkpoint.plxckpt, holds the session's state and step counter plus the data position (the epoch and the
// next run) and the shuffling seed, so that a resumed process trains on exactly the data
// the first one would have seen next: the samples shuffle epoch e with seed + e.
#pragma once

#include <plexus/plexus.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace samples {

/// The checkpoint options' values (see options.h).
struct CheckpointOptions {
  std::string dir;
  int64_t every = 0;         ///< steps between saves (0: only at the end of training)
  double every_seconds = 0;  ///< seconds of wall time between saves (0: no time limit)
  bool resume = false;
};

/// The checkpoint file in folder `dir`: dir/checkpoint.plxckpt.
inline std::string checkpoint_path(const std::string& dir) {
  return (std::filesystem::path(dir) / "checkpoint.plxckpt").string();
}

/// Where training stands in the data: the next session run to train.
struct DataPosition {
  int64_t epoch = 0, run = 0;
};

/// Saves and resumes one training session. Not thread-safe.
class Checkpointing {
 public:
  Checkpointing(const CheckpointOptions& c, uint64_t seed, int64_t runs_per_epoch)
      : c_(c), seed_(static_cast<int64_t>(seed)), runs_per_epoch_(runs_per_epoch) {}

  std::string path() const { return checkpoint_path(c_.dir); }

  /// With --resume, loads the checkpoint into `session` and returns its data position
  /// (throws std::runtime_error when it was trained with another seed); else {0, 0}.
  DataPosition start(plx::Session& session) {
    if (!c_.resume) return {};
    const auto counters = session.load_checkpoint(path(), {"epoch", "run", "seed"});
    if (counters.at("seed") != seed_) {
      throw std::runtime_error("the checkpoint '" + path() + "' was trained with --seed " +
                               std::to_string(counters.at("seed")) + ", not " + std::to_string(seed_));
    }
    last_saved_ = session.step();
    std::printf("resumed from %s: step %lld, epoch %lld, run %lld\n", path().c_str(), static_cast<long long>(last_saved_),
                static_cast<long long>(counters.at("epoch") + 1), static_cast<long long>(counters.at("run")));
    return {counters.at("epoch"), counters.at("run")};
  }

  /// After a session run; `next` is the run after it. Saves once --checkpoint-every steps
  /// or --checkpoint-every-seconds seconds (counted from this object's creation or the last
  /// save) have passed since the last save, whichever comes first.
  void after_run(plx::Session& session, DataPosition next) {
    const bool steps_due = c_.every > 0 && session.step() - last_saved_ >= c_.every;
    const double seconds = std::chrono::duration<double>(Clock::now() - last_save_time_).count();
    const bool time_due = c_.every_seconds > 0 && seconds >= c_.every_seconds;
    if (steps_due || time_due) save(session, next);
  }

  /// At the end of training: saves unless nothing changed since the last save.
  void finish(plx::Session& session, DataPosition next) {
    if (!c_.dir.empty() && session.step() != last_saved_) save(session, next);
  }

 private:
  void save(plx::Session& session, DataPosition next) {
    if (next.run >= runs_per_epoch_) next = {next.epoch + 1, 0};
    std::filesystem::create_directories(c_.dir);
    session.save_checkpoint(path(), {{"epoch", next.epoch}, {"run", next.run}, {"seed", seed_}});
    last_saved_ = session.step();
    last_save_time_ = Clock::now();
    // On a terminal the line replaces the progress bar, which redraws below it.
    std::printf("%scheckpoint: step %lld (epoch %lld, run %lld next) saved to %s\n",
                isatty(STDOUT_FILENO) ? "\r\033[K" : "", static_cast<long long>(last_saved_),
                static_cast<long long>(next.epoch + 1), static_cast<long long>(next.run), path().c_str());
    std::fflush(stdout);
  }

  using Clock = std::chrono::steady_clock;
  CheckpointOptions c_;
  int64_t seed_, runs_per_epoch_;
  int64_t last_saved_ = 0;
  Clock::time_point last_save_time_ = Clock::now();
};

}  // namespace samples
