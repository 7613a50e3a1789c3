#!/usr/bin/env python3
"""mnist_rts.py: seed 000 (PopXL user guide 17, "Application example: MNIST with
replication and RTS") written with the plexus package, the Python twin of
samples/mnist_rts (main.cpp + samples/common/mnist_app.h, mnist_mlp.h).

  17.1  replication: plexus.Ir(replication=R); each replica takes --batch-size images a
        step, so R=2 --batch-size 4 trains like R=1 --batch-size 8.
  17.2  RTS (--rts, R > 1): W0 is a replica_sharded_variable (listing lines 83-88) used
        through replicated_all_gather; W1 a remote_replica_sharded_variable on an explicit
        remote_buffer (lines 101-113), remote_load-ed, gathered, updated and remote_store-d
        (update_weights_bias, lines 212-224). Each weight is a Trainable namedtuple.

It builds the C++ sample's graph op for op (same variable names and order), draws the
same initial weights (MlpWeights::random: normal(0, 0.02) from std::mt19937_64(seed),
reproduced by cxx_random.py), feeds the same data (plexus.Loader, shuffled by seed +
epoch, through the loader's callbacks) and tests the same way, so --weights-out writes
the same bytes as the C++ sample (both choose the same GEMM kernels for a shape).

Where the seed differs, this follows the C++ sample (see its header): gradients are
mean-reduced over the replicas (replicated_reduce_scatter(mean) for the sharded weights,
where the seed's replica_sharded_slice keeps only the replica's own gradient, and
replicated_all_reduce_(mean) for the others), and W1's remote buffer has one entry.

    samples/python/mnist_rts.py --replication-factor 2 --batch-size 4 --rts
    samples/python/mnist_rts.py --replication-factor 1 --batch-size 8

Run with the plexus package on PYTHONPATH (the build tree's build/python) and
PLEXUS_PLUGIN_PATH at the build's lib/.
"""
import math
import sys
from collections import namedtuple

import numpy as np

import plexus
from plexus import ops

import sample_common as common
from cxx_random import Mt19937_64, normal_float

PIXELS, HIDDEN, CLASSES = 28 * 28, 32, 10
FEATURES = common.EPOCHS | common.TEST_BATCH | common.CHECKPOINTS | common.WEIGHTS_OUT | common.LOADER

# Seed 000 17.2: the var is the (remote) variable tensor, shards its shard after a remote
# load, full the tensor after the all-gather, remote_buffer the buffer holding it if known.
# For a variable that is not RTS, shards, full and remote_buffer are None.
Trainable = namedtuple("Trainable", ["var", "shards", "full", "remote_buffer"])


def random_weights(seed):
    """W0 [784,32], b0 [32], W1 [32,10], b1 [10]: normal(0, 0.02) draws in that order from one
    std::normal_distribution<float> over std::mt19937_64(seed) (MlpWeights::random)."""
    rng = Mt19937_64(seed)
    draws = np.asarray(normal_float(rng, 0.0, 0.02, PIXELS * HIDDEN + HIDDEN + HIDDEN * CLASSES + CLASSES),
                       dtype=np.float32)
    w0, b0, w1, b1 = np.split(draws, np.cumsum([PIXELS * HIDDEN, HIDDEN, HIDDEN * CLASSES]))
    return {"W0": w0.reshape(PIXELS, HIDDEN), "b0": b0, "W1": w1.reshape(HIDDEN, CLASSES), "b1": b1}


def used(t):
    """The tensor the forward pass uses: the gathered full tensor of an RTS weight, else the variable."""
    return t.var if t.full is None else t.full


def mlp_forward(images, batch, w0, b0, w1, b1):
    """Logits [batch, 10] of images [batch, 28, 28] (the PopXL MNIST Net.build: reshape,
    two Linear layers, each followed by gelu)."""
    x = ops.reshape(images, (batch, PIXELS))
    x = ops.gelu(ops.add(ops.matmul(x, w0), b0))
    return ops.gelu(ops.add(ops.matmul(x, w1), b1))


def count_correct(logits, labels):
    """Rows whose argmax is the label, an int32 scalar."""
    return ops.reduce_sum(ops.cast(ops.equal(ops.argmax(logits, -1), labels), plexus.int32))


