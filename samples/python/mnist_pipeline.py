#!/usr/bin/env python3
"""mnist_pipeline.py: seed 003 (PopTorch tutorial 2.6, "Parallel execution using
pipelining", mnist_pipeline.py) written with the plexus package, the Python twin of
samples/mnist_pipeline (main.cpp + network.h).

  "Model definition" / "Annotation for model partitioning": the CNN (ConvLayer(1, 10, 5, 2),
      ConvLayer(10, 20, 5, 2), Linear(320, 256) + ReLU, Linear(256, 10)) in blocks B1..B4
      (`with plexus.Block("B1"):`, seed 003's poptorch.Block); CrossEntropyLoss in B4.
  "Pipelined execution" / "Sharded execution": stages B1..B4 on devices 0..3
      (plexus.Stage("B1", device=0), ...; poptorch.Stage("B1").ipu(0)), --strategy
      pipelined (1F1B, or GPipe fill-drain with --schedule fill_drain) or sharded.
  "Gradient accumulation" / "Device iterations": --gradient-accumulation 10 micro-batches
      per weight update, --device-iterations 10 updates per session run; the outputs of
      every micro-batch come back (outputMode(All)).
  "Saving memory by offloading": --offload-optimiser keeps the AdamW state in host memory.
  "Inference": a second session over the same stages, --test-device-iterations 100
      micro-batches a run, the correct counts summed by output mode "sum".

The options, defaults (the seed's hyperparameters), graph, initial weights (PyTorch's
default init U(-1/sqrt(fan_in), 1/sqrt(fan_in)) drawn from std::mt19937_64(seed) in
network.h's order, reproduced by cxx_random.py), AdamW (PyTorch defaults) and data order
(shuffled by seed + epoch, plexus.Loader) are the C++ sample's, so both train the same
weights from the same --seed.

    samples/python/mnist_pipeline.py                          (the seed's defaults)
    samples/python/mnist_pipeline.py --strategy sharded
    samples/python/mnist_pipeline.py --offload-optimiser
    samples/python/mnist_pipeline.py --profile --profile-dir pipeline_profile

Run with the plexus package on PYTHONPATH (the build tree's build/python) and
PLEXUS_PLUGIN_PATH at the build's lib/.
"""
import sys

import numpy as np

import plexus
from plexus import ops

import sample_common as common
from cxx_random import Mt19937_64, uniform_float

STAGES = 4
FEATURES = common.EPOCHS | common.TEST_BATCH | common.CHECKPOINTS | common.WEIGHTS_OUT | common.ACCUMULATION

# The eight parameters in network.h's order: name, shape, fan-in (linear weights [in, out]).
PARAM_SPECS = [("conv1.weight", (10, 1, 5, 5), 25), ("conv1.bias", (10,), 25),
               ("conv2.weight", (20, 10, 5, 5), 250), ("conv2.bias", (20,), 250),
               ("fc1.weight", (320, 256), 320), ("fc1.bias", (256,), 320),
               ("fc2.weight", (256, 10), 256), ("fc2.bias", (10,), 256)]


def random_weights(seed):
    """The parameters' initial values, in PARAM_SPECS order: U(-b, b) with b = 1 / sqrt(fan_in)
    in float32, drawn from one std::mt19937_64(seed) (network.h CnnWeights::random)."""
    rng = Mt19937_64(seed)
    values = []
    for _, shape, fan_in in PARAM_SPECS:
        bound = np.float32(1.0) / np.sqrt(np.float32(fan_in))
        n = int(np.prod(shape))
        values.append(np.asarray(uniform_float(rng, -bound, bound, n), dtype=np.float32).reshape(shape))
    return values


def add_variables(weights):
    """The parameters as variables of the current graph, named as network.h names them."""
    return [plexus.variable(w, plexus.float32, name=name) for (name, _, _), w in zip(PARAM_SPECS, weights)]


def conv_layer(x, weight, bias):
    """Seed 003's ConvLayer: Conv2d -> MaxPool2d(2) -> ReLU."""
    return ops.relu(ops.max_pool2d(ops.conv2d(x, weight, bias), kernel=(2, 2)))


