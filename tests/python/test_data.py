"""plexus.Dataset and plexus.Loader over data/mnist (seed 003's DataLoader; seed 002's
sharding): sizes, host shapes, normalisation, order, and the loader's callbacks feeding a
session exactly as its arrays do."""
import gc
import os

import numpy as np
import pytest

import plexus
from plexus import ops

MNIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "mnist")
MEAN, STD = 0.1307, 0.3081

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(MNIST, "t10k-images-idx3-ubyte")),
                                reason="no MNIST IDX files in data/mnist")


@pytest.fixture(scope="module")
def test_set():
    return plexus.Dataset.mnist(MNIST, train=False)


def _normalised(images):
    return (images.astype(np.float32) / 255 - MEAN) / STD


def test_the_mnist_test_split(test_set):
    assert (test_set.num_samples, len(test_set)) == (10000, 10000)
    assert (test_set.image_dtype, test_set.image_shape) == (plexus.uint8, (28, 28))
    images, labels = test_set.images, test_set.labels
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,) and labels.dtype == np.uint8
    assert not images.flags.writeable and not labels.flags.writeable
    assert sorted(np.unique(labels)) == list(range(10))
    assert list(labels[:10]) == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]        # the t10k file's first labels
    assert images.max() == 255 and images.min() == 0


def test_views_keep_their_dataset_alive(test_set):
    images = plexus.Dataset.mnist(MNIST, train=False).images     # the Dataset itself is dropped at once
    labels = plexus.Dataset.mnist(MNIST, train=False).labels
    gc.collect()
    np.testing.assert_array_equal(images[:100], test_set.images[:100])
    np.testing.assert_array_equal(labels, test_set.labels)
    with pytest.raises(ValueError):
        images[0, 0, 0] = 1


def test_missing_and_damaged_files(tmp_path):
    with pytest.raises(plexus.IoError, match="nowhere"):
        plexus.Dataset(tmp_path / "nowhere-images", tmp_path / "nowhere-labels")
    bad = tmp_path / "bad-images"
    bad.write_bytes(b"\x00\x00\x08\x03" + b"\x00" * 7)
    labels = os.path.join(MNIST, "t10k-labels-idx1-ubyte")
    with pytest.raises(plexus.BadFormat, match="bad-images"):
        plexus.Dataset(bad, labels)


@pytest.mark.parametrize("steps,replicas", [(1, 1), (1, 2), (3, 1), (2, 4)])
def test_runs_per_epoch_host_shapes_and_normalisation(test_set, steps, replicas):
    batch = 25
    loader = plexus.Loader(test_set, batch_size=batch, replicas=replicas, steps_per_run=steps, shuffle=False)
    per_run = batch * replicas * steps
    assert loader.runs_per_epoch == len(loader) == 10000 // per_run
    lead = tuple(d for d in (steps, replicas) if d != 1)
    runs = iter(loader)
    for n in range(2):
        images, labels = next(runs)
        assert images.shape == lead + (batch, 28, 28) and images.dtype == np.float32
        assert labels.shape == lead + (batch,) and labels.dtype == np.int32
        # Unshuffled: run n holds samples [n P, (n + 1) P) in [steps, replicas, batch] order.
        window = slice(n * per_run, (n + 1) * per_run)
        np.testing.assert_allclose(images.reshape(-1, 28, 28), _normalised(test_set.images[window]), atol=1e-5)
        np.testing.assert_array_equal(labels.reshape(-1), test_set.labels[window])


def test_drop_last_and_the_epoch_count(test_set):
    loader = plexus.Loader(test_set, batch_size=300, replicas=1, steps_per_run=1, shuffle=False, drop_last=False)
    assert loader.runs_per_epoch == 34                                   # ceil(10000 / 300)
    last_images, last_labels = loader.run_arrays(0, 33)
    positions = np.arange(33 * 300, 34 * 300) % 10000                    # completed from the epoch's start
    np.testing.assert_array_equal(last_labels, test_set.labels[positions])
    dropping = plexus.Loader(test_set, batch_size=300, shuffle=False)
    assert dropping.runs_per_epoch == 33
    with pytest.raises(plexus.InvalidArgument):
        dropping.begin_run(0, 33)
    with pytest.raises(plexus.InvalidArgument, match="batch_size"):
        plexus.Loader(test_set, batch_size=0)


