"""poptorch.DataLoader: torch's DataLoader giving PopTorch's combined batches (batch_size x
device iterations x replicas x gradient accumulation samples per call of the model;
PopTorch's "Efficient data batching", seed 003). Modes Sync and Async both load with
`num_workers` worker processes (torch.utils.data's); the batches are handed to the model's
call, which streams them to the devices."""
import enum
import queue
import threading

import torch

from poptorch.options import Options


class DataLoaderMode(enum.IntEnum):
    """How batches are prepared (PopTorch poptorch.DataLoaderMode)."""
    Sync = 0
    Async = 1
    AsyncRebatched = 2


class DataLoader(torch.utils.data.DataLoader):
    """PopTorch's DataLoader(options, dataset, batch_size=1, shuffle=False, num_workers=0,
    drop_last=True, persistent_workers=None, auto_distributed_partitioning=True,
    mode=DataLoaderMode.Sync, async_options=None, rebatched_worker_size=None, **kwargs):
    yields combined batches of `combinedBatchSize` = batch_size x options' device
    iterations x replication factor x gradient accumulation. Raises TypeError for options
    that are not poptorch.Options, ValueError for batch_size < 1."""

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
        persistent = bool(persistent_workers) if persistent_workers is not None else num_workers > 0
        super().__init__(dataset, batch_size=self.combinedBatchSize, shuffle=shuffle, num_workers=num_workers,
                         drop_last=drop_last, persistent_workers=persistent, **kwargs)


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
        batches = queue.Queue(self.buffer_size)
        done = object()

        def load():
            try:
                for batch in self.dataset:
                    if not _put(batches, batch, self._stop):
                        return
                _put(batches, done, self._stop)
            except Exception as error:  # handed to the consumer, raised there
                _put(batches, _Failure(error), self._stop)

        thread = threading.Thread(target=load, name="poptorch-accessor", daemon=True)
        thread.start()
        while (item := _get(batches, self._stop)) is not done and item is not None:
            if isinstance(item, _Failure):
                raise item.error
            yield item

    def terminate(self):
        """Stops loading: an iteration in progress ends after the batches already loaded."""
        self._stop.set()

    def __del__(self):
        self.terminate()


class _Failure:
    def __init__(self, error):
        self.error = error


def _get(batches, stop):
    """The next item, waiting while loading goes on; None once `stop` is set and none is left."""
    while True:
        try:
            return batches.get(timeout=0.1)
        except queue.Empty:
            if stop.is_set():
                return None


def _put(batches, item, stop):
    """Puts `item`, waiting for room unless `stop` is set; False when stopped."""
    while not stop.is_set():
        try:
            batches.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False
