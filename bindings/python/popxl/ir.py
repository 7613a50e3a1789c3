"""popxl.Ir: a plexus.Ir with PopXL's num_host_transfers."""
import numbers

import plexus


class Ir(plexus.Ir):
    """An IR (PopXL popxl.Ir(replication=1)). `num_host_transfers` (int >= 1, default 1):
    how many times each run transfers every stream, which Plexus gives by running the main
    graph that many times per run (the Session's device_iterations); so the host arrays of
    a run take a leading [num_host_transfers] dim, as in PopXL. Not thread-safe."""

    def __init__(self, replication=1):
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
