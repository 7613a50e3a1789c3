"""Exceptions: one class per C status (plexus/types.h plx_status), all under plexus.Error.

Each carries `status` (the int), `status_name` ("PLX_ERR_SHAPE_MISMATCH", ...) and the
message plx_last_error() gave for it. Classes that match a Python built-in also derive from
it (ShapeMismatch is a ValueError, Timeout a TimeoutError, ...), so generic handlers work.
"""


class Error(Exception):
    """Base of every error the Plexus runtime reports. `status`: the plx_status int."""

    status = None
    status_name = None

    def __init__(self, message, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


def _define(name, status, status_name, *bases, doc):
    cls = type(name, (Error,) + bases, {"status": status, "status_name": status_name, "__doc__": doc})
    globals()[name] = cls
    return cls


_CLASSES = {
    1: _define("InvalidArgument", 1, "PLX_ERR_INVALID_ARGUMENT", ValueError,
               doc="A bad argument: NULL, a bad value, a wrong buffer size, a closed object."),
    2: _define("UnknownOp", 2, "PLX_ERR_UNKNOWN_OP", AttributeError, doc="No op is registered under that name."),
    3: _define("ShapeMismatch", 3, "PLX_ERR_SHAPE_MISMATCH", ValueError,
               doc="Shapes break an op's rule, or a host array has the wrong shape."),
    4: _define("DTypeMismatch", 4, "PLX_ERR_DTYPE_MISMATCH", TypeError,
               doc="Dtypes break an op's rule, or a host array has the wrong dtype."),
    5: _define("NotFound", 5, "PLX_ERR_NOT_FOUND", LookupError,
               doc="A tensor, stream or device id that does not exist."),
    6: _define("OutOfDeviceMemory", 6, "PLX_ERR_OUT_OF_DEVICE_MEMORY", MemoryError,
               doc="The memory plan exceeds a device's capacity (device_memory_bytes)."),
    7: _define("InvalidGrouping", 7, "PLX_ERR_INVALID_GROUPING", ValueError,
               doc="A replica grouping does not fit the replication factor (seed 001, 13.2)."),
    8: _define("IoError", 8, "PLX_ERR_IO", OSError, doc="A file could not be opened, read or written."),
    9: _define("BadFormat", 9, "PLX_ERR_BAD_FORMAT", ValueError,
               doc="A file's content is not what its format requires."),
    10: _define("RunError", 10, "PLX_ERR_RUNTIME", RuntimeError,
                doc="A run failed: a kernel error, or a stream callback raised."),
    11: _define("PluginError", 11, "PLX_ERR_PLUGIN", RuntimeError,
                doc="A plugin is missing, incompatible or failed."),
    12: _define("Timeout", 12, "PLX_ERR_TIMEOUT", TimeoutError,
                doc="A collective or a worker did not answer within its limit (collective_timeout_ms)."),
    13: _define("Cancelled", 13, "PLX_ERR_CANCELLED", doc="The operation was cancelled."),
    14: _define("Unsupported", 14, "PLX_ERR_UNSUPPORTED",
                doc="A valid request this build or machine cannot serve."),
    15: _define("BufferTooSmall", 15, "PLX_ERR_BUFFER_TOO_SMALL", doc="An output buffer is too small."),
    16: _define("StillRunning", 16, "PLX_ERR_STILL_RUNNING", TimeoutError,
                doc="Run.wait's timeout passed before the run ended; the run goes on (wait again)."),
    99: _define("InternalError", 99, "PLX_ERR_INTERNAL", doc="A bug in Plexus; please report the message."),
}


def from_status(status, message):
    """The exception for C status `status` with `message` (an Error for unknown codes)."""
    cls = _CLASSES.get(status)
    return cls(message) if cls else Error(f"status {status}: {message}", status)


def exception_classes():
    """Every status-specific class, keyed by its status int."""
    return dict(_CLASSES)
