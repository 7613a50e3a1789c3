"""Sessions (PopXL popxl.Session): compile an Ir for its devices, run it on host arrays or
stream callbacks, read and write variables, save and load checkpoints.

Host arrays follow plexus.h: an input takes [device_iterations * gradient_accumulation,
R] + S and an output gives its output mode's shape (Session.host_shape), leading 1s dropped
as PopXL drops them (seed 000 17.1; seed 003 output modes). C-contiguous arrays of the
stream's dtype are passed to the runtime by pointer, without a copy; any other array is
refused with a message naming the stream."""
import functools
import json
import threading
from collections.abc import Mapping

import numpy as np

from plexus import dtypes
from plexus.callbacks import CallbackErrors, PythonCallback, NativeCallback
from plexus.errors import InvalidArgument, DTypeMismatch, NotFound, ShapeMismatch, StillRunning, from_status
from plexus.ir import Ir, Stage
from plexus.tensor import HostToDeviceStream, DeviceToHostStream, Tensor
from plexus._lib import ffi, lib, check, last_error, read_text, read_shape

_OUTPUT_MODES = {"all": 0, "final": 1, "every_n": 2, "sum": 3}
_SHUFFLE = {"auto": 0, "off": 1, "on": 2}
# Session keyword -> plx_session_options field for plain numbers and flags.
_NUMERIC_OPTIONS = ("device_iterations", "device_memory_bytes", "threads_per_device", "collective_timeout_ms",
                    "gradient_accumulation", "output_return_period", "offload_optimizer_state", "profile",
                    "prefetch_depth", "io_threads", "num_workers", "worker_index", "weight_update_on_host",
                    "gradient_bucket_bytes")
_STRING_OPTIONS = ("collectives_plugin", "execution_strategy", "strategy_options")


def _c_stages(stages, keep):
    """plx_stage[] for `stages`: lists of block names (device = the stage's index) or Stage."""
    array = ffi.new("plx_stage[]", len(stages))
    for slot, stage in zip(array, stages):
        stage = stage if isinstance(stage, Stage) else Stage(*stage)
        names = [ffi.new("char[]", b.encode()) for b in stage.blocks]
        pointers = ffi.new("char*[]", names or [ffi.NULL])
        keep += names + [pointers]
        slot.blocks, slot.num_blocks, slot.device = pointers, len(names), stage.device
    keep.append(array)
    return array


def _session_options(options):
    """plx_session_options from Session's keywords, and the cffi objects it borrows."""
    c = ffi.new("plx_session_options*")
    lib.plx_session_options_init(c)
    keep = []
    for key, value in options.items():
        if value is None:
            continue
        if key in _NUMERIC_OPTIONS:
            setattr(c, key, int(value))
        elif key in _STRING_OPTIONS:
            keep.append(ffi.new("char[]", str(value).encode()))
            setattr(c, key, keep[-1])
        elif key == "output_mode":
            if value not in _OUTPUT_MODES:
                raise InvalidArgument(f"output_mode must be one of {sorted(_OUTPUT_MODES)}, not {value!r}")
            c.output_mode = _OUTPUT_MODES[value]
        elif key == "stages":
            c.stages, c.num_stages = _c_stages(list(value), keep), len(value)
        else:
            raise TypeError(f"Session got an unknown option '{key}' (options: "
                            f"{', '.join(sorted(_NUMERIC_OPTIONS + _STRING_OPTIONS + ('output_mode', 'stages')))})")
    return c, keep


def _stream_label(stream):
    return f"stream '{stream.name}'"


@functools.lru_cache(maxsize=1024)
def _c_dims(shape):
    """A shared, never-written int64_t[] of `shape` (runs repeat a few shapes: made once)."""
    return ffi.new("int64_t[]", list(shape) or [0])


def _host_array_struct(slot, stream, array):
    slot.stream, slot.dtype = stream.id, stream.dtype.code
    slot.data = ffi.from_buffer(array)
    slot.shape, slot.rank = _c_dims(array.shape), array.ndim