def network(x, p):
    """Seed 003's Network.forward: logits [batch, 10] of images [batch, 1, 28, 28], in blocks
    B1..B4. The caller adds the loss (training) or the correct count (test) to B4."""
    with plexus.Block("B1"):
        x = conv_layer(x, p[0], p[1])
    with plexus.Block("B2"):
        x = conv_layer(x, p[2], p[3])
    with plexus.Block("B3"):
        x = ops.relu(ops.add(ops.matmul(ops.flatten(x), p[4]), p[5]))
    with plexus.Block("B4"):
        x = ops.add(ops.matmul(x, p[6]), p[7])
    return x


def count_correct(logits, labels):
    """Rows whose argmax is the label, an int32 scalar."""
    return ops.reduce_sum(ops.cast(ops.equal(ops.argmax(logits, -1), labels), plexus.int32))


def build_training_ir(opts):
    """Seed 003's TrainingModelWithLoss + AdamW (network.h build_cnn_train): forward in B1..B4,
    CrossEntropyLoss and the correct count in B4 streamed out, autodiff, gradients
    mean-reduced over the replicas, AdamW (lr, betas 0.9/0.999, eps 1e-8, weight decay 0.01)
    with its state (exp_avg, exp_avg_sq, step) as variables. Returns (ir, streams, params)."""
    ir = plexus.Ir(replication=opts.replication_factor)
    with ir.main_graph:
        params = add_variables(random_weights(opts.seed))
        img_stream = plexus.h2d_stream((opts.batch_size, 1, 28, 28), plexus.float32, name="images")
        label_stream = plexus.h2d_stream((opts.batch_size,), plexus.int32, name="labels")
        labels = ops.host_load(label_stream)
        logits = network(ops.host_load(img_stream), params)
        with plexus.Block("B4"):
            loss = ops.softmax_cross_entropy(logits, labels)
            loss_stream = plexus.d2h_stream(loss, name="loss")
            correct_stream = plexus.d2h_stream(count_correct(logits, labels), name="correct")
        grads = plexus.autodiff(loss, params)
        for (name, shape, _), w, grad in zip(PARAM_SPECS, params, grads):
            if opts.replication_factor > 1:
                grad = ops.collectives.replicated_all_reduce_(grad, op="mean")
            m = plexus.variable(np.zeros(shape, np.float32), name=f"{name}.exp_avg")
            v = plexus.variable(np.zeros(shape, np.float32), name=f"{name}.exp_avg_sq")
            step = plexus.variable(np.zeros((), np.float32), name=f"{name}.step")
            ops.adamw_(w, grad, m, v, step, lr=opts.learning_rate, beta1=0.9, beta2=0.999, eps=1e-8,
                       weight_decay=0.01)
    return ir, (img_stream, label_stream, loss_stream, correct_stream), params


def build_inference_ir(opts, weights):
    """Seed 003's inferenceModel: the trained weights, the network on --test-batch-size
    images per replica, the correct count streamed out from B4."""
    ir = plexus.Ir(replication=opts.replication_factor)
    with ir.main_graph:
        params = add_variables(weights)
        img_stream = plexus.h2d_stream((opts.test_batch_size, 1, 28, 28), plexus.float32, name="images")
        label_stream = plexus.h2d_stream((opts.test_batch_size,), plexus.int32, name="labels")
        logits = network(ops.host_load(img_stream), params)
        with plexus.Block("B4"):
            correct_stream = plexus.d2h_stream(count_correct(logits, ops.host_load(label_stream)), name="correct")
    return ir, (img_stream, label_stream, correct_stream)


def session_options(opts, device_iterations):
    """Stages B1..B4 on devices 0..3 (poptorch.PipelinedExecution(poptorch.Stage("B1").ipu(0),
    ...) or ShardedExecution), and the options training and inference share."""
    return dict(stages=[plexus.Stage(f"B{s + 1}", device=s) for s in range(STAGES)],
                execution_strategy=opts.strategy,
                strategy_options="fill_drain" if opts.strategy == "pipelined" and opts.schedule == "fill_drain" else "",
                device_iterations=device_iterations, profile=int(opts.profile))


def print_report(session, what):
    """--debug: the compiled session's strategy and per-device schedule."""
    r = session.report()
    print(f"{what} session: strategy {r['execution_strategy']}, {r['micro_batches_per_iteration']} micro-batches "
          f"per iteration, {r['devices_per_replica']} devices per replica")
    for d, line in enumerate(r["schedule"]):
        print(f"  device {d}: {line}")


