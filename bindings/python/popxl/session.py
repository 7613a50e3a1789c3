"""popxl.Session: PopXL's session (device_desc, attach / detach with `with session:`,
run and run_with_outputs keyed by PopXL's streams) over a plexus.Session."""
import numbers
import os
import sys

import numpy as np

import plexus
from plexus.dtypes import host_array
from plexus import transfers
from plexus.tensor import Variable
from popxl import host_transfers
from popxl.ir import Ir

DEVICE_DESCS = ("ipu_hw", "ipu_model", "cpu")
_told = False


def _tell_once(device_desc):
    global _told
    if not _told:
        _told = True
        print(f"popxl: device_desc '{device_desc}' runs on Plexus's virtual CPU devices", file=sys.stderr)


def _to_numpy(value, downcast):
    """A host input as PopXL converts it: lists, scalars and torch tensors to numpy arrays,
    with PopXL's downcast of 64-bit floats and ints to 32 bits (plexus.dtypes.host_array)
    when `downcast`."""
    array = value.detach().cpu().numpy() if hasattr(value, "detach") else value
    return host_array(array)[0] if downcast else np.asarray(array)


def _worker_options(workers):
    """plexus.Session options of a "popdist" Ir spread over `workers` (num, index): the
    workers, and the collectives plugin between them unless PLEXUS_COLLECTIVES names one:
    gloo for workers started by hand (PLEXUS_CLUSTER, TF_CONFIG), else mpi."""
    if workers is None or workers[0] == 1:
        return {}
    options = dict(num_workers=workers[0], worker_index=workers[1])
    if "PLEXUS_COLLECTIVES" not in os.environ:
        by_hand = "PLEXUS_CLUSTER" in os.environ or "TF_CONFIG" in os.environ
        options["collectives_plugin"] = "gloo" if by_hand else "mpi"
    return options


