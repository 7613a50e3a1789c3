"""poptorch.DataLoader: torch's DataLoader giving PopTorch's combined batches (batch_size x
device iterations x replicas x gradient accumulation samples per call of the model;
PopTorch's "Efficient data batching", seed 003). Sync is torch's DataLoader (its
`num_workers` worker processes). Async and AsyncRebatched load the samples in worker
processes (at least one) and take the combined batches, contiguous, ahead of the model on
a thread (prefetch.py), so that loading batch i + 1 overlaps run i and the model's call
hands each batch to the run's streams in place; AsyncRebatched's workers load batches of
`rebatched_worker_size` samples, concatenated into combined batches. The batches, their
order and so the training are Sync's for the same sampler (a seeded generator).

Worker processes are at most the cores this process may use (PLEXUS_LOADER_MAX_WORKERS
overrides): a sample's transforms are CPU work, so more workers than cores only compete
with each other and with the model for the same cores."""
import enum
import os
import sys
import threading

import torch

from poptorch import prefetch
from poptorch.options import Options


class DataLoaderMode(enum.IntEnum):
    """How batches are prepared (PopTorch poptorch.DataLoaderMode)."""
    Sync = 0
    Async = 1
    AsyncRebatched = 2


_told_workers = set()


def _worker_processes(asked):
    """The worker processes to start for `asked`: at most the cores this process may use
    (os.sched_getaffinity), or PLEXUS_LOADER_MAX_WORKERS of them when set (0: no limit).
    Fewer workers give the same batches in the same order (torch's DataLoader returns them
    in order); a transform that draws random numbers draws them in other workers, as with
    any change of num_workers. Says once on stderr when it starts fewer than asked."""
    limit = os.environ.get("PLEXUS_LOADER_MAX_WORKERS")
    if limit is None:
        limit, why = len(os.sched_getaffinity(0)), "cores this process may use"
    else:
        if not limit.isdigit():
            raise ValueError(f"poptorch.DataLoader: PLEXUS_LOADER_MAX_WORKERS must be an integer >= 0 "
                             f"(0: no limit), got {limit!r}")
        limit, why = int(limit) or asked, "PLEXUS_LOADER_MAX_WORKERS"
    used = min(asked, limit)
    if used < asked and (asked, used) not in _told_workers:
        _told_workers.add((asked, used))
        print(f"poptorch.DataLoader: {used} worker processes for the {asked} asked ({why}: {limit}; "
              "PLEXUS_LOADER_MAX_WORKERS=0 starts them all)", file=sys.stderr)
    return used


class DataLoader(torch.utils.data.DataLoader):
    """PopTorch's DataLoader(options, dataset, batch_size=1, shuffle=False, num_workers=0,
    drop_last=True, persistent_workers=None, auto_distributed_partitioning=True,
    mode=DataLoaderMode.Sync, async_options=None, rebatched_worker_size=None, **kwargs):
    yields combined batches of `combinedBatchSize` = batch_size x options' device
    iterations x replication factor x gradient accumulation. Worker processes: num_workers
    (Async modes: at least 1), at most the cores this process may use (_worker_processes).
    Async modes: worker processes belonging to each iteration (persistent_workers default False
    there), `async_options["buffer_size"]` (3) combined batches loaded ahead;
    AsyncRebatched: workers' batches of rebatched_worker_size (default the combined batch
    size) samples. Raises TypeError for options that are not poptorch.Options, ValueError
    for batch_size < 1, a buffer_size < 1 or a rebatched_worker_size outside [1, combined
    batch size], and for a PLEXUS_LOADER_MAX_WORKERS that is not an integer >= 0."""

    def __init__(self, options, dataset, batch_size=1, shuffle=False, num_workers=0, drop_last=True,
                 persistent_workers=None, auto_distributed_partitioning=True, mode=DataLoaderMode.Sync,
                 async_options=None, rebatched_worker_size=None, **kwargs):
        if not isinstance(options, Options):
            raise TypeError(f"poptorch.DataLoader: options must be poptorch.Options, got {type(options).__name__}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"poptorch.DataLoader: batch_size must be an integer >= 1, got {batch_size!r}")
        self.options, self.mode, self.batch_size_per_micro_batch = options, DataLoaderMode(mode), batch_size
        self.combinedBatchSize = (batch_size * options.device_iterations * options.replication_factor
                                  * options.gradient_accumulation)
        sync = self.mode == DataLoaderMode.Sync
        self._buffer_size = _buffer_size(async_options)
        self._worker_batch = self.combinedBatchSize
        if self.mode == DataLoaderMode.AsyncRebatched:
            self._worker_batch = _rebatched_size(rebatched_worker_size, self.combinedBatchSize)
        workers = _worker_processes(num_workers if sync else max(num_workers, 1))
        persistent = bool(persistent_workers) if persistent_workers is not None else sync and num_workers > 0
        rebatched = self._worker_batch != self.combinedBatchSize
        super().__init__(dataset, batch_size=self._worker_batch, shuffle=shuffle, num_workers=workers,
                         drop_last=drop_last and not rebatched, persistent_workers=persistent, **kwargs)
        self._drop_last = drop_last

    def __len__(self):
        if self._worker_batch == self.combinedBatchSize:
            return super().__len__()
        samples = len(self.sampler)
        return samples // self.combinedBatchSize + (0 if self._drop_last or samples % self.combinedBatchSize == 0
                                                   else 1)

    def __iter__(self):
        source = super().__iter__()
        if self.mode == DataLoaderMode.Sync:
            return source
        batches = source
        if self._worker_batch != self.combinedBatchSize:
            batches = _rebatched(source, self.combinedBatchSize, self._drop_last)
        finish = (lambda: None) if self.persistent_workers else getattr(source, "_shutdown_workers", lambda: None)
        return prefetch.Prefetcher(batches, self._buffer_size, "poptorch-dataloader", prepare=prefetch.contiguous,
                                   finish=finish, explain=self._explain)

    def _explain(self, error):
        """The error of a worker, of its type when that takes a message, naming the dataset."""
        message = (f"poptorch.DataLoader ({self.mode.name}): the dataset {type(self.dataset).__name__} raised "
                   f"{type(error).__name__} while loading a batch: {error}")
        try:
            return type(error)(message)
        except Exception:  # an exception type whose constructor takes other arguments
            return RuntimeError(message)