def create_trainables(ir, opts, data):
    """The four weights as Trainables (seed 000 17.2), biases first as the C++ sample adds them."""
    b0 = plexus.variable(data["b0"], plexus.float32, name="b0")
    b1 = plexus.variable(data["b1"], plexus.float32, name="b1")
    trainable_b0, trainable_b1 = Trainable(b0, None, None, None), Trainable(b1, None, None, None)
    if ir.replication_factor > 1 and opts.rts:
        # Listing lines 83-88: W0 as a replica-sharded variable, gathered for use.
        W0_remote, W0_shards = plexus.replica_sharded_variable(data["W0"], dtype=plexus.float32, name="W0")
        W0 = ops.collectives.replicated_all_gather(W0_shards)
        trainable_w0 = Trainable(W0_remote, W0_shards, W0, None)
        # Lines 101-113: create a remote buffer that matches the shard's shape and dtype
        # (one entry: only entry 0 is used), the remote RTS variable in it, load this
        # replica's shard and gather the shards into the full weight.
        var_shard_shape = (math.ceil(data["W1"].size / ir.replication_factor),)
        buffer = plexus.remote_buffer(var_shard_shape, plexus.float32, entries=1)
        W1_remote = plexus.remote_replica_sharded_variable(data["W1"], buffer, 0, name="W1")
        W1_shards = ops.remote_load(buffer, 0)
        W1 = ops.collectives.replicated_all_gather(W1_shards)
        trainable_w1 = Trainable(W1_remote, W1_shards, W1, buffer)
    else:
        trainable_w0 = Trainable(plexus.variable(data["W0"], plexus.float32, name="W0"), None, None, None)
        trainable_w1 = Trainable(plexus.variable(data["W1"], plexus.float32, name="W1"), None, None, None)
    return {"W0": trainable_w0, "b0": trainable_b0, "W1": trainable_w1, "b1": trainable_b1}


def update_weights_bias(opts, grads, params):
    """Update weights and bias by W += - lr * grads_w, b += - lr * grads_b (seed lines
    212-224), each gradient mean-reduced over the replicas first."""
    for k, v in params.items():
        if v.shards is not None:
            # rts variable: this replica's slice of the mean gradient
            grad = ops.collectives.replicated_reduce_scatter(grads[k], op="mean")
            ops.scaled_add_(v.shards, grad, b=-opts.learning_rate)
            if v.remote_buffer is not None:
                ops.remote_store(v.remote_buffer, 0, v.shards)
        else:
            # not rts variable
            grad = grads[k]
            if opts.replication_factor > 1:
                grad = ops.collectives.replicated_all_reduce_(grad, op="mean")
            ops.scaled_add_(v.var, grad, b=-opts.learning_rate)


def build_train_ir(opts):
    """The training IR: weights, images/labels streams, forward pass, loss, the correct
    count and loss streamed out, autodiff with respect to the full weights, and the SGD
    update in sequence. Returns (ir, streams, params)."""
    ir = plexus.Ir(replication=opts.replication_factor)
    with ir.main_graph:
        params = create_trainables(ir, opts, random_weights(opts.seed))
        img_stream = plexus.h2d_stream((opts.batch_size, 28, 28), plexus.float32, name="images")
        label_stream = plexus.h2d_stream((opts.batch_size,), plexus.int32, name="labels")
        x, labels = ops.host_load(img_stream, "x"), ops.host_load(label_stream, "labels")
        logits = mlp_forward(x, opts.batch_size, *(used(params[k]) for k in ("W0", "b0", "W1", "b1")))
        loss = ops.softmax_cross_entropy(logits, labels)
        correct_stream = plexus.d2h_stream(count_correct(logits, labels), name="correct")
        loss_stream = plexus.d2h_stream(loss, name="loss")
        # Gradients of the full tensors (for RTS weights: of the gathered W0 and W1).
        grads = dict(zip(params, plexus.autodiff(loss, [used(t) for t in params.values()])))
        with plexus.in_sequence():  # the update of W1's shard, then its remote_store
            update_weights_bias(opts, grads, params)
    return ir, (img_stream, label_stream, loss_stream, correct_stream), params


def build_test_ir(opts, weights):
    """The test IR (PopXL's build_test_ir): the trained weights as plain variables, the
    forward pass on --test-batch-size images per replica, the correct count streamed out."""
    ir = plexus.Ir(replication=opts.replication_factor)
    with ir.main_graph:
        w = [plexus.variable(weights[k], plexus.float32, name=k) for k in ("W0", "b0", "W1", "b1")]
        img_stream = plexus.h2d_stream((opts.test_batch_size, 28, 28), plexus.float32, name="images")
        label_stream = plexus.h2d_stream((opts.test_batch_size,), plexus.int32, name="labels")
        logits = mlp_forward(ops.host_load(img_stream), opts.test_batch_size, *w)
        correct_stream = plexus.d2h_stream(count_correct(logits, ops.host_load(label_stream)), name="correct")
    return ir, (img_stream, label_stream, correct_stream)


def memory_report(session, params):
    """Prints and returns the per-replica bytes of W0 and W1 and of each device (RTS is about memory)."""
    report = {}
    print("per-replica memory (bytes):")
    for name in ("W0", "W1"):
        st = session.variable_storage(params[name].var)
        print(f"  {name}: device {st['device_bytes']}, remote buffer {st['remote_bytes']}, "
              f"sharded over {st['shard_over']} replica(s)")
        report[name] = {k: st[k] for k in ("device_bytes", "remote_bytes", "shard_over")}
    report["replicas"] = []
    for d in range(session.num_devices):
        m = session.memory_stats(d)
        print(f"  replica {d}: device arena {m['arena_bytes']} (variables {m['variable_bytes']}, planned peak "
              f"{m['planned_peak_bytes']}), remote buffers {m['remote_buffer_bytes']}")
        report["replicas"].append({k: m[k] for k in ("arena_bytes", "variable_bytes", "planned_peak_bytes",
                                                     "remote_buffer_bytes")})
    return report