def memory_report(session):
    """Prints and returns each device's arena, resident bytes and optimizer state in host memory."""
    out = []
    for d in range(session.num_devices):
        m = session.memory_stats(d)
        print(f"  device {d}: arena {m['arena_bytes']} B (resident {m['variable_bytes']} B, peak live "
              f"{m['peak_bytes']} B), optimizer state on host {m['offloaded_bytes']} B")
        out.append(dict(arena_bytes=m["arena_bytes"], resident_bytes=m["variable_bytes"], peak_bytes=m["peak_bytes"],
                        offloaded_bytes=m["offloaded_bytes"]))
    return out


def write_profile(opts, session, name, micro_batches):
    """Writes the last run's Chrome trace and the session's memory report beside it
    (<name>.json, <name>.memory.json; sample_common.write_profile) and prints busy and bubble
    fractions next to fill-drain's (S-1)/(M+S-1)."""
    trace, files = common.write_profile(opts, session, name)
    other = trace["otherData"]
    formula = (STAGES - 1) / (micro_batches + STAGES - 1)
    busy = " ".join(f"{100.0 * b:.1f}%" for b in other["busy_fraction"])
    print(f"  busy fraction per device: {busy}\n"
          f"  bubble: measured {100.0 * other['bubble_fraction']:.1f}% of device time (1 - mean busy); fill-drain "
          f"formula (S-1)/(M+S-1) = {STAGES - 1}/{micro_batches + STAGES - 1} = {100.0 * formula:.1f}%")
    return dict(files, busy_fraction=other["busy_fraction"], bubble_fraction=other["bubble_fraction"],
                fill_drain_formula=formula)


def train(opts, train_data):
    """Seed 003's train(): --epochs passes (or --num-steps updates) over the training set,
    shuffled by seed + epoch; running loss and accuracy of every micro-batch on the bar."""
    ir, (img_stream, label_stream, loss_stream, correct_stream), params = build_training_ir(opts)
    options = session_options(opts, opts.device_iterations)
    options.update(gradient_accumulation=opts.gradient_accumulation,
                   offload_optimizer_state=int(opts.offload_optimiser))
    result = dict(profile=None)
    with plexus.Session(ir, **options) as session:
        if opts.debug:
            print_report(session, "training")
        micro = opts.device_iterations * opts.gradient_accumulation
        loader = plexus.Loader(train_data, batch_size=opts.batch_size, replicas=opts.replication_factor,
                               steps_per_run=micro, seed=opts.seed)  # drop_last
        on_run = (lambda run, seconds: print(f"\n  run {run}: {1000.0 * seconds:.1f} ms")) if opts.debug else None
        result.update(common.train_epochs(
            opts, session, loader, (img_stream, label_stream, loss_stream, correct_stream),
            lambda loss, accuracy: f"Loss:{loss:.4f} | Accuracy:{100.0 * accuracy:.2f}%", on_run))
        where = "optimizer state offloaded" if opts.offload_optimiser else "optimizer state on device"
        print(f"training memory ({where}):")
        result["memory"] = memory_report(session)
        result["weights"] = [session.get_tensor_data(p) for p in params]
        if opts.profile and result["steps"] > 0:
            result["profile"] = write_profile(opts, session, "training", opts.gradient_accumulation)
    return result


def test(opts, test_data, weights):
    """Seed 003's test(): an inference pipeline over the same stages, --test-device-iterations
    micro-batches a run over the test set in order (drop_last); correct counts summed over
    each run by output mode "sum". Returns (accuracy, samples, profile)."""
    ir, (img_stream, label_stream, correct_stream) = build_inference_ir(opts, weights)
    options = session_options(opts, opts.test_device_iterations)
    options.update(output_mode="sum")
    loader = plexus.Loader(test_data, batch_size=opts.test_batch_size, replicas=opts.replication_factor,
                           steps_per_run=opts.test_device_iterations, shuffle=False)
    per_run = opts.test_device_iterations * opts.test_batch_size * opts.replication_factor
    runs, hits, profile = loader.runs_per_epoch, 0, None
    with plexus.Session(ir, **options) as session:
        if opts.debug:
            print_report(session, "inference")
        bar = common.Progress("test", runs)
        for i in range(runs):
            loader.begin_run(0, i)
            out = session.run(callbacks=loader.callbacks(img_stream, label_stream))
            hits += int(out[correct_stream].sum())
            bar.update(i + 1, f"Accuracy:{100.0 * hits / ((i + 1) * per_run):.2f}%")
        if opts.profile and runs > 0:
            profile = write_profile(opts, session, "inference", opts.test_device_iterations)
    samples = runs * per_run
    return (hits / samples if samples else 0.0), samples, profile


