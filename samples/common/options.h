// The samples' command line, in one dialect (Boost.Program_options): every option that
// more than one sample takes is declared here once, with one spelling per idea, checked
// here, and written to the metrics JSON here; a sample adds only the options of its own.
// The spellings follow the seeds where a seed names the idea:
//   --replication-factor, --batch-size        seed 000 (mnist_rts.py)
//   --learning-rate, --epochs, --batch-size,
//   --test-batch-size, --device-iterations    seed 003 (mnist_pipeline.py)
//   --num-steps, --model-dir                  seed 002 (distributed_training_example.py)
// --model-dir is seed 002's spelling of the checkpoint folder: --checkpoint-dir DIR that
// resumes from its checkpoint when there is one (the estimator's model_dir).
// A bad value is a UsageError naming the option; parse_sample_options prints it and the
// sample exits with status 2.
#pragma once

#include <plexus/plexus.h>
#include <plexus/plexus.hpp>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "samples/common/checkpointing.h"
#include "samples/common/mnist_data.h"

namespace samples {

namespace po = boost::program_options;

/// Thrown for a bad option value; parse_sample_options prints it and the sample exits with status 2.
struct UsageError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Throws UsageError ("--option must be >= minimum, got value") unless value >= minimum.
template <class T>
void require_at_least(const std::string& option, T value, T minimum) {
  if (value < minimum) {
    throw UsageError("--" + option + " must be >= " + std::to_string(minimum) + ", got " + std::to_string(value));
  }
}

/// The common options a sample takes beyond those every sample takes (--help, --dataset,
/// --data-dir, --seed, --learning-rate, --num-steps, --batch-size, --device-iterations,
/// --replication-factor, --metrics-out, --profile, --profile-dir). Combine with |.
enum Feature : unsigned {
  kEpochs = 1u << 0,        ///< --epochs; without it --num-steps alone sets the training length (>= 1)
  kTestBatch = 1u << 1,     ///< --test-batch-size
  kCheckpoints = 1u << 2,   ///< --checkpoint-dir, --checkpoint-every[-seconds], --resume, --model-dir
  kWeightsOut = 1u << 3,    ///< --weights-out
  kLoader = 1u << 4,        ///< --prefetch-depth, --loader-workers (a plx::Loader feeds the streams)
  kThreads = 1u << 5,       ///< --threads-per-device
  kAccumulation = 1u << 6,  ///< --gradient-accumulation
  kWorkers = 1u << 7,       ///< worker processes: --replication-factor counts every worker's replicas, 0: one each
  kText = 1u << 8,          ///< a text corpus (--corpus) instead of an image dataset (--dataset, --data-dir)
};

/// Values of the common options. A sample sets its defaults (shown by --help) before
/// parse_sample_options; the fields of options it does not take keep their values.
struct CommonOptions {
  std::string dataset = "mnist";  ///< mnist or fashion
  std::string data_dir = "data";  ///< holds mnist/ and fashion-mnist/ (scripts/fetch-data.sh)
  std::string corpus = PLX_FORTUNES_DIR;  ///< with kText: a text file or a folder of strfile-format files
  uint64_t seed = 42;             ///< weight init and shuffling
  double learning_rate = 0.001;
  int64_t num_steps = 0;  ///< steps (weight updates) in all, counting a resumed checkpoint's; 0: no limit
  int64_t epochs = 1;
  int64_t batch_size = 8;  ///< micro-batch per replica
  int64_t test_batch_size = 80;
  int64_t device_iterations = 1;  ///< steps per session run
  int64_t gradient_accumulation = 1;
  int64_t replication_factor = 1;  ///< with kWorkers: of all workers; 0: one per worker
  size_t gradient_bucket_bytes = size_t{25} << 20;  ///< plx_session_options.gradient_bucket_bytes
  std::string device_memory_limit = "0";  ///< --device-memory-limit as given: bytes, or with K, M or G (KiB, MiB, GiB)
  size_t device_memory_bytes = 0;         ///< its value (check_training); 0: no limit
  int64_t prefetch_depth = 2;
  int64_t loader_workers = 2;
  int64_t threads_per_device = 0;
  std::string metrics_out;
  std::string weights_out;
  bool profile = false;                 ///< --profile: record the runs, write the trace and memory report
  std::string profile_dir = "profile";  ///< --profile-dir: where (samples/common/profile.h)
  CheckpointOptions checkpoint;
  std::string model_dir;  ///< seed 002's spelling; folded into `checkpoint` by the checks

