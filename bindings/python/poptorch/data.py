"""poptorch.DataLoader: torch's DataLoader giving PopTorch's combined batches (batch_size x
device iterations x replicas x gradient accumulation samples per call of the model;
PopTorch's "Efficient data batching", seed 003). Modes Sync and Async both load with
`num_workers` worker processes (torch.utils.data's); the batches are handed to the model's
call, which streams them to the devices."""
import enum

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