def test_shuffling_is_a_seeded_permutation_per_epoch(test_set):
    def epoch_labels(seed, epoch):
        loader = plexus.Loader(test_set, batch_size=1000, seed=seed, workers=1)
        return np.concatenate([loader.run_arrays(epoch, n)[1] for n in range(loader.runs_per_epoch)])

    e0, e1, again = epoch_labels(5, 0), epoch_labels(5, 1), epoch_labels(5, 0)
    np.testing.assert_array_equal(e0, again)                          # same seed and epoch: same order
    assert not np.array_equal(e0, e1)                                 # a new order each epoch
    assert not np.array_equal(e0, test_set.labels)
    np.testing.assert_array_equal(np.bincount(e0, minlength=10), np.bincount(test_set.labels, minlength=10))
    # Iterating goes through the epochs in turn.
    loader = plexus.Loader(test_set, batch_size=1000, seed=5, workers=1)
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in loader]), e0)
    np.testing.assert_array_equal(np.concatenate([lab for _, lab in loader]), e1)


def test_worker_shards_together_see_what_one_process_sees(test_set):
    whole = plexus.Loader(test_set, batch_size=10, replicas=4, shuffle=True, seed=1, workers=1)
    shards = [plexus.Loader(test_set, batch_size=10, replicas=2, num_shards=2, shard_index=k, seed=1, workers=1)
              for k in range(2)]
    images, labels = whole.run_arrays(0, 3)
    parts = [s.run_arrays(0, 3) for s in shards]
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), labels)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), images)


def _classifier(replicas):
    ir = plexus.Ir(replication=replicas)
    with ir.main_graph:
        images = plexus.h2d_stream((16, 28, 28), plexus.float32, name="images")
        labels = plexus.h2d_stream((16,), plexus.int32, name="labels")
        w = plexus.variable(np.random.default_rng(0).standard_normal((784, 10)).astype(np.float32) * 0.01, name="w")
        logits = ops.matmul(ops.reshape(ops.host_load(images), (16, 784)), w)
        loss = ops.softmax_cross_entropy(logits, ops.host_load(labels))
        loss_d2h = plexus.d2h_stream(loss, name="loss")
        grad, = plexus.autodiff(loss, [w])
        ops.scaled_add_(w, ops.collectives.replicated_all_reduce(grad, op="mean"), b=-0.1)
    return ir, images, labels, w, loss_d2h


def test_the_loaders_callbacks_feed_a_session_as_its_arrays_do(test_set):
    R, steps = 2, 3
    ir, images, labels, w, loss_d2h = _classifier(R)
    loader = plexus.Loader(test_set, batch_size=16, replicas=R, steps_per_run=steps, seed=11)
    arrays = [loader.run_arrays(0, n) for n in range(4)]
    with plexus.Session(ir, device_iterations=steps) as by_arrays, \
            plexus.Session(ir, device_iterations=steps) as by_callbacks:
        assert by_arrays.host_shape(images) == arrays[0][0].shape
        assert by_arrays.host_shape(labels) == arrays[0][1].shape
        losses_a, losses_c = [], []
        for n in range(4):
            losses_a.append(by_arrays.run({images: arrays[n][0], labels: arrays[n][1]})[loss_d2h])
            loader.begin_run(0, n)
            losses_c.append(by_callbacks.run(callbacks=loader.callbacks(images, labels))[loss_d2h])
        np.testing.assert_array_equal(np.array(losses_c), np.array(losses_a))
        np.testing.assert_array_equal(by_callbacks.get_tensor_data(w), by_arrays.get_tensor_data(w))
        assert losses_a[-1].mean() < losses_a[0].mean()                 # it learns
        # Asynchronously too: the next run's callbacks while the loader prepares ahead.
        loader.begin_run(1, 0)
        run = by_callbacks.run_async(callbacks=loader.callbacks(images, labels))
        async_loss = run.wait(timeout=60)[loss_d2h]
        np.testing.assert_array_equal(async_loss, by_arrays.run(dict(zip((images, labels),
                                                                        loader.run_arrays(1, 0))))[loss_d2h])