def train(opts, train_data):
    """Trains for --epochs (or --num-steps) on the shuffled training set; returns the trained
    weights (read back whole) and the figures mnist_app.h's train() reports."""
    ir, (img_stream, label_stream, loss_stream, correct_stream), params = build_train_ir(opts)
    sharded = opts.rts and opts.replication_factor > 1
    result = {}
    with plexus.Session(ir, device_iterations=opts.device_iterations, prefetch_depth=opts.prefetch_depth,
                        profile=int(opts.profile)) as session:
        rts_state = "on" if sharded else ("off (needs a replication factor > 1)" if opts.rts else "off")
        print(f"train session: {opts.replication_factor} replica(s), RTS {rts_state}, GEMM kernels:")
        for line in session.report()["kernels"]:
            print(f"  {line}")
        result["memory"] = memory_report(session, params)

        loader = plexus.Loader(train_data, batch_size=opts.batch_size, replicas=opts.replication_factor,
                               steps_per_run=opts.device_iterations, seed=opts.seed, workers=opts.loader_workers)
        result.update(common.train_epochs(
            opts, session, loader, (img_stream, label_stream, loss_stream, correct_stream),
            lambda loss, accuracy: f"loss {loss:.4f} acc {100.0 * accuracy:.2f}%"))
        # Every replica holds the trained weights (one group); sharded ones read back whole.
        result["weights"] = {k: session.get_tensor_data(params[k].var) for k in ("W0", "b0", "W1", "b1")}
        result["peak_device_bytes"] = session.memory_stats(0)["peak_bytes"]
        if opts.profile and result["steps"] > 0:
            result["profile"] = common.write_profile(opts, session, "training")[1]
    return result


def test(opts, test_data, weights):
    """Test accuracy with a separate inference session holding the trained weights, over the
    test set in order, --test-batch-size images per replica and run (drop_last)."""
    ir, (img_stream, label_stream, correct_stream) = build_test_ir(opts, weights)
    loader = plexus.Loader(test_data, batch_size=opts.test_batch_size, replicas=opts.replication_factor,
                           shuffle=False, workers=opts.loader_workers)
    per_run = opts.test_batch_size * opts.replication_factor
    batches = loader.runs_per_epoch
    correct = 0
    with plexus.Session(ir) as session:
        bar = common.Progress("test", batches)
        for i in range(batches):
            loader.begin_run(0, i)
            out = session.run(callbacks=loader.callbacks(img_stream, label_stream))
            correct += int(out[correct_stream].sum())
            bar.update(i + 1, f"acc {100.0 * correct / ((i + 1) * per_run):.2f}%")
    samples = batches * per_run
    return (correct / samples if samples else 0.0), samples


def main(argv=None):
    """Parses the options, trains, writes the weights, tests, prints the summary and writes the metrics."""
    p = common.parser("mnist_rts", "Seed 000: the PopXL MNIST MLP with replication and replicated tensor sharding "
                      "(the Python twin of samples/mnist_rts).",
                      dict(batch_size=8, test_batch_size=80, epochs=1, learning_rate=0.005, device_iterations=1,
                           seed=42), FEATURES)
    p.add_argument_group("mnist_rts options").add_argument(
        "--rts", action="store_true", help="shard W0 and W1 across the replicas (needs --replication-factor > 1)")
    opts = common.parse_options(p, argv)

    def body():
        train_data, test_data = common.load_datasets(opts)
        trained = train(opts, train_data)
        weights = trained["weights"]
        common.write_weights(opts.weights_out, [weights[k] for k in ("W0", "b0", "W1", "b1")])
        accuracy, samples = test(opts, test_data, weights)
        print(f"test accuracy: {100.0 * accuracy:.2f}% on {samples} images (replication factor "
              f"{opts.replication_factor}, batch {opts.batch_size} per replica; train loss {trained['loss']:.4f}, "
              f"train accuracy {100.0 * trained['accuracy']:.2f}%, {trained['steps']} steps, "
              f"{trained['samples_per_second']:.0f} samples/s)", flush=True)
        metrics = common.options_json(opts, FEATURES)
        metrics.update(test_accuracy=accuracy, test_samples=samples,
                       train_samples_per_second=trained["samples_per_second"], train_loss=trained["loss"],
                       train_accuracy=trained["accuracy"], train_steps=trained["steps"],
                       peak_device_bytes=trained["peak_device_bytes"], runtime=plexus.runtime_info(),
                       rts=bool(opts.rts and opts.replication_factor > 1), memory=trained["memory"])
        if opts.profile:
            metrics["profile"] = dict(training=trained.get("profile"))
        common.write_metrics(opts.metrics_out, metrics)

    return common.run_sample("mnist_rts", body)


if __name__ == "__main__":
    sys.exit(main())