def check_own(o):
    """This sample's own option checks (the common ones are checked by sample_common)."""
    if o.test_device_iterations < 1:
        raise common.UsageError(f"--test-device-iterations must be >= 1, got {o.test_device_iterations}")
    if o.strategy not in ("pipelined", "sharded"):
        raise common.UsageError(f"--strategy must be 'pipelined' or 'sharded', got '{o.strategy}'")
    if o.schedule not in ("1f1b", "fill_drain"):
        raise common.UsageError(f"--schedule must be '1f1b' or 'fill_drain', got '{o.schedule}'")
    if o.strategy == "pipelined" and o.gradient_accumulation < STAGES:
        raise common.UsageError(f"--gradient-accumulation must be >= {STAGES} (the number of stages) for pipelined "
                                f"training, got {o.gradient_accumulation} (as PopTorch requires)")


def main(argv=None):
    """Parses the options, trains, writes the weights, tests, prints the summary and writes the metrics."""
    p = common.parser("mnist_pipeline", "Seed 003: trains the tutorial's CNN with AdamW pipelined over 4 devices on "
                      "real MNIST (or Fashion-MNIST) with Plexus (the Python twin of samples/mnist_pipeline).",
                      dict(batch_size=40, device_iterations=10, test_batch_size=8, epochs=3, learning_rate=0.001,
                           gradient_accumulation=10, seed=0), FEATURES)
    own = p.add_argument_group("mnist_pipeline options")
    own.add_argument("--test-device-iterations", type=int, default=100,
                     help="inference micro-batches per session run (the seed's inference_iterations)")
    own.add_argument("--strategy", default="pipelined", help="execution strategy: pipelined or sharded")
    own.add_argument("--schedule", default="1f1b",
                     help="pipelined schedule: 1f1b (PopART-like steady state) or fill_drain (GPipe)")
    own.add_argument("--offload-optimiser", action="store_true",
                     help="keep the AdamW state in host memory, loaded only for the update")
    own.add_argument("--debug", action="store_true",
                     help="print the compiled sessions (stages, schedules, memory) and run times")
    opts = common.parse_options(p, argv, check_own)

    def body():
        train_data, test_data = common.load_datasets(opts)
        schedule = f" ({opts.schedule})" if opts.strategy == "pipelined" else ""
        print(f"strategy {opts.strategy}{schedule}, 4 stages (B1..B4 on devices 0..3) x {opts.replication_factor} "
              f"replica(s), batch {opts.batch_size}, gradient accumulation {opts.gradient_accumulation}, device "
              f"iterations {opts.device_iterations}, AdamW lr {opts.learning_rate:g}, seed {opts.seed}", flush=True)
        trained = train(opts, train_data)
        common.write_weights(opts.weights_out, trained["weights"])
        accuracy, samples, test_profile = test(opts, test_data, trained["weights"])
        print(f"Accuracy on test set: {100.0 * accuracy:.2f}% ({samples} images; train loss {trained['loss']:.4f}, "
              f"train accuracy {100.0 * trained['accuracy']:.2f}%, {trained['steps']} weight updates, "
              f"{trained['samples_per_second']:.0f} samples/s)", flush=True)
        metrics = common.options_json(opts, FEATURES)
        metrics.update(test_accuracy=accuracy, test_samples=samples, train_loss=trained["loss"],
                       train_accuracy=trained["accuracy"], train_samples_per_second=trained["samples_per_second"],
                       weight_updates=trained["steps"], strategy=opts.strategy, schedule=opts.schedule,
                       offload_optimiser=opts.offload_optimiser, device_memory=trained["memory"],
                       runtime=plexus.runtime_info())
        if opts.profile:
            metrics["profile"] = dict(training=trained["profile"], inference=test_profile)
        common.write_metrics(opts.metrics_out, metrics)

    return common.run_sample("mnist_pipeline", body)


if __name__ == "__main__":
    sys.exit(main())