class _RunRequest:
    """The C structures of one run and every Python object they borrow: input and output
    arrays, callbacks and their handles. Lives until the run ends."""

    def __init__(self, session, inputs, callbacks):
        self.errors = CallbackErrors()
        for what, value in (("inputs", inputs), ("callbacks", callbacks)):
            if value is not None and not isinstance(value, Mapping):
                raise InvalidArgument(f"run {what} must be a dict keyed by streams, got {type(value).__name__}")
        inputs = dict(inputs or {})
        callbacks = dict(callbacks or {})
        self.inputs = {s: self._checked_input(s, a) for s, a in inputs.items()}
        self.outputs = {s: np.empty(shape, dtype=s.dtype.numpy)
                        for s, shape in session._output_shapes() if s not in callbacks}
        self.callbacks = [self._callback(s, fn) for s, fn in callbacks.items()]
        self.c_inputs = self._c_arrays(self.inputs)
        self.c_outputs = self._c_arrays(self.outputs)
        self.c_callbacks = ffi.new("plx_stream_callback[]", len(self.callbacks)) if self.callbacks else ffi.NULL
        for slot, cb in zip(self.c_callbacks or (), self.callbacks):
            cb.c_struct(slot)

    def _checked_input(self, stream, array):
        if not isinstance(stream, HostToDeviceStream):
            raise InvalidArgument(f"run inputs are keyed by HostToDeviceStream, got {stream!r}")
        if not isinstance(array, np.ndarray):
            raise InvalidArgument(f"{_stream_label(stream)}: input must be a numpy array, got {type(array).__name__}")
        if array.dtype != stream.dtype.numpy:
            raise DTypeMismatch(f"{_stream_label(stream)}: input has dtype {array.dtype}, the stream takes "
                                f"{stream.dtype.name} (convert it with .astype(np.{stream.dtype.name}))")
        if not array.flags.c_contiguous:
            raise InvalidArgument(f"{_stream_label(stream)}: input is not C-contiguous (pass "
                                  f"np.ascontiguousarray(a); Plexus reads arrays in place, without copies)")
        return array

    def _callback(self, stream, fn):
        if isinstance(fn, NativeCallback):
            return fn
        if not callable(fn):
            raise InvalidArgument(f"callback of {stream!r} is not callable: {fn!r}")
        if isinstance(stream, HostToDeviceStream):
            return PythonCallback(stream, fn, self.errors, is_fill=True)
        if isinstance(stream, DeviceToHostStream):
            return PythonCallback(stream, fn, self.errors, is_fill=False)
        raise InvalidArgument(f"callbacks are keyed by streams, got {stream!r}")

    @staticmethod
    def _c_arrays(arrays):
        c = ffi.new("plx_host_array[]", max(len(arrays), 1))
        for slot, (stream, array) in zip(c, arrays.items()):
            _host_array_struct(slot, stream, array)
        return c

    def c_options(self):
        """A plx_run_options naming this request's arrays and callbacks."""
        o = ffi.new("plx_run_options*")
        lib.plx_run_options_init(o)
        o.inputs, o.num_inputs = self.c_inputs, len(self.inputs)
        o.outputs, o.num_outputs = self.c_outputs, len(self.outputs)
        o.callbacks, o.num_callbacks = self.c_callbacks, len(self.callbacks)
        return o

    def raise_for(self, status):
        """Raises the run's error; a Python callback's exception adds its text and is chained."""
        if status == lib.PLX_OK:
            return
        message = last_error()
        exc = self.errors.first()
        if exc is None:
            raise from_status(status, message)
        raise from_status(status, f"{message}: the Python callback raised {type(exc).__name__}: {exc}") from exc


class _Users:
    """Counts the threads inside a session's methods, so that close() destroys the C
    session only once none is (plexus.h: plx_session_destroy must not run concurrently
    with any other call on the session)."""

    def __init__(self):
        self.lock = threading.Condition()
        self.count = 0

    def __enter__(self):
        with self.lock:
            self.count += 1

    def __exit__(self, *exc):
        with self.lock:
            self.count -= 1
            if self.count == 0:
                self.lock.notify_all()

    def wait_idle(self):
        """Blocks until no thread is inside a session method."""
        with self.lock:
            self.lock.wait_for(lambda: self.count == 0)