  /// The folder of --dataset under --data-dir (data/mnist or data/fashion-mnist).
  std::string dataset_folder() const { return samples::dataset_folder(data_dir, dataset); }

  /// Session runs of device_iterations steps left before --num-steps, from `step` done;
  /// int64 max without a limit.
  int64_t runs_left(int64_t step) const {
    if (num_steps == 0) return std::numeric_limits<int64_t>::max();
    return std::max<int64_t>(0, (num_steps - step + device_iterations - 1) / device_iterations);
  }
};

/// Columns of --help (a sample's own options_description takes it too).
inline constexpr unsigned kHelpWidth = 110;

namespace options_detail {

/// Adds the training options (step limit, epochs, batch sizes, device iterations, gradient
/// accumulation, learning rate, replicas, seed) that `f` picks to `d`, bound to `o`.
inline void add_training(po::options_description& d, CommonOptions& o, unsigned f) {
  const std::string steps_help =
      std::string((f & kEpochs) ? "stop once this many steps (weight updates) are done in all"
                                : "training steps (weight updates) in all") +
      ((f & kCheckpoints) ? ", counting those of a resumed checkpoint" : "") + "; rounded up to whole session runs" +
      ((f & kEpochs) ? " (0: no limit, --epochs decide)" : "");
  d.add_options()("num-steps", po::value(&o.num_steps)->default_value(o.num_steps), steps_help.c_str());
  if (f & kEpochs) {
    d.add_options()("epochs", po::value(&o.epochs)->default_value(o.epochs), "passes over the training set");
  }
  d.add_options()("batch-size", po::value(&o.batch_size)->default_value(o.batch_size),
                  "training micro-batch size per replica");
  if (f & kTestBatch) {
    d.add_options()("test-batch-size", po::value(&o.test_batch_size)->default_value(o.test_batch_size),
                    "test micro-batch size per replica");
  }
  d.add_options()("device-iterations", po::value(&o.device_iterations)->default_value(o.device_iterations),
                  "steps (weight updates) per session run");
  if (f & kAccumulation) {
    d.add_options()("gradient-accumulation",
                    po::value(&o.gradient_accumulation)->default_value(o.gradient_accumulation),
                    "micro-batches per replica and weight update: a step takes batch size x this x replicas samples");
  }
  char shown[32];
  std::snprintf(shown, sizeof shown, "%g", o.learning_rate);
  d.add_options()("learning-rate", po::value(&o.learning_rate)->default_value(o.learning_rate, shown),
                  "learning rate of the optimiser");
  const std::string replicas_help =
      (f & kWorkers) ? "replicas training in parallel over all worker processes, a multiple of their number "
                       "(data parallel, gradients mean-reduced; 0: one per worker)"
                     : "replicas training in parallel (data parallel, gradients mean-reduced)";
  d.add_options()("replication-factor", po::value(&o.replication_factor)->default_value(o.replication_factor),
                  replicas_help.c_str())(
      "gradient-bucket-bytes", po::value(&o.gradient_bucket_bytes)->default_value(o.gradient_bucket_bytes),
      "gradient buckets: the gradient all-reduces of a step fused into calls of about this many bytes "
      "(PyTorch DDP's bucket_cap_mb; 0: one call per gradient)")(
      "device-memory-limit", po::value(&o.device_memory_limit)->default_value(o.device_memory_limit),
      "memory of each device, in bytes or with K, M or G (KiB, MiB, GiB): compiling refuses a program whose "
      "planned memory exceeds it, naming the largest tensors live at its peak, before anything runs (0: no limit)")(
      "seed", po::value(&o.seed)->default_value(o.seed), "seed for weight init and shuffling");
}

/// Bytes of a --device-memory-limit value: digits, then optionally K, M or G (powers of
/// 1024). Throws UsageError naming the option for anything else or an overflow.
inline size_t parse_memory_limit(const std::string& text) {
  const size_t digits = static_cast<size_t>(
      std::find_if(text.begin(), text.end(), [](char c) { return c < '0' || c > '9'; }) - text.begin());
  const std::string unit = text.substr(digits);
  const int shift = unit.empty() ? 0 : unit == "K" ? 10 : unit == "M" ? 20 : unit == "G" ? 30 : -1;
  if (digits == 0 || digits > 15 || shift < 0) {
    throw UsageError("--device-memory-limit must be a number of bytes, optionally followed by K, M or G (for "
                     "example 512M), got '" + text + "'");
  }
  return static_cast<size_t>(std::stoull(text.substr(0, digits))) << shift;
}

/// Adds the data loader and compute thread options that `f` picks to `d`, bound to `o`.
inline void add_machine(po::options_description& d, CommonOptions& o, unsigned f) {
  if (f & kLoader) {
    d.add_options()("prefetch-depth", po::value(&o.prefetch_depth)->default_value(o.prefetch_depth),
                    "micro-batches the io threads prepare ahead of the devices per stream and replica (0: the "
                    "devices copy)")("loader-workers", po::value(&o.loader_workers)->default_value(o.loader_workers),
                                     "data loader threads preparing runs ahead (1 .. 256)");
  }
  if (f & kThreads) {
    d.add_options()("threads-per-device", po::value(&o.threads_per_device)->default_value(o.threads_per_device),
                    "compute threads per device, one GEMM panel each (0: cores / devices of this process)");
  }
}

/// --help of --profile, the same in every sample (and in samples/python/sample_common.py).
inline constexpr const char* kProfileHelp =
    "record the training session's runs and, after training, write the last run as a Chrome trace to "
    "<dir>/training.json (https://ui.perfetto.dev) and the session's memory report beside it to "
    "<dir>/training.memory.json (docs/profiling.md; plexus-report draws both); a sample with an inference "
    "pipeline also writes <dir>/inference.json and <dir>/inference.memory.json";

/// Adds the checkpoint and output file options that `f` picks to `d`, bound to `o`.
inline void add_files(po::options_description& d, CommonOptions& o, unsigned f) {
  if (f & kCheckpoints) {
    CheckpointOptions& c = o.checkpoint;
    d.add_options()("checkpoint-dir", po::value(&c.dir),
                    "save checkpoint.plxckpt (weights, optimizer state, step, data position) in this folder at the "
                    "end of training and every --checkpoint-every steps or --checkpoint-every-seconds")(
        "checkpoint-every", po::value(&c.every)->default_value(c.every),
        "steps between checkpoints (0: only at the end; rounded up to whole session runs)")(
        "checkpoint-every-seconds", po::value(&c.every_seconds)->default_value(c.every_seconds),
        "seconds of wall time between checkpoints, whichever of this and --checkpoint-every comes first (0: no "
        "time limit; checked after each session run)")(
        "resume", po::bool_switch(&c.resume), "continue from the checkpoint in --checkpoint-dir")(
        "model-dir", po::value(&o.model_dir),
        "seed 002's spelling: --checkpoint-dir that resumes from its checkpoint when there is one");
  }
  d.add_options()("metrics-out", po::value(&o.metrics_out), "write metrics as JSON to this file")(
      "profile", po::bool_switch(&o.profile), kProfileHelp)(
      "profile-dir", po::value(&o.profile_dir)->default_value(o.profile_dir),
      "folder for --profile's traces and memory reports (created if missing)");
  if (f & kWeightsOut) {
    d.add_options()("weights-out", po::value(&o.weights_out),
                    "write the trained parameters to this file (float32, little-endian, concatenated)");
  }
}

/// Range checks of the training and machine options, and the bytes of
/// --device-memory-limit; throws UsageError naming the option.
inline void check_training(CommonOptions& o, unsigned f) {
  require_at_least<int64_t>("num-steps", o.num_steps, (f & kEpochs) ? 0 : 1);
  require_at_least<int64_t>("epochs", o.epochs, 0);
  require_at_least<int64_t>("batch-size", o.batch_size, 1);
  require_at_least<int64_t>("test-batch-size", o.test_batch_size, 1);
  require_at_least<int64_t>("device-iterations", o.device_iterations, 1);
  require_at_least<int64_t>("gradient-accumulation", o.gradient_accumulation, 1);
  require_at_least<int64_t>("replication-factor", o.replication_factor, (f & kWorkers) ? 0 : 1);
  if (!(o.learning_rate > 0.0)) {
    throw UsageError("--learning-rate must be > 0, got " + std::to_string(o.learning_rate));
  }
  require_at_least<int64_t>("prefetch-depth", o.prefetch_depth, 0);
  require_at_least<int64_t>("loader-workers", o.loader_workers, 1);
  if (o.loader_workers > 256) {
    throw UsageError("--loader-workers must be <= 256, got " + std::to_string(o.loader_workers));
  }
  require_at_least<int64_t>("threads-per-device", o.threads_per_device, 0);
  o.device_memory_bytes = parse_memory_limit(o.device_memory_limit);
}

/// --dataset is mnist or fashion, and --data-dir holds its training images.
inline void check_data(const CommonOptions& o) {
  if (o.dataset != "mnist" && o.dataset != "fashion") {
    throw UsageError("--dataset must be 'mnist' or 'fashion', got '" + o.dataset + "'");
  }
  const std::string folder = o.dataset_folder();
  if (!std::filesystem::exists(idx_path(folder, "train-images-idx3-ubyte"))) {
    throw UsageError("--data-dir '" + o.data_dir + "' holds no " + o.dataset + " data (no " + folder +
                     "/train-images-idx3-ubyte[.gz]; scripts/fetch-data.sh fetches it)");
  }
}

/// --corpus exists (kText).
inline void check_corpus(const CommonOptions& o) {
  if (!std::filesystem::exists(o.corpus)) {
    const std::string hint = o.corpus == PLX_FORTUNES_DIR ? " (install the Debian package 'fortunes')" : "";
    throw UsageError("--corpus '" + o.corpus + "' does not exist" + hint);
  }
}

/// Folds --model-dir into --checkpoint-dir (resuming when it holds a checkpoint), then
/// checks --checkpoint-every and --resume (which needs a checkpoint to resume from).
inline void check_checkpoints(CommonOptions& o) {
  CheckpointOptions& c = o.checkpoint;
  if (!o.model_dir.empty()) {
    if (!c.dir.empty()) throw UsageError("--model-dir and --checkpoint-dir name the same folder: give one");
    c.dir = o.model_dir;
    c.resume = c.resume || std::filesystem::exists(checkpoint_path(c.dir));
  }
  require_at_least<int64_t>("checkpoint-every", c.every, 0);
  if (!(c.every_seconds >= 0)) {  // also NaN
    throw UsageError("--checkpoint-every-seconds must be >= 0, got " + std::to_string(c.every_seconds));
  }
  if ((c.resume || c.every > 0 || c.every_seconds > 0) && c.dir.empty()) {
    const char* option = c.resume ? "--resume" : c.every > 0 ? "--checkpoint-every" : "--checkpoint-every-seconds";
    throw UsageError(std::string(option) + " needs --checkpoint-dir");
  }
  if (c.resume && !std::filesystem::exists(checkpoint_path(c.dir))) {
    throw UsageError("--resume: no checkpoint in --checkpoint-dir '" + c.dir + "' (no " + checkpoint_path(c.dir) + ")");
  }
}

/// --profile-dir names a folder.
inline void check_profile(const CommonOptions& o) {
  if (o.profile_dir.empty()) throw UsageError("--profile-dir must name a folder, got ''");
}

}  // namespace options_detail

/// Parses a sample's command line: --help, the common options `features` picks (bound to
/// `o`), and the sample's own options `own`; checks the common ones, then calls
/// `check_own` (which throws UsageError). Returns nullopt to go on, or the status to exit
/// with: 0 after --help (usage, then both option groups, on stdout), 2 after a bad command
/// line ("<name>: error: <what, naming the option> (see --help)" on stderr).
inline std::optional<int> parse_sample_options(int argc, char** argv, const std::string& name,
                                               const std::string& usage, CommonOptions& o, unsigned features,
                                               const po::options_description& own,
                                               const std::function<void()>& check_own) {
  po::options_description common("Common options (the same in every sample)", kHelpWidth, kHelpWidth / 2);
  common.add_options()("help,h", "show this help");
  if (features & kText) {
    common.add_options()("corpus", po::value(&o.corpus)->default_value(o.corpus),
                         "text corpus: a file, or a folder of strfile-format files (the Debian package 'fortunes')");
  } else {
    common.add_options()("dataset", po::value(&o.dataset)->default_value(o.dataset), "mnist or fashion (Fashion-MNIST)")(
        "data-dir", po::value(&o.data_dir)->default_value(o.data_dir), "folder holding mnist/ and fashion-mnist/");
  }
  options_detail::add_training(common, o, features);
  options_detail::add_machine(common, o, features);
  options_detail::add_files(common, o, features);
  po::options_description all(kHelpWidth, kHelpWidth / 2);
  all.add(common);
  if (!own.options().empty()) all.add(own);
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, all), vm);
    if (vm.count("help")) {
      std::cout << usage << "\n" << all << "\n";
      return 0;
    }
    po::notify(vm);
    options_detail::check_training(o, features);
    if (features & kText) {
      options_detail::check_corpus(o);
    } else {
      options_detail::check_data(o);
    }
    options_detail::check_checkpoints(o);
    options_detail::check_profile(o);
    check_own();
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s: error: %s (see --help)\n", name.c_str(), e.what());
    return 2;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s (see --help)\n", name.c_str(), e.what());
    return 2;
  }
  return std::nullopt;
}

