"""plexus.errors: one exception class per C status (plexus/types.h plx_status), all under
plexus.Error, each raised by a real call that produces its status and carrying
plx_last_error()'s message and the status."""
import os
import time

import numpy as np
import pytest

import plexus
from plexus import errors, ops
from plexus._lib import check, ffi, last_error, lib

# status -> (class name, C name, Python built-in base or None)
STATUSES = {
    1: ("InvalidArgument", "PLX_ERR_INVALID_ARGUMENT", ValueError),
    2: ("UnknownOp", "PLX_ERR_UNKNOWN_OP", AttributeError),
    3: ("ShapeMismatch", "PLX_ERR_SHAPE_MISMATCH", ValueError),
    4: ("DTypeMismatch", "PLX_ERR_DTYPE_MISMATCH", TypeError),
    5: ("NotFound", "PLX_ERR_NOT_FOUND", LookupError),
    6: ("OutOfDeviceMemory", "PLX_ERR_OUT_OF_DEVICE_MEMORY", MemoryError),
    7: ("InvalidGrouping", "PLX_ERR_INVALID_GROUPING", ValueError),
    8: ("IoError", "PLX_ERR_IO", OSError),
    9: ("BadFormat", "PLX_ERR_BAD_FORMAT", ValueError),
    10: ("RunError", "PLX_ERR_RUNTIME", RuntimeError),
    11: ("PluginError", "PLX_ERR_PLUGIN", RuntimeError),
    12: ("Timeout", "PLX_ERR_TIMEOUT", TimeoutError),
    13: ("Cancelled", "PLX_ERR_CANCELLED", None),
    14: ("Unsupported", "PLX_ERR_UNSUPPORTED", None),
    15: ("BufferTooSmall", "PLX_ERR_BUFFER_TOO_SMALL", None),
    16: ("StillRunning", "PLX_ERR_STILL_RUNNING", TimeoutError),
    99: ("InternalError", "PLX_ERR_INTERNAL", None),
}


def test_every_status_has_its_class_under_plexus_error():
    classes = errors.exception_classes()
    assert sorted(classes) == sorted(STATUSES)
    for status, (name, c_name, builtin) in STATUSES.items():
        cls = classes[status]
        assert cls is getattr(plexus, name) is getattr(errors, name)
        assert issubclass(cls, plexus.Error) and issubclass(cls, Exception)
        assert (cls.status, cls.status_name, cls.__name__) == (status, c_name, name)
        # The C library agrees on the name of each status.
        assert ffi.string(lib.plx_status_name(status)).decode() == c_name
        if builtin is not None:
            assert issubclass(cls, builtin)
        assert cls.__doc__


def test_from_status_maps_every_code_and_keeps_the_message():
    for status, (name, _, _) in STATUSES.items():
        exc = errors.from_status(status, f"message {status}")
        assert type(exc).__name__ == name
        assert isinstance(exc, plexus.Error)
        assert (exc.status, str(exc)) == (status, f"message {status}")
    unknown = errors.from_status(42, "what")
    assert type(unknown) is plexus.Error
    assert unknown.status == 42 and "status 42" in str(unknown) and "what" in str(unknown)
    assert check(lib.PLX_OK) is None


def _raised_by(cls, fn):
    """Calls fn, expects `cls`, and checks the exception carries plx_last_error()'s message."""
    with pytest.raises(cls) as info:
        fn()
    exc = info.value
    message = last_error()
    assert type(exc) is cls
    assert exc.status == cls.status and isinstance(exc, plexus.Error)
    assert message and message in str(exc), (str(exc), message)
    return str(exc)


def _small_ir(replication=1):
    ir = plexus.Ir(replication=replication)
    with ir.main_graph:
        v = plexus.variable(np.zeros((64, 64), np.float32), name="v")
        plexus.d2h_stream(v + 1.0, name="out")
    return ir


def _long_session():
    """A session whose run takes a while (many GEMMs, no inputs)."""
    ir = plexus.Ir()
    with ir.main_graph:
        w = plexus.variable(np.full((128, 128), 1 / 128, np.float32), name="w")
        y = plexus.variable(np.ones((128, 128), np.float32), name="x")
        for _ in range(8):
            y = ops.matmul(y, w)
        plexus.d2h_stream(ops.reduce_sum(y), name="y")
    return plexus.Session(ir, device_iterations=2000, output_mode="final", threads_per_device=1)


def test_invalid_argument():
    message = _raised_by(plexus.InvalidArgument, lambda: plexus.Ir(replication=0))
    assert "replication factor 0" in message


def test_unknown_op_from_the_c_api():
    ir = plexus.Ir()
    outputs, count = ffi.new("plx_tensor[]", 4), ffi.new("size_t*")
    message = _raised_by(plexus.UnknownOp, lambda: check(
        lib.plx_ir_add_op(ir._ptr, b"frobnicate", ffi.NULL, 0, ffi.NULL, 0, outputs, 4, count)))
    assert "frobnicate" in message
    # plexus.ops knows the catalog and says the same before calling C, with a suggestion.
    with pytest.raises(plexus.UnknownOp, match="matmull.*did you mean matmul"):
        ops.matmull


