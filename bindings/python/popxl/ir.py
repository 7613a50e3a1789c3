"""popxl.Ir: a plexus.Ir with PopXL's num_host_transfers and replication="popdist"."""
import numbers
import os

import plexus
from plexus._lib import ffi, lib, check


def workers_from_environment():
    """(num_workers, worker_index) of this process as its launcher tells it (mpirun,
    PLEXUS_CLUSTER, TF_CONFIG: plx_workers_read_environment); (1, 0) without one."""
    n, i = ffi.new("int64_t*"), ffi.new("int64_t*")
    check(lib.plx_workers_read_environment(n, i))
    return n[0], i[0]


def popdist_replication_factor(num_workers):
    """The replication factor of a "popdist" Ir: poprun's POPDIST_NUM_TOTAL_REPLICAS when set,
    else num_workers x POPDIST_NUM_LOCAL_REPLICAS (default 1: one replica per process).
    Raises ValueError for a value that is not a positive int."""
    def read(name, default):
        text = os.environ.get(name, str(default))
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"Ir(replication='popdist'): {name}={text!r} is not a positive int")
        return int(text)
    if "POPDIST_NUM_TOTAL_REPLICAS" in os.environ:
        return read("POPDIST_NUM_TOTAL_REPLICAS", 1)
    return num_workers * read("POPDIST_NUM_LOCAL_REPLICAS", 1)


class Ir(plexus.Ir):
    """An IR (PopXL popxl.Ir(replication=1)). replication="popdist" spreads the replicas
    over the processes of the job (mpirun, or PLEXUS_CLUSTER / TF_CONFIG for workers
    started by hand; `workers` is then (num_workers, worker_index)), with the replication
    factor of popdist_replication_factor. `num_host_transfers` (int >= 1, default 1):
    how many times each run transfers every stream, which Plexus gives by running the main
    graph that many times per run (the Session's device_iterations); so the host arrays of
    a run take a leading [num_host_transfers] dim, as in PopXL. Not thread-safe."""

    def __init__(self, replication=1):
        self.workers = None  # (num_workers, worker_index) with replication="popdist"
        if replication == "popdist":
            self.workers = workers_from_environment()
            replication = popdist_replication_factor(self.workers[0])
        elif isinstance(replication, str):
            raise ValueError(f"Ir: replication must be an int or 'popdist', got {replication!r}")
        super().__init__(replication)
        self._num_host_transfers = 1
        self.stored_d2h_streams = []  # popxl DeviceToHostStreams, in host_store order

    @property
    def num_host_transfers(self):
        """Transfers of every stream per run (PopXL Ir.num_host_transfers)."""
        return self._num_host_transfers

    @num_host_transfers.setter
    def num_host_transfers(self, value):
        """Raises ValueError unless `value` is an int >= 1."""
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"num_host_transfers must be an int >= 1, got {value!r}")
        self._num_host_transfers = int(value)