/// The values of the common options `features` picks, for a metrics file (keys: the
/// option names with '_'; no file names).
inline nlohmann::json options_json(const CommonOptions& o, unsigned features) {
  nlohmann::json j = {{"seed", o.seed},
                      {"learning_rate", o.learning_rate},
                      {"num_steps", o.num_steps},
                      {"batch_size", o.batch_size},
                      {"device_iterations", o.device_iterations},
                      {"replication_factor", o.replication_factor}};
  if (!(features & kText)) j["dataset"] = o.dataset;
  if (features & kEpochs) j["epochs"] = o.epochs;
  if (features & kTestBatch) j["test_batch_size"] = o.test_batch_size;
  if (features & kAccumulation) j["gradient_accumulation"] = o.gradient_accumulation;
  if (features & kLoader) {
    j["prefetch_depth"] = o.prefetch_depth;
    j["loader_workers"] = o.loader_workers;
  }
  if (features & kThreads) j["threads_per_device"] = o.threads_per_device;
  return j;
}

/// The session options every sample takes from the common options: device iterations,
/// gradient buckets, prefetch depth, compute threads, the device memory limit and
/// --profile (record each run for plx_session_get_trace). A
/// sample sets its own (stages, strategy, ...) on the result.
inline plx::SessionOptions common_session_options(const CommonOptions& o) {
  plx::SessionOptions opts;
  opts.device_iterations = o.device_iterations;
  opts.gradient_bucket_bytes = o.gradient_bucket_bytes;
  opts.prefetch_depth = o.prefetch_depth;
  opts.threads_per_device = static_cast<int32_t>(o.threads_per_device);
  opts.device_memory_bytes = o.device_memory_bytes;
  opts.profile = o.profile ? 1 : 0;
  return opts;
}

}  // namespace samples