def test_shape_and_dtype_mismatch():
    ir = plexus.Ir()
    with ir.main_graph:
        a = plexus.variable(np.zeros((2, 3), np.float32))
        b = plexus.variable(np.zeros((4, 5), np.float32))
        i = plexus.variable(np.zeros((2, 3), np.int32))
        assert "matmul" in _raised_by(plexus.ShapeMismatch, lambda: ops.matmul(a, b))
        assert "add" in _raised_by(plexus.DTypeMismatch, lambda: ops.add(a, i))


def test_not_found():
    with plexus.Session(_small_ir()) as session:
        assert "device 99" in _raised_by(plexus.NotFound, lambda: session.memory_stats(99))


def test_invalid_grouping():
    ir = plexus.Ir(replication=16)
    message = _raised_by(plexus.InvalidGrouping, lambda: ir.replica_grouping(group_size=3))
    assert "16" in message and "3" in message


def test_io_error_for_a_missing_checkpoint(tmp_path):
    with plexus.Session(_small_ir()) as session:
        path = tmp_path / "missing.plxckpt"
        message = _raised_by(plexus.IoError, lambda: session.load_checkpoint(path))
        assert str(path) in message
        assert isinstance(plexus.IoError("x"), OSError)


def test_bad_format_for_a_garbage_checkpoint(tmp_path):
    path = tmp_path / "garbage.plxckpt"
    path.write_bytes(os.urandom(4096))
    with plexus.Session(_small_ir()) as session:
        assert str(path) in _raised_by(plexus.BadFormat, lambda: session.load_checkpoint(path))


def test_run_error_for_a_label_out_of_range():
    ir = plexus.Ir()
    with ir.main_graph:
        labels = plexus.h2d_stream((2,), plexus.int32, name="labels")
        logits = plexus.variable(np.zeros((2, 3), np.float32), name="logits")
        plexus.d2h_stream(ops.softmax_cross_entropy(logits, ops.host_load(labels)), name="loss")
    with plexus.Session(ir) as session:
        message = _raised_by(plexus.RunError, lambda: session.run({labels: np.array([0, 7], np.int32)}))
        assert "softmax_cross_entropy" in message and "label 7" in message and "row 1" in message
        # The session stays usable after a run error.
        loss = session.run({labels: np.array([0, 2], np.int32)})
        assert list(loss.values())[0] == pytest.approx(np.log(3), rel=1e-6)


def test_plugin_error_for_a_missing_collectives_plugin():
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        v = plexus.variable(np.zeros((4,), np.float32))
        plexus.d2h_stream(ops.collectives.replicated_all_reduce(v))
    message = _raised_by(plexus.PluginError, lambda: plexus.Session(ir, collectives_plugin="nonexistent"))
    assert "nonexistent" in message


def test_still_running_and_cancelled():
    with _long_session() as session:
        run = session.run_async()
        message = _raised_by(plexus.StillRunning, lambda: run.wait(timeout=0))
        assert "still going" in message
        time.sleep(0.01)
        session.cancel()
        assert "cancel" in _raised_by(plexus.Cancelled, lambda: run.wait(timeout=60))


def test_unsupported_host_update_of_a_grouped_weight():
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        x = plexus.h2d_stream((4,), plexus.float32, name="x")
        w = plexus.variable(np.zeros((2, 4), np.float32), name="w",
                            replica_grouping=ir.replica_grouping(group_size=1))
        grad, = plexus.autodiff(ops.reduce_sum(ops.mul(ops.host_load(x), w)), [w])
        ops.scaled_add_(w, grad, b=-0.1)
    message = _raised_by(plexus.Unsupported, lambda: plexus.Session(ir, weight_update_on_host=1))
    assert "weight_update_on_host" in message and "'w'" in message


def test_out_of_device_memory():
    message = _raised_by(plexus.OutOfDeviceMemory, lambda: plexus.Session(_small_ir(), device_memory_bytes=64))
    assert "device 0" in message and "64" in message
    # The same IR fits without the limit.
    with plexus.Session(_small_ir()) as session:
        assert session.memory_stats()["arena_bytes"] > 64


def test_buffer_too_small_from_the_c_api():
    grouping = plexus.Ir(replication=4).replica_grouping(group_size=4)
    members, count = ffi.new("int64_t[]", 1), ffi.new("size_t*")
    message = _raised_by(plexus.BufferTooSmall, lambda: check(
        lib.plx_replica_grouping_get_members(grouping._c, 0, members, 1, count)))
    assert count[0] == 4 and "4 members" in message


def test_errors_are_caught_by_builtin_handlers():
    try:
        plexus.Ir(replication=16).replica_grouping(group_size=5)
    except ValueError as e:
        assert isinstance(e, plexus.InvalidGrouping)
    with pytest.raises(TypeError):
        plexus.dtypes.of(np.float64)