def _guarded(method):
    """`method` as one user of the C session (see _Users)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._users:
            return method(self, *args, **kwargs)
    return wrapper


class Run:
    """An asynchronous run (Session.run_async; seed 003's asynchronous host loop). Holds the
    run's arrays and callbacks until it ends. Thread-safe: wait() from any thread."""

    def __init__(self, session, request, c_run):
        self._session, self._request = session, request
        self._ptr = ffi.gc(c_run, lib.plx_run_destroy)

    def wait(self, timeout=None):
        """Waits for the run, at most `timeout` seconds (None: no limit). Returns
        {DeviceToHostStream: ndarray} as Session.run does. Raises plexus.StillRunning (a
        TimeoutError) when the run is still going (wait again later), or the run's error
        (plexus.Timeout when one of its collectives timed out)."""
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        status = lib.plx_run_wait(self._ptr, ms)
        if status == lib.PLX_ERR_STILL_RUNNING and self._request.errors.first() is None and ms >= 0:
            raise StillRunning(f"{last_error()} (waited {timeout} s; the run may still be going: wait again)")
        self._request.raise_for(status)
        return self._request.outputs

    def cancel(self):
        """Cancels this run only (plx_run_cancel): wait() then raises plexus.Cancelled; the
        session's other runs go on and the session stays usable."""
        check(lib.plx_run_cancel(self._ptr))


class Session:
    """A compiled Ir on its devices (PopXL popxl.Session): R replicas x the stages' devices,
    each a thread with its own memory arena. Use as a context manager (closed on exit) or
    call close(). Keeps its Ir alive.

    Options (keywords; plexus.h plx_session_options): device_iterations (steps per run, 1),
    gradient_accumulation (1), stages (lists of Block names, or Stage objects),
    execution_strategy ("pipelined", "sharded" or a plugin), strategy_options, output_mode
    ("all", "final", "every_n", "sum"), output_return_period, offload_optimizer_state,
    profile (record traces), prefetch_depth (2), io_threads (1), threads_per_device,
    device_memory_bytes, collectives_plugin, collective_timeout_ms, num_workers,
    worker_index, weight_update_on_host, gradient_bucket_bytes (gradient all-reduces fused
    into calls of about this many bytes, PyTorch DDP's bucket_cap_mb; 25 MiB, 0 = none).
    Raises the C errors of plx_session_create
    (InvalidArgument, OutOfDeviceMemory, PluginError, ...) and TypeError for an unknown
    option. Runs of one session execute one at a time in the order started; other methods
    are safe from any thread."""

    def __init__(self, ir, **options):
        if not isinstance(ir, Ir):
            raise InvalidArgument(f"Session takes a plexus.Ir, got {ir!r}")
        self.ir = ir
        self._users = _Users()
        c, _keep = _session_options(options)
        out = ffi.new("plx_session**")
        check(lib.plx_session_create(ir._ptr, c, out))
        self._ptr = out[0]
        self.options = dict(options)
        self._host_shapes = {}
        self._outputs = None

    # ---- lifetime
    def close(self):
        """Releases the devices: cancels the runs in flight and queued (they raise
        plexus.Cancelled), waits for calls on other threads to return. Idempotent."""
        with self._users.lock:
            ptr, self._ptr = getattr(self, "_ptr", None), None
        if ptr is not None:
            lib.plx_session_cancel(ptr)
            self._users.wait_idle()
            lib.plx_session_destroy(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        if getattr(self, "_ptr", None) is not None:
            self.close()

    def _live(self):
        if self._ptr is None:
            raise InvalidArgument("the session is closed")
        return self._ptr

    # ---- runs
    @_guarded
    def run(self, inputs=None, callbacks=None):
        """One run: device_iterations steps (x gradient_accumulation micro-batches) on every
        replica. inputs: {HostToDeviceStream: ndarray of host_shape(stream)}; callbacks:
        {stream: fill(step, replica, buffer) or deliver(row, replica, data)} (see
        plexus.callbacks) or a loader's callbacks. Returns {DeviceToHostStream: ndarray}
        for every output stream without a callback. The GIL is released while it runs.
        Raises ShapeMismatch, DTypeMismatch, InvalidArgument (bad arrays), RunError (a
        kernel error or a callback exception, chained), Cancelled, Timeout."""
        request = _RunRequest(self, inputs, callbacks)
        if request.callbacks:
            status = lib.plx_session_run_with(self._live(), request.c_options())
        else:
            status = lib.plx_session_run(self._live(), request.c_inputs, len(request.inputs), request.c_outputs,
                                         len(request.outputs))
        request.raise_for(status)
        return request.outputs

    @_guarded
    def run_async(self, inputs=None, callbacks=None):
        """Starts a run and returns a Run at once; Run.wait(timeout) gives its outputs. The
        arrays must not be changed until it ends."""
        request = _RunRequest(self, inputs, callbacks)
        out = ffi.new("plx_run**")
        check(lib.plx_session_run_async(self._live(), request.c_options(), out))
        return Run(self, request, out[0])

    @_guarded
    def cancel(self):
        """Cancels the runs in flight and queued; they end with plexus.Cancelled."""
        check(lib.plx_session_cancel(self._live()))

    def _output_shapes(self):
        """(stream, host shape) of every device-to-host stream, from the cache after the
        first run."""
        if self._outputs is None:
            self._outputs = [(s, self.host_shape(s)) for s in self.ir.d2h_streams]
        return self._outputs

    @_guarded
    def host_shape(self, stream):
        """The host array shape a run takes or gives for `stream` (a tuple); fixed for the
        session's life, so it is asked of the runtime once per stream."""
        shape = self._host_shapes.get(stream)
        if shape is None:
            shape = self._host_shapes[stream] = read_shape(lib.plx_session_get_host_shape, self._live(), stream.id)
        return shape

    # ---- variables (seed 001 13.4 retrieval modes)
    @_guarded
    def get_tensor_data(self, tensor):
        """A variable's value as a new ndarray, in its retrieval mode's shape: [num_groups] +
        shape ("one_per_group", the group dim left out for one group) or [R] + shape
        ("all_replicas"); replica-sharded variables are returned whole. A constant's value
        (PopXL reads constants too) is a copy of its data."""
        if tensor.id in self.ir.constants:
            return self.ir.constants[tensor.id].copy()
        shape = read_shape(lib.plx_session_get_variable_shape, self._live(), tensor.id)
        out = np.empty(shape, dtype=tensor.dtype.numpy)
        check(lib.plx_session_read_variable(self._live(), tensor.id, ffi.from_buffer(out), out.nbytes))
        return out

    def get_tensors_data(self, tensors):
        """{tensor: get_tensor_data(tensor)} for each of `tensors`."""
        return {t: self.get_tensor_data(t) for t in tensors}

    @_guarded
    def write_variable_data(self, tensor, data):
        """Writes a variable from `data` in its retrieval mode's shape (as get_tensor_data
        returns); converted to the variable's dtype. Raises ShapeMismatch naming it."""
        shape = read_shape(lib.plx_session_get_variable_shape, self._live(), tensor.id)
        if data is None:
            raise InvalidArgument(f"write_variable_data: data for variable '{tensor.name}' is None")
        array = np.asarray(data, dtype=tensor.dtype.numpy, order="C")   # keeps a scalar's shape ()
        if array.shape != shape:
            raise ShapeMismatch(f"write_variable_data: variable '{tensor.name}' takes shape {list(shape)}, "
                                f"got {list(array.shape)}")
        check(lib.plx_session_write_variable(self._live(), tensor.id, ffi.from_buffer(array), array.nbytes))

    def write_variables_data(self, values):
        """write_variable_data for each {tensor: data}."""
        for t, data in values.items():
            self.write_variable_data(t, data)

    def weights_to_host(self):
        """Every variable of the IR: {tensor: ndarray} (PopXL weights_to_host + the reads)."""
        return self.get_tensors_data(self.ir.variables)

    def weights_from_host(self, values):
        """Writes {tensor: ndarray} into the devices (PopXL weights_from_host)."""
        self.write_variables_data(values)

    # ---- checkpoints (docs/checkpoint-format.md)
    def _checkpoint_options(self, counters=None, level=3, threads=1, shuffle="auto", strict=True):
        o = ffi.new("plx_checkpoint_options*")
        lib.plx_checkpoint_options_init(o)
        if shuffle not in _SHUFFLE:
            raise InvalidArgument(f"shuffle must be one of {sorted(_SHUFFLE)}, not {shuffle!r}")
        o.level, o.threads, o.shuffle, o.strict = int(level), int(threads), _SHUFFLE[shuffle], int(bool(strict))
        names = list(counters or {})
        keep = [ffi.new("char[]", n.encode()) for n in names]
        o.num_counters = len(names)
        # The arrays must be held by their owning cdata: a pointer read back from `o` owns nothing.
        name_array = ffi.new("char*[]", keep or [ffi.NULL])
        values = [int(counters[n]) for n in names] if isinstance(counters, dict) else [0] * len(names)
        value_array = ffi.new("int64_t[]", values or [0])
        o.counter_names, o.counter_values = name_array, value_array
        return o, names, (keep, name_array, value_array)

    @_guarded
    def save_checkpoint(self, path, counters=None, level=3, threads=1, shuffle="auto"):
        """Saves the session's whole state (variables, remote buffers, optimizer state, step)
        and `counters` ({name: int}) to `path` (zstd `level` 1..19, `threads`)."""
        o, _, _keep = self._checkpoint_options(counters, level, threads, shuffle)
        check(lib.plx_session_save_checkpoint(self._live(), str(path).encode(), o))

    @_guarded
    def save_checkpoint_async(self, path, counters=None, level=3, threads=1, shuffle="auto"):
        """Snapshots the state now and saves it on checkpoint threads; returns a handle whose
        wait(timeout) returns when the file is written (or raises its error)."""
        o, _, keep = self._checkpoint_options(counters, level, threads, shuffle)
        out = ffi.new("plx_run**")
        check(lib.plx_session_save_checkpoint_async(self._live(), str(path).encode(), o, out))
        return _SaveHandle(ffi.gc(out[0], lib.plx_run_destroy), keep)

    @_guarded
    def load_checkpoint(self, path, counters=(), strict=True):
        """Loads `path` into the session (another replication factor or RTS layout is fine).
        counters: names to read back; returns {name: value}. strict=False loads the
        tensors found in both by name. Raises IoError, BadFormat, InvalidArgument."""
        o, names, _keep = self._checkpoint_options(list(counters), strict=strict)
        check(lib.plx_session_load_checkpoint(self._live(), str(path).encode(), o))
        values = _keep[2]
        return {n: values[i] for i, n in enumerate(names)}

    @property
    @_guarded
    def step(self):
        """Weight updates done (steps) since the session started or the checkpoint's."""
        out = ffi.new("int64_t*")
        check(lib.plx_session_get_step(self._live(), out))
        return out[0]

    # ---- figures
    @property
    @_guarded
    def num_devices(self):
        """Devices of this worker: hosted replicas x devices per replica."""
        out = ffi.new("size_t*")
        check(lib.plx_session_get_num_devices(self._live(), out))
        return out[0]

    @property
    @_guarded
    def replicas(self):
        """{replication_factor, num_workers, worker_index, first_local_replica, local_replicas}."""
        return _struct_dict("plx_replica_info", lambda o: lib.plx_session_get_replicas(self._live(), o))

    @_guarded
    def memory_stats(self, device=0):
        """Device `device`'s memory in bytes: arena_bytes, variable_bytes, current_bytes,
        peak_bytes, planned_peak_bytes, remote_buffer_bytes, offloaded_bytes."""
        if int(device) < 0:
            raise NotFound(f"memory_stats: device {device} does not exist (devices are numbered from 0)")
        return _struct_dict("plx_memory_stats", lambda o: lib.plx_session_get_memory_stats(self._live(), device, o))

    @_guarded
    def variable_storage(self, tensor):
        """Where one replica keeps `tensor`, in bytes: device_bytes, remote_bytes, shard_over."""
        return _struct_dict("plx_variable_storage",
                            lambda o: lib.plx_session_get_variable_storage(self._live(), tensor.id, o))

    @_guarded
    def stream_stats(self):
        """The last run's streaming figures: run_ns, h2d_bytes, d2h_bytes, transfer_ns,
        exposed_wait_ns, micro_batches, mean_occupancy, prefetch_depth."""
        return _struct_dict("plx_stream_stats", lambda o: lib.plx_session_get_stream_stats(self._live(), o))

    @_guarded
    def report(self):
        """The compiled session as a dict: devices, memory plan, GEMM kernel choices."""
        return json.loads(read_text(lib.plx_session_get_report, self._live()))

    @_guarded
    def trace(self):
        """The last run's Chrome trace (a dict; json.dump it for Perfetto). Needs profile=True."""
        return json.loads(read_text(lib.plx_session_get_trace, self._live()))

    @_guarded
    def memory_report(self):
        """The planned memory of each device of one replica as a dict
        (plx_session_get_memory_report; schema "plexus.memory_report" version 1 in
        docs/profiling.md; sizes in bytes): per device its schedule's steps with the bytes
        live at each by kind, the tensors live at the peak, remote-buffer and offloaded
        bytes, and its variables' per-replica storage. Needs no run. Raises
        plexus.InvalidArgument once the session is closed. Safe while a run goes on."""
        return json.loads(read_text(lib.plx_session_get_memory_report, self._live()))


class _SaveHandle:
    """An asynchronous checkpoint save; wait(timeout) as Run.wait, returning None."""

    def __init__(self, ptr, keep):
        self._ptr, self._keep = ptr, keep

    def wait(self, timeout=None):
        """Waits for the save, at most `timeout` seconds (None: no limit); raises its error,
        or plexus.StillRunning while it is still writing."""
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        check(lib.plx_run_wait(self._ptr, ms))


def _struct_dict(type_name, fill):
    """Calls fill(out) on a zeroed out-struct with struct_size set and returns its fields."""
    out = ffi.new(type_name + "*")
    out.struct_size = ffi.sizeof(type_name)
    check(fill(out))
    return {name: getattr(out, name) for name, _ in ffi.typeof(type_name).fields if name != "struct_size"}


__all__ = ["Session", "Run", "Tensor", "dtypes"]