def _buffer_size(async_options):
    size = (async_options or {}).get("buffer_size", 3)
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"poptorch.DataLoader: async_options['buffer_size'] must be an integer >= 1, got {size!r}")
    return size


def _rebatched_size(size, combined):
    if size is None:
        return combined
    if not isinstance(size, int) or not 1 <= size <= combined:
        raise ValueError(f"poptorch.DataLoader: rebatched_worker_size must be an integer in [1, {combined}] "
                         f"(the combined batch size), got {size!r}")
    return size


def _rebatched(batches, combined, drop_last):
    """The samples of `batches` (collated tensors, or tuples, lists and dicts of them) in
    batches of `combined` along dim 0, in order; a last, smaller one unless drop_last."""
    pending, count = [], 0
    for batch in batches:
        pending.append(batch)
        count += _rows(batch)
        while count >= combined:
            whole = _cat(pending)
            yield _slice(whole, 0, combined)
            count -= combined
            pending = [_slice(whole, combined, None)] if count else []
    if pending and not drop_last:
        yield _cat(pending)


def _rows(batch):
    if isinstance(batch, torch.Tensor):
        return batch.shape[0]
    return _rows(next(iter(batch.values())) if isinstance(batch, dict) else batch[0])


def _cat(parts):
    first = parts[0]
    if isinstance(first, torch.Tensor):
        return torch.cat(parts) if len(parts) > 1 else first
    if isinstance(first, dict):
        return {k: _cat([p[k] for p in parts]) for k in first}
    return type(first)(_cat(list(leaves)) for leaves in zip(*parts))


def _slice(batch, start, stop):
    if isinstance(batch, torch.Tensor):
        return batch[start:stop]
    if isinstance(batch, dict):
        return {k: _slice(v, start, stop) for k, v in batch.items()}
    return type(batch)(_slice(b, start, stop) for b in batch)


class AsynchronousDataAccessor:
    """Loads `dataset` (a poptorch.DataLoader or any iterable of batches) ahead of the
    model on a background thread, up to `buffer_size` batches (PopTorch's
    poptorch.AsynchronousDataAccessor). Iterating yields the batches in order, one pass per
    `for` loop; len() is the dataset's. `terminate()` stops the thread (also at garbage
    collection). Raises ValueError for buffer_size < 1; an error of the dataset is raised
    by the iteration that reaches it. PopTorch's other arguments (sharing strategy, worker
    timeout, early preload, rebatching) are accepted."""

    def __init__(self, dataset, buffer_size=3, reading_worker_timeout=None, early_preload=False,
                 sharing_strategy=None, rebatched_size=None):
        self._stop = threading.Event()
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"AsynchronousDataAccessor: buffer_size must be an integer >= 1, got {buffer_size!r}")
        self.dataset, self.buffer_size = dataset, buffer_size

    def __len__(self):
        return len(self.dataset)

    def __iter__(self):
        return prefetch.Prefetcher(self.dataset, self.buffer_size, "poptorch-accessor", stop=self._stop)

    def terminate(self):
        """Stops loading: an iteration in progress ends after the batches already loaded."""
        self._stop.set()

    def __del__(self):
        self.terminate()
