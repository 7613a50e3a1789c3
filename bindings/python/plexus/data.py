"""IDX datasets (MNIST, Fashion-MNIST), text corpora (the Debian package `fortunes`) and
the data loader (seed 003's poptorch.DataLoader in async mode; seed 002's Dataset.shard for
workers), over plx_dataset, plx_text and plx_loader.

A Loader feeds a session in two ways: as fill callbacks on the io threads
(`session.run(callbacks=loader.callbacks(images, labels))` after `loader.begin_run(e, r)`),
or as a Python iterable of (images, labels) host arrays, one pair per run."""
import os

import numpy as np

from plexus import dtypes
from plexus.callbacks import NativeCallback
from plexus._lib import ffi, lib, check


def _idx_path(folder, name):
    raw = os.path.join(folder, name)
    return raw + ".gz" if not os.path.exists(raw) and os.path.exists(raw + ".gz") else raw


class Dataset:
    """Images and labels from a pair of IDX files (raw or gzipped), in host memory.
    `num_samples`, `image_dtype`, `image_shape`; `images` and `labels` are read-only numpy
    views of the data (valid while the Dataset lives). Raises IoError, BadFormat."""

    def __init__(self, images_path, labels_path):
        out = ffi.new("plx_dataset**")
        check(lib.plx_dataset_load_idx(str(images_path).encode(), str(labels_path).encode(), out))
        self._ptr = ffi.gc(out[0], lib.plx_dataset_destroy)
        n, dtype = ffi.new("int64_t*"), ffi.new("plx_dtype*")
        dims, rank = ffi.new("int64_t[]", lib.PLX_MAX_RANK), ffi.new("size_t*")
        check(lib.plx_dataset_get_info(self._ptr, n, dtype, dims, lib.PLX_MAX_RANK, rank))
        self.num_samples, self.image_dtype = n[0], dtypes.from_code(dtype[0])
        self.image_shape = tuple(dims[i] for i in range(rank[0]))

    @classmethod
    def mnist(cls, folder, train=True):
        """The train or test split of MNIST-format files in `folder` (train-images-idx3-ubyte,
        t10k-..., optionally .gz)."""
        split = "train" if train else "t10k"
        return cls(_idx_path(folder, f"{split}-images-idx3-ubyte"), _idx_path(folder, f"{split}-labels-idx1-ubyte"))

    def _views(self):
        images, labels, label_dtype = ffi.new("void**"), ffi.new("void**"), ffi.new("plx_dtype*")
        check(lib.plx_dataset_get_data(self._ptr, images, labels, label_dtype))
        shape = (self.num_samples,) + self.image_shape
        count = int(np.prod(shape))
        img = np.frombuffer(self._buffer(images[0], count * self.image_dtype.itemsize), self.image_dtype.numpy)
        ldt = dtypes.from_code(label_dtype[0])
        lab = np.frombuffer(self._buffer(labels[0], self.num_samples * ldt.itemsize), ldt.numpy)
        return img.reshape(shape), lab

    def _buffer(self, pointer, nbytes):
        """A read-only buffer over the dataset's memory that keeps the Dataset alive (the
        buffer holds the cdata, whose gc callback holds self): a view outliving every other
        reference to the Dataset must not point to freed memory."""
        owner = ffi.gc(ffi.cast("char*", pointer), lambda _, dataset=self: None)
        return memoryview(ffi.buffer(owner, nbytes)).toreadonly()

    @property
    def images(self):
        """[num_samples] + image_shape, image_dtype (uint8 for MNIST); read-only."""
        return self._views()[0]

    @property
    def labels(self):
        """[num_samples] labels; read-only."""
        return self._views()[1]

    def __len__(self):
        return self.num_samples


FORTUNES_DIR = ffi.string(lib.PLX_FORTUNES_DIR).decode()
"""Where the Debian package `fortunes` installs its corpus (plexus.h PLX_FORTUNES_DIR)."""

_SPLITS = {"train": lib.PLX_TEXT_TRAIN, "validation": lib.PLX_TEXT_VALIDATION}


class Text:
    """A text corpus in host memory, split into training and validation bytes (plx_text):
    `path` is a file or a directory of strfile-format files (documents between lines
    holding only "%"); document k goes to validation when k % validation_every ==
    validation_every - 1. `train` and `validation` are the bytes, `documents` the count.
    Raises NotFound (a missing path; for FORTUNES_DIR the message names the package),
    IoError, InvalidArgument (too few documents). Read-only: safe from any thread."""

    def __init__(self, path=FORTUNES_DIR, validation_every=10):
        out = ffi.new("plx_text**")
        check(lib.plx_text_load(str(path).encode(), int(validation_every), out))
        self._ptr = ffi.gc(out[0], lib.plx_text_destroy)
        self.documents = self._split("train")[1]
        self.train = self._split("train")[0]
        self.validation = self._split("validation")[0]

    def _split(self, split):
        data, size, documents = ffi.new("char**"), ffi.new("size_t*"), ffi.new("int64_t*")
        check(lib.plx_text_get_split(self._ptr, _split_code(split), data, size, documents))
        return ffi.buffer(data[0], size[0])[:], documents[0]

    def windows(self, split="train", context=64):
        """The windows a Loader serves from `split` ("train" or "validation"): sample i is
        the context + 1 bytes from i * context, its tokens int32 [context] (the images
        stream) and its next-token targets int32 [context] (the labels stream)."""
        return TextWindows(self, split, context)