class Session:
    """Runs a popxl.Ir (PopXL popxl.Session(ir, device_desc="cpu",
    weights_to_host_on_exit=True)). Every device_desc runs on Plexus's virtual devices
    (said once on stderr); replication works with each. Runs and weight transfers need the
    session attached: inside `with session:` (re-entrant, reusable after exit); reading
    and writing variables works at any time, the variables staying resident. Raises
    TypeError for an ir that is not a popxl.Ir, ValueError for another device_desc, and
    the plexus.Session errors at creation. Not
    thread-safe."""

    def __init__(self, ir, device_desc="cpu", weights_to_host_on_exit=True):
        if not isinstance(ir, Ir):
            raise TypeError(f"Session: ir must be a popxl.Ir, got {type(ir).__name__}")
        if not isinstance(device_desc, str) or device_desc not in DEVICE_DESCS:
            raise ValueError(f"Session: device_desc must be one of {', '.join(DEVICE_DESCS)}, got {device_desc!r}")
        _tell_once(device_desc)
        self._ir, self.weights_to_host_on_exit = ir, weights_to_host_on_exit
        self._session = plexus.Session(ir, device_iterations=host_transfers.runs_per_call(ir),
                                       **_worker_options(ir.workers))
        self._attached = 0

    @property
    def ir(self):
        """The Ir this session runs."""
        return self._ir

    @property
    def is_attached(self):
        """Whether a `with session:` is open."""
        return self._attached > 0

    def __enter__(self):
        self._attached += 1
        return self

    def __exit__(self, *exc):
        self._attached -= 1
        return False

    def _assert_attached(self):
        if not self.is_attached:
            raise ValueError("Must be attached to device before calling a runtime function. Put the call inside a "
                             "`Session` context, for example `with session: session.run()`.")

    def memory_report(self):
        """The planned memory of the compiled Ir as a dict (plexus.Session.memory_report;
        schema in docs/profiling.md, sizes in bytes): each device's bytes at every step
        of its schedule by kind, the tensors live at its peak, remote and offloaded bytes,
        the variables' per-replica storage. Works attached or not, before any run."""
        return self._session.memory_report()

    def expected_inputs(self):
        """The Ir's host-to-device streams that host_loads read, which run's inputs must
        cover (a list)."""
        return [s for s in self._ir.h2d_streams if transfers.pieces(self._ir, s)]

    def _run(self, inputs, downcast_inputs):
        """{DeviceToHostStream: array} of one run. Raises ValueError for a missing input."""
        self._assert_attached()
        inputs = dict(inputs or {})
        missing = [s.name for s in self.expected_inputs() if s not in inputs]
        if missing:
            raise ValueError(f"run: no input for the host-to-device streams {missing}")
        arrays = {}
        for stream in self._ir.h2d_streams:
            if not transfers.is_piece(self._ir, stream):
                array = _to_numpy(inputs[stream], downcast_inputs) if stream in inputs else None
                arrays.update(host_transfers.split_input(self._ir, self._session, stream, array))
        results = self._session.run(arrays)
        return {s: host_transfers.join_output(self._ir, s, results) for s in self._ir.stored_d2h_streams}

    def run_with_outputs(self, inputs=None, outputs=None, downcast_inputs=True):
        """One run with `inputs` ({HostToDeviceStream: array-like}), writing each output
        stream's data into `outputs` ({DeviceToHostStream: numpy array of its shape}).
        Raises ValueError when not attached or for an output that is not a stored stream of
        this Ir, and the plexus.Session.run errors (ShapeMismatch naming the stream for an
        input of the wrong shape)."""
        results = self._run(inputs, downcast_inputs)
        for stream, target in (outputs or {}).items():
            if stream not in results:
                raise ValueError(f"run_with_outputs: {stream!r} is not a stored device-to-host stream of this Ir")
            target[...] = results[stream]

    def run(self, inputs=None, downcast_inputs=True):
        """One run (PopXL Session.run): returns {DeviceToHostStream: numpy array} for every
        stream ops.host_store filled, each [num_host_transfers, replicas] + shape with the
        dims of 1 left out. Raises as run_with_outputs."""
        return self._run(inputs, downcast_inputs)

    def weights_to_host(self):
        """PopXL's device-to-host weight copy; the variables are resident on Plexus, so this
        only checks that the session is attached (ValueError otherwise)."""
        self._assert_attached()

    def weights_from_host(self):
        """PopXL's host-to-device weight copy; as weights_to_host."""
        self._assert_attached()

    def get_tensor_data(self, tensor):
        """A variable's or constant's value (plexus.Session.get_tensor_data)."""
        return self._session.get_tensor_data(tensor)

    def get_tensors_data(self, tensors):
        """{tensor: value} for every tensor of `tensors`."""
        return self._session.get_tensors_data(tensors)

    def write_variable_data(self, tensor, data):
        """Writes a variable from `data` with PopXL's rules (write_variables_data)."""
        self.write_variables_data({tensor: data})

    def write_variables_data(self, values):
        """Writes every {Variable: data} of `values` (PopXL Session.write_variables_data): a
        number is converted to the variable's dtype, an array must have it. Raises
        TypeError (not a Variable, another dtype), ValueError (another shape than
        get_tensor_data gives: ShapeMismatch) and NotImplementedError ("all_replicas"
        with groups of more than one replica, which PopXL refuses too)."""
        checked = {}
        for tensor, data in values.items():
            if not isinstance(tensor, Variable):
                raise TypeError(f"Tensor {tensor!r} is not of type Variable. write_variable_data is not supported "
                                "for this type.")
            if isinstance(data, numbers.Number):
                data = np.array(data).astype(tensor.dtype.numpy)
            if np.asarray(data).dtype != tensor.dtype.numpy:
                raise TypeError(f"The dtype of the input array {np.asarray(data).dtype} must match the equivalent "
                                f"type of the tensor {tensor.name} : {tensor.dtype.name}")
            if tensor.retrieval_mode == "all_replicas" and tensor.replica_grouping.group_size > 1:
                raise NotImplementedError(f'Copying to tensor {tensor.name} with "all_replicas" retrieval mode is '
                                          "not yet supported.")
            checked[tensor] = data
        self._session.write_variables_data(checked)
