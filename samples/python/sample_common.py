"""What the Python samples share, as samples/common/*.h does for the C++ ones: the common
command-line options (options.h: one spelling per idea, the seeds' spellings), their
checks (a bad value exits with status 2 and "<sample>: error: ... (see --help)"), the
metrics file (metrics.h), a progress bar (progress.h; here on stderr), checkpointing
(checkpointing.h: <dir>/checkpoint.plxckpt with the data position and seed as counters),
and --profile's files (profile.h: the trace and the memory report beside it).

Not a sample itself: mnist_rts.py and mnist_pipeline.py import it from this folder.
"""
import argparse
import json
import math
import os
import sys
import time

# The common options a sample takes beyond the ones every sample takes (options.h Feature).
EPOCHS, TEST_BATCH, CHECKPOINTS, WEIGHTS_OUT, LOADER, ACCUMULATION = 1, 2, 4, 8, 16, 64


# --help of --profile, the same in every sample (options.h kProfileHelp).
PROFILE_HELP = ("record the training session's runs and, after training, write the last run as a Chrome trace to "
                "<dir>/training.json (https://ui.perfetto.dev) and the session's memory report beside it to "
                "<dir>/training.memory.json (docs/profiling.md; plexus-report draws both); a sample with an "
                "inference pipeline also writes <dir>/inference.json and <dir>/inference.memory.json")


class UsageError(ValueError):
    """A bad option value; parse_options prints it and exits with status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with the C++ samples' error line: '<name>: error: <what> (see --help)', status 2."""

    def error(self, message):
        """Prints the usage error as the C++ samples do and exits with status 2."""
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        sys.exit(2)


