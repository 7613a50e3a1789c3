"""Stream callbacks written in Python (docs/design.md "Streaming layer"): the C entry
points cffi gives the runtime, and the per-run record of what a callback raised.

The runtime calls fill / deliver on its io threads; cffi takes the GIL for the call. A
Python exception never crosses into C: it is kept in the run's CallbackErrors, the
callback returns PLX_ERR_RUNTIME, the run fails, and the wrapper raises the run's error
with the exception's text, chained to it (`raise ... from exc`)."""
import threading

import numpy as np

from plexus._lib import ffi, lib


class CallbackErrors:
    """Exceptions raised by one run's Python callbacks (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.errors = []

    def add(self, exc):
        """Records `exc` (from any io thread)."""
        with self._lock:
            self.errors.append(exc)

    def first(self):
        """The first exception recorded, or None."""
        with self._lock:
            return self.errors[0] if self.errors else None


class PythonCallback:
    """A Python fill or deliver function bound to one stream for one run.

    fill(step, replica, buffer): buffer is a writable ndarray of the stream's per-step,
      per-replica shape and dtype, valid during the call; write this micro-batch into it.
    deliver(row, replica, data): data is a read-only ndarray of the tensor's shape, valid
      during the call (copy it to keep it); row is the output mode's host array row."""

    def __init__(self, stream, fn, errors, is_fill):
        self.stream, self.fn, self.errors, self.is_fill = stream, fn, errors, is_fill
        self.dtype, self.shape = stream.dtype.numpy, stream.shape
        self.handle = ffi.new_handle(self)

    def c_struct(self, out):
        """Fills plx_stream_callback `out` with this callback's C entry point and handle."""
        out.stream = self.stream.id
        out.fill = lib._plexus_fill if self.is_fill else ffi.NULL
        out.deliver = ffi.NULL if self.is_fill else lib._plexus_deliver
        out.user_data = self.handle

    def call(self, index, replica, pointer, nbytes):
        """Runs the Python function on the buffer at `pointer` (`nbytes` bytes) for micro-batch
        or row `index` of `replica`; returns PLX_OK, or PLX_ERR_RUNTIME after recording what
        it raised."""
        try:
            array = np.frombuffer(ffi.buffer(pointer, nbytes), dtype=self.dtype).reshape(self.shape)
            if not self.is_fill:
                array.flags.writeable = False
            self.fn(int(index), int(replica), array)
            return lib.PLX_OK
        except BaseException as exc:  # noqa: B902  (everything must stop here, before C)
            self.errors.add(exc)
            return lib.PLX_ERR_RUNTIME


class NativeCallback:
    """A C callback (the data loader's fill functions) passed through unchanged; `owner`
    is kept alive for the run."""

    def __init__(self, c_callback, owner):
        self.c_callback, self.owner = c_callback, owner

    def c_struct(self, out):
        """Copies the C callback into plx_stream_callback `out`."""
        out.stream = self.c_callback.stream
        out.fill, out.deliver, out.user_data = self.c_callback.fill, self.c_callback.deliver, self.c_callback.user_data


@ffi.def_extern()
def _plexus_fill(user_data, stream, step, replica, buffer, nbytes):
    return ffi.from_handle(user_data).call(step, replica, buffer, nbytes)


@ffi.def_extern()
def _plexus_deliver(user_data, stream, row, replica, data, nbytes):
    return ffi.from_handle(user_data).call(row, replica, ffi.cast("void*", data), nbytes)


@ffi.def_extern()
def _plexus_run_complete(user_data, status, message):
    try:
        ffi.from_handle(user_data)(int(status), ffi.string(message).decode("utf-8", "replace") if message else "")
    except BaseException:  # noqa: B902  (a completion callback has nowhere to report to)
        pass