class TextWindows:
    """Windows of context + 1 bytes of one split of a Text, for Loader (Text.windows)."""

    def __init__(self, text, split, context):
        self.text, self.split, self.context = text, split, int(context)
        _split_code(split)
        self.image_shape, self.image_dtype = (self.context,), np.int32

    def _create(self, options, out):
        return lib.plx_loader_create_text(self.text._ptr, _split_code(self.split), self.context, options, out)


def _split_code(split):
    if split not in _SPLITS:
        raise ValueError(f"split is {split!r}, must be 'train' or 'validation'")
    return _SPLITS[split]


class Loader:
    """Micro-batches of a Dataset (images float32 normalised by (x / 255 - mean) / std,
    labels int32) or of TextWindows (tokens and targets int32 [context]) for every replica
    and step of a run, prepared ahead on `workers` threads (seed 003's DataLoader; plexus.h
    plx_loader_options gives every option).

    batch_size: samples per micro-batch per replica; replicas: R (the session's hosted
    replicas); steps_per_run: device_iterations x gradient_accumulation; shuffle, seed: a
    new order each epoch; drop_last; num_shards / shard_index: seed 002's worker sharding.
    Iterating yields one (images, labels) pair per run of the current epoch, shaped as a
    session's host arrays ([steps_per_run, replicas, batch, 28, 28] and [steps_per_run,
    replicas, batch], leading 1s of the first two dims dropped); each `for` loop is the next
    epoch. Not thread-safe: use one Loader from one thread."""

    def __init__(self, dataset, batch_size=1, replicas=1, steps_per_run=1, shuffle=True, seed=0, mean=0.1307,
                 std=0.3081, drop_last=True, workers=2, num_shards=1, shard_index=0):
        o = ffi.new("plx_loader_options*")
        lib.plx_loader_options_init(o)
        o.batch_size, o.replicas, o.steps_per_run = int(batch_size), int(replicas), int(steps_per_run)
        o.shuffle, o.seed, o.mean, o.std = int(bool(shuffle)), int(seed), float(mean), float(std)
        o.drop_last, o.workers, o.num_shards, o.shard_index = int(bool(drop_last)), int(workers), int(num_shards), \
            int(shard_index)
        out = ffi.new("plx_loader**")
        windows = isinstance(dataset, TextWindows)
        check(dataset._create(o, out) if windows else lib.plx_loader_create(dataset._ptr, o, out))
        self.dataset = dataset
        self._input_dtype = np.int32 if windows else np.float32
        self._label_shape = dataset.image_shape if windows else ()  # targets: one per token
        # The C dataset or text must outlive the C loader, whose worker threads read it
        # (plexus.h): the destructor holds its cdata, so however the Loader's attributes
        # are released, the loader is destroyed first.
        owner = dataset.text._ptr if windows else dataset._ptr
        self._ptr = ffi.gc(out[0], lambda ptr, _owner=owner: lib.plx_loader_destroy(ptr))
        self.batch_size, self.replicas, self.steps_per_run = int(batch_size), int(replicas), int(steps_per_run)
        self.epoch = 0

    @property
    def runs_per_epoch(self):
        """Runs in one epoch: floor (drop_last) or ceil of samples / samples per run."""
        out = ffi.new("int64_t*")
        check(lib.plx_loader_get_runs_per_epoch(self._ptr, out))
        return out[0]

    def __len__(self):
        return self.runs_per_epoch

    def begin_run(self, epoch, run):
        """Positions the loader at run `run` of epoch `epoch` (before session.run)."""
        check(lib.plx_loader_begin_run(self._ptr, int(epoch), int(run)))

    def callbacks(self, images, labels):
        """{images stream: fill, labels stream: fill}: the loader's C fill functions, for
        Session.run(callbacks=...). They run on the session's io threads."""
        c = ffi.new("plx_stream_callback[2]")
        check(lib.plx_loader_get_callbacks(self._ptr, images.id, labels.id, c))
        return {images: NativeCallback(c[0], (self, c)), labels: NativeCallback(c[1], (self, c))}

    def _host_shape(self, sample_shape):
        lead = [d for d in (self.steps_per_run, self.replicas) if d != 1]
        return tuple(lead) + (self.batch_size,) + tuple(sample_shape)

    def run_arrays(self, epoch, run):
        """The (images, labels) host arrays of run `run` of epoch `epoch`."""
        self.begin_run(epoch, run)
        c = ffi.new("plx_stream_callback[2]")
        check(lib.plx_loader_get_callbacks(self._ptr, 0, 0, c))
        images = np.empty(self._host_shape(self.dataset.image_shape), self._input_dtype)
        labels = np.empty(self._host_shape(self._label_shape), np.int32)
        for c_cb, array in ((c[0], images), (c[1], labels)):
            per = array.reshape(self.steps_per_run, self.replicas, -1)
            for step in range(self.steps_per_run):
                for replica in range(self.replicas):
                    chunk = per[step, replica]
                    check(c_cb.fill(c_cb.user_data, c_cb.stream, step, replica, ffi.from_buffer(chunk), chunk.nbytes))
        return images, labels

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        for run in range(self.runs_per_epoch):
            yield self.run_arrays(epoch, run)