def parser(name, description, defaults, features):
    """An ArgumentParser with the common options `features` picks (the options.h set, with
    `defaults`: a dict of option dests to default values, e.g. {"batch_size": 8}); the
    sample adds its own options to it before parse_options()."""
    d = dict(dataset="mnist", data_dir="data", seed=42, learning_rate=0.001, num_steps=0, epochs=1, batch_size=8,
             test_batch_size=80, device_iterations=1, gradient_accumulation=1, replication_factor=1,
             prefetch_depth=2, loader_workers=2)
    d.update(defaults)
    p = _Parser(prog=name, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    common = p.add_argument_group("Common options (the same in every sample)")
    common.add_argument("--dataset", default=d["dataset"], help="mnist or fashion (Fashion-MNIST)")
    common.add_argument("--data-dir", default=d["data_dir"], help="folder holding mnist/ and fashion-mnist/")
    steps_help = ("stop once this many steps (weight updates) are done in all" if features & EPOCHS
                  else "training steps (weight updates) in all")
    if features & CHECKPOINTS:
        steps_help += ", counting those of a resumed checkpoint"
    steps_help += "; rounded up to whole session runs"
    if features & EPOCHS:
        steps_help += " (0: no limit, --epochs decide)"
    common.add_argument("--num-steps", type=int, default=d["num_steps"], help=steps_help)
    if features & EPOCHS:
        common.add_argument("--epochs", type=int, default=d["epochs"], help="passes over the training set")
    common.add_argument("--batch-size", type=int, default=d["batch_size"], help="training micro-batch size per replica")
    if features & TEST_BATCH:
        common.add_argument("--test-batch-size", type=int, default=d["test_batch_size"],
                            help="test micro-batch size per replica")
    common.add_argument("--device-iterations", type=int, default=d["device_iterations"],
                        help="steps (weight updates) per session run")
    if features & ACCUMULATION:
        common.add_argument("--gradient-accumulation", type=int, default=d["gradient_accumulation"],
                            help="micro-batches per replica and weight update: a step takes batch size x this x "
                                 "replicas samples")
    common.add_argument("--learning-rate", type=float, default=d["learning_rate"],
                        help="learning rate of the optimiser")
    common.add_argument("--replication-factor", type=int, default=d["replication_factor"],
                        help="replicas training in parallel (data parallel, gradients mean-reduced)")
    common.add_argument("--seed", type=int, default=d["seed"], help="seed for weight init and shuffling")
    if features & LOADER:
        common.add_argument("--prefetch-depth", type=int, default=d["prefetch_depth"],
                            help="micro-batches the io threads prepare ahead of the devices per stream and "
                                 "replica (0: the devices copy)")
        common.add_argument("--loader-workers", type=int, default=d["loader_workers"],
                            help="data loader threads preparing runs ahead (1 .. 256)")
    if features & CHECKPOINTS:
        common.add_argument("--checkpoint-dir", default="",
                            help="save checkpoint.plxckpt (weights, optimizer state, step, data position) in this "
                                 "folder at the end of training and every --checkpoint-every steps or "
                                 "--checkpoint-every-seconds")
        common.add_argument("--checkpoint-every", type=int, default=0,
                            help="steps between checkpoints (0: only at the end; rounded up to whole session runs)")
        common.add_argument("--checkpoint-every-seconds", type=float, default=0.0,
                            help="seconds of wall time between checkpoints, whichever of this and --checkpoint-every "
                                 "comes first (0: no time limit; checked after each session run)")
        common.add_argument("--resume", action="store_true", help="continue from the checkpoint in --checkpoint-dir")
        common.add_argument("--model-dir", default="",
                            help="seed 002's spelling: --checkpoint-dir that resumes from its checkpoint when there "
                                 "is one")
    common.add_argument("--metrics-out", default="", help="write metrics as JSON to this file")
    common.add_argument("--profile", action="store_true", help=PROFILE_HELP)
    common.add_argument("--profile-dir", default="profile",
                        help="folder for --profile's traces and memory reports (created if missing)")
    if features & WEIGHTS_OUT:
        common.add_argument("--weights-out", default="",
                            help="write the trained parameters to this file (float32, little-endian, concatenated)")
    p.features = features
    return p


def dataset_folder(o):
    """The folder of --dataset under --data-dir (data/mnist or data/fashion-mnist)."""
    return os.path.join(o.data_dir, "mnist" if o.dataset == "mnist" else "fashion-mnist")


def checkpoint_path(folder):
    """The checkpoint file in `folder`: folder/checkpoint.plxckpt."""
    return os.path.join(folder, "checkpoint.plxckpt")


def _at_least(option, value, minimum):
    """Raises UsageError ("--option must be >= minimum, got value") unless value >= minimum."""
    if value < minimum:
        raise UsageError(f"--{option} must be >= {minimum}, got {value}")


def _check(o, features):
    """options.h's range checks, data check and checkpoint folding; raises UsageError."""
    _at_least("num-steps", o.num_steps, 0 if features & EPOCHS else 1)
    _at_least("epochs", getattr(o, "epochs", 1), 0)
    _at_least("batch-size", o.batch_size, 1)
    _at_least("test-batch-size", getattr(o, "test_batch_size", 1), 1)
    _at_least("device-iterations", o.device_iterations, 1)
    _at_least("gradient-accumulation", getattr(o, "gradient_accumulation", 1), 1)
    _at_least("replication-factor", o.replication_factor, 1)
    if not o.learning_rate > 0.0:
        raise UsageError(f"--learning-rate must be > 0, got {o.learning_rate:f}")
    _at_least("prefetch-depth", getattr(o, "prefetch_depth", 0), 0)
    _at_least("loader-workers", getattr(o, "loader_workers", 1), 1)
    if getattr(o, "loader_workers", 1) > 256:
        raise UsageError(f"--loader-workers must be <= 256, got {o.loader_workers}")
    if o.dataset not in ("mnist", "fashion"):
        raise UsageError(f"--dataset must be 'mnist' or 'fashion', got '{o.dataset}'")
    folder = dataset_folder(o)
    images = os.path.join(folder, "train-images-idx3-ubyte")
    if not (os.path.exists(images) or os.path.exists(images + ".gz")):
        raise UsageError(f"--data-dir '{o.data_dir}' holds no {o.dataset} data (no {images}[.gz]; "
                         f"scripts/fetch-data.sh fetches it)")
    if not o.profile_dir:
        raise UsageError("--profile-dir must name a folder, got ''")
    if features & CHECKPOINTS:
        if o.model_dir:
            if o.checkpoint_dir:
                raise UsageError("--model-dir and --checkpoint-dir name the same folder: give one")
            o.checkpoint_dir = o.model_dir
            o.resume = o.resume or os.path.exists(checkpoint_path(o.checkpoint_dir))
        _at_least("checkpoint-every", o.checkpoint_every, 0)
        if not o.checkpoint_every_seconds >= 0:  # also NaN
            raise UsageError(f"--checkpoint-every-seconds must be >= 0, got {o.checkpoint_every_seconds:f}")
        if (o.resume or o.checkpoint_every > 0 or o.checkpoint_every_seconds > 0) and not o.checkpoint_dir:
            option = ("--resume" if o.resume else "--checkpoint-every" if o.checkpoint_every > 0
                      else "--checkpoint-every-seconds")
            raise UsageError(f"{option} needs --checkpoint-dir")
        if o.resume and not os.path.exists(checkpoint_path(o.checkpoint_dir)):
            raise UsageError(f"--resume: no checkpoint in --checkpoint-dir '{o.checkpoint_dir}' "
                             f"(no {checkpoint_path(o.checkpoint_dir)})")


def parse_options(p, argv=None, check_own=None):
    """Parses the command line with parser `p`, checks the common options, then calls
    check_own(o) (which raises UsageError). Exits with status 2 on a bad command line."""
    o = p.parse_args(argv)
    try:
        _check(o, p.features)
        if check_own:
            check_own(o)
    except UsageError as e:
        p.error(str(e))
    return o


def runs_left(o, step):
    """Session runs of device_iterations steps left before --num-steps, from `step` done."""
    if o.num_steps == 0:
        return math.inf
    return max(0, (o.num_steps - step + o.device_iterations - 1) // o.device_iterations)


def options_json(o, features):
    """The common options' values for the metrics file (options.h options_json)."""
    j = dict(dataset=o.dataset, seed=o.seed, learning_rate=o.learning_rate, num_steps=o.num_steps,
             batch_size=o.batch_size, device_iterations=o.device_iterations, replication_factor=o.replication_factor)
    if features & EPOCHS:
        j["epochs"] = o.epochs
    if features & TEST_BATCH:
        j["test_batch_size"] = o.test_batch_size
    if features & ACCUMULATION:
        j["gradient_accumulation"] = o.gradient_accumulation
    if features & LOADER:
        j["prefetch_depth"] = o.prefetch_depth
        j["loader_workers"] = o.loader_workers
    return j


def write_metrics(path, metrics):
    """Writes `metrics` as JSON (keys sorted, as nlohmann::json writes them) when `path` is set."""
    if path:
        with open(path, "w") as f:
            json.dump(metrics, f, indent=2, sort_keys=True)
            f.write("\n")


def write_profile(o, session, name):
    """--profile (profile.h write_profile): writes the last run of `session` (created with
    profile=1) as <--profile-dir>/<name>.json, a Chrome trace, and its memory report beside it
    as <name>.memory.json, creating the folder; prints both paths. `name` is the session's
    role ("training", "inference"). Returns (trace dict, {"file": path, "memory_report": path});
    raises plexus.Error when the session has no trace, OSError when a file cannot be written."""
    os.makedirs(o.profile_dir, exist_ok=True)
    path = os.path.join(o.profile_dir, name + ".json")
    memory_path = os.path.join(o.profile_dir, name + ".memory.json")
    trace = session.trace()
    with open(path, "w") as f:
        json.dump(trace, f)
    with open(memory_path, "w") as f:
        json.dump(session.memory_report(), f, indent=1)
    print(f"{name} profile: {path} (open in https://ui.perfetto.dev or chrome://tracing), memory report beside it: "
          f"{memory_path} (docs/profiling.md; plexus-report draws both)")
    return trace, dict(file=path, memory_report=memory_path)


def write_weights(path, arrays):
    """Writes the arrays as float32 raw bytes, concatenated (the C++ samples' --weights-out)."""
    if path:
        with open(path, "wb") as f:
            for a in arrays:
                f.write(a.astype("<f4", copy=False).tobytes())


class Progress:
    """A progress bar on stderr: redrawn in place on a terminal (at most 10 times a second),
    a plain line every 10% otherwise (progress.h, which writes to stdout)."""

    def __init__(self, label, total):
        """A bar labelled `label` over `total` units."""
        self.label, self.total = label, max(total, 1)
        self.tty = sys.stderr.isatty()
        self.start = self.last_draw = time.monotonic()
        self.last_decile = -1

    def update(self, done, suffix):
        """Reports `done` of `total` units with `suffix` (running loss, accuracy)."""
        now = time.monotonic()
        final = done >= self.total
        seconds = now - self.start
        rate = f"{done / seconds if seconds > 0 else 0:.0f} it/s"
        if self.tty:
            if not final and now - self.last_draw < 0.1:
                return
            self.last_draw = now
            filled = done * 30 // self.total
            eta = seconds * (self.total - done) / done if done else 0.0
            bar = "#" * filled + "." * (30 - filled)
            sys.stderr.write(f"\r{self.label} [{bar}] {done * 100 // self.total:3d}% {rate} eta {eta:4.0f}s  "
                             f"{suffix}\033[K" + ("\n" if final else ""))
        else:
            decile = done * 10 // self.total
            if decile <= self.last_decile and not final:
                return
            self.last_decile = decile
            sys.stderr.write(f"{self.label} {done * 100 // self.total:3d}% {done}/{self.total} {rate}  {suffix}\n")
        sys.stderr.flush()


class Checkpointing:
    """Saves and resumes one training session (checkpointing.h): the session's state plus
    the counters epoch, run (the next session run to train) and seed."""

    def __init__(self, o, runs_per_epoch):
        """Takes --checkpoint-dir, --checkpoint-every[-seconds], --resume and --seed from the options `o`."""
        self.dir = getattr(o, "checkpoint_dir", "")
        self.every = getattr(o, "checkpoint_every", 0)
        self.every_seconds = getattr(o, "checkpoint_every_seconds", 0.0)
        self.resume = getattr(o, "resume", False)
        self.seed, self.runs_per_epoch = o.seed, runs_per_epoch
        self.last_saved = 0
        self.last_save_time = time.monotonic()

    def start(self, session):
        """With --resume, loads the checkpoint into `session` and returns its (epoch, run);
        else (0, 0). Raises RuntimeError when it was trained with another seed."""
        if not self.resume:
            return 0, 0
        path = checkpoint_path(self.dir)
        counters = session.load_checkpoint(path, ["epoch", "run", "seed"])
        if counters["seed"] != self.seed:
            raise RuntimeError(f"the checkpoint '{path}' was trained with --seed {counters['seed']}, not {self.seed}")
        self.last_saved = session.step
        print(f"resumed from {path}: step {self.last_saved}, epoch {counters['epoch'] + 1}, run {counters['run']}")
        return counters["epoch"], counters["run"]

    def after_run(self, session, at):
        """After a session run; `at` is (epoch, next run). Saves every --checkpoint-every steps or
        --checkpoint-every-seconds seconds (since the last save or this object's creation),
        whichever comes first."""
        steps_due = self.every > 0 and session.step - self.last_saved >= self.every
        time_due = self.every_seconds > 0 and time.monotonic() - self.last_save_time >= self.every_seconds
        if steps_due or time_due:
            self._save(session, at)

    def finish(self, session, at):
        """At the end of training: saves unless nothing changed since the last save."""
        if self.dir and session.step != self.last_saved:
            self._save(session, at)

    def _save(self, session, at):
        """Saves the session with the data position `at` (the next epoch's start past its last run)."""
        epoch, run = at
        if run >= self.runs_per_epoch:
            epoch, run = epoch + 1, 0
        os.makedirs(self.dir, exist_ok=True)
        session.save_checkpoint(checkpoint_path(self.dir), {"epoch": epoch, "run": run, "seed": self.seed})
        self.last_saved = session.step
        self.last_save_time = time.monotonic()
        erase = "\r\033[K" if sys.stdout.isatty() else ""  # on a terminal the line replaces the progress bar
        print(f"{erase}checkpoint: step {self.last_saved} (epoch {epoch + 1}, run {run} next) saved to "
              f"{checkpoint_path(self.dir)}", flush=True)


def train_epochs(o, session, loader, streams, describe, on_run=None):
    """The training loop both samples share (mnist_app.h train(), seed 003's train()):
    --epochs passes over the loader's runs (or --num-steps steps), resumed from and saved to
    checkpoints, the loader feeding images and labels through its fill callbacks (epoch e
    shuffled with seed + e), running loss and accuracy on a progress bar.

    streams: (images, labels, loss, correct) of the session's IR. describe(loss, accuracy)
    gives the bar's text. on_run(run, seconds) is called after each run. Returns
    {"steps": device iterations trained, "loss", "accuracy" (the last epoch's means),
    "samples_per_second"}."""
    images, labels, loss_stream, correct_stream = streams
    per_run = loader.steps_per_run * loader.replicas * loader.batch_size
    checkpointing = Checkpointing(o, loader.runs_per_epoch)
    from_epoch, from_run = checkpointing.start(session)
    result = {"steps": 0, "loss": 0.0, "accuracy": 0.0}
    at, trained, start = (from_epoch, from_run), 0, time.monotonic()
    for epoch in range(from_epoch, o.epochs):
        if runs_left(o, session.step) <= 0:
            break
        first = from_run if epoch == from_epoch else 0
        last = first + min(loader.runs_per_epoch - first, runs_left(o, session.step))
        bar = Progress(f"epoch {epoch + 1}/{o.epochs}", last - first)
        loss_sum, hits, seen = 0.0, 0, 0
        for run in range(first, last):
            loader.begin_run(epoch, run)
            t0 = time.monotonic()
            out = session.run(callbacks=loader.callbacks(images, labels))
            if on_run:
                on_run(run, time.monotonic() - t0)
            for loss, correct in zip(out[loss_stream].ravel().tolist(), out[correct_stream].ravel().tolist()):
                loss_sum += loss
                hits += correct
            seen += per_run
            result["steps"] += o.device_iterations
            bar.update(run + 1 - first, describe(loss_sum / (seen // loader.batch_size), hits / seen))
            at = (epoch, run + 1)
            checkpointing.after_run(session, at)
        trained += seen
        result["loss"] = loss_sum / (seen // loader.batch_size) if seen else 0.0
        result["accuracy"] = hits / seen if seen else 0.0
    seconds = time.monotonic() - start
    result["samples_per_second"] = trained / seconds if seconds > 0 else 0.0
    checkpointing.finish(session, at)
    return result


def load_datasets(o):
    """The train and test splits of --dataset in --data-dir, after printing the runtime and
    what was loaded (the C++ samples' first lines)."""
    import plexus
    print(f"plexus: {plexus.runtime_info()}")
    folder = dataset_folder(o)
    train_data = plexus.Dataset.mnist(folder, train=True)
    test_data = plexus.Dataset.mnist(folder, train=False)
    print(f"{o.dataset}: {len(train_data)} training and {len(test_data)} test images from {folder}")
    return train_data, test_data


def run_sample(name, body):
    """Runs body() and returns the process's exit status: 0, or 1 after printing
    "<name>: <error>" for a Plexus, file or runtime error (the C++ samples' catch)."""
    import plexus
    try:
        body()
    except (plexus.Error, OSError, RuntimeError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    return 0
