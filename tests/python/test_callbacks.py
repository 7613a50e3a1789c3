"""Stream callbacks written in Python (plexus.callbacks): fill and deliver give what host
arrays give; an exception in a callback fails the run with a RunError chained to it, and
the session stays usable."""
import threading

import numpy as np
import pytest

import plexus
from plexus import ops

R, N = 2, 3            # replicas, device iterations


def _model():
    """y = x @ w (per step and replica), and a scalar per step: sum(y)."""
    ir = plexus.Ir(replication=R)
    with ir.main_graph:
        x = plexus.h2d_stream((4, 5), plexus.float32, name="x")
        w = plexus.variable(np.arange(15, dtype=np.float32).reshape(5, 3) / 10, name="w")
        y = ops.matmul(ops.host_load(x), w)
        y_d2h = plexus.d2h_stream(y, name="y")
        total_d2h = plexus.d2h_stream(ops.reduce_sum(y), name="total")
    return ir, x, y_d2h, total_d2h


def _data():
    return np.random.default_rng(1).standard_normal((N, R, 4, 5)).astype(np.float32)


def test_fill_and_deliver_give_what_arrays_give():
    ir, x, y, total = _model()
    data = _data()
    with plexus.Session(ir, device_iterations=N, io_threads=2) as session:
        expected = session.run({x: data})
        calls, lock = [], threading.Lock()

        def fill(step, replica, buffer):
            assert buffer.shape == (4, 5) and buffer.dtype == np.float32 and buffer.flags.writeable
            with lock:
                calls.append((step, replica))
            buffer[...] = data[step, replica]

        delivered = {y: np.zeros(session.host_shape(y), np.float32),
                     total: np.zeros(session.host_shape(total), np.float32)}
        rows = {y: [], total: []}

        def deliver_to(stream):
            def deliver(row, replica, value):
                assert not value.flags.writeable and value.shape == stream.shape
                with lock:
                    rows[stream].append((row, replica))
                # row: the value's row of the host array seen as [rows] + S ([N, R] + S here:
                # row = step * R + replica)
                delivered[stream].reshape((-1,) + stream.shape)[row] = value
            return deliver

        out = session.run(callbacks={x: fill, y: deliver_to(y), total: deliver_to(total)})
        assert out == {}                                   # every output went to a callback
        assert sorted(calls) == [(s, r) for s in range(N) for r in range(R)]
        for stream in (y, total):
            assert sorted(rows[stream]) == [(s * R + r, r) for s in range(N) for r in range(R)]
            np.testing.assert_array_equal(delivered[stream], expected[stream])

        # A fill callback with array outputs, and an array input with a deliver callback.
        mixed = session.run(callbacks={x: fill})
        np.testing.assert_array_equal(mixed[y], expected[y])
        got = np.zeros_like(expected[total])
        mixed = session.run({x: data}, callbacks={total: lambda row, r, v: got.reshape(-1).__setitem__(row, v)})
        assert list(mixed) == [y]
        np.testing.assert_array_equal(got, expected[total])


def test_callbacks_in_an_asynchronous_run():
    ir, x, y, total = _model()
    data = _data()
    with plexus.Session(ir, device_iterations=N) as session:
        expected = session.run({x: data})[total]
        got = np.zeros_like(expected)

        def fill(step, replica, buffer):
            buffer[...] = data[step, replica]

        def deliver(row, replica, value):
            got.reshape(-1)[row] = value

        run = session.run_async(callbacks={x: fill, total: deliver})
        del fill, deliver                       # the Run keeps them alive
        out = run.wait(timeout=60)
        assert list(out) == [y]
        np.testing.assert_array_equal(got, expected)


class Boom(Exception):
    pass


@pytest.mark.parametrize("where", ["fill", "deliver"])
def test_an_exception_in_a_callback_fails_the_run_and_is_chained(where):
    ir, x, y, total = _model()
    data = _data()
    with plexus.Session(ir, device_iterations=N) as session:
        expected = session.run({x: data})

        def fill(step, replica, buffer):
            if where == "fill" and (step, replica) == (1, 1):
                raise Boom("the fill went wrong at step 1")
            buffer[...] = data[step, replica]

        def deliver(row, replica, value):
            if where == "deliver" and row == 4:
                raise Boom(f"the deliver went wrong at row {row}")

        with pytest.raises(plexus.RunError) as info:
            session.run(callbacks={x: fill, total: deliver})
        exc = info.value
        assert exc.status == 10 and isinstance(exc, RuntimeError)
        assert isinstance(exc.__cause__, Boom)
        assert str(exc.__cause__) in str(exc) and "Boom" in str(exc)
        assert f"the {where} went wrong" in str(exc)
        assert "stream '" in str(exc)                      # the runtime's message names the stream
        # The session stays usable: the next runs give the right numbers.
        for _ in range(2):
            again = session.run({x: data})
            np.testing.assert_array_equal(again[y], expected[y])
        again = session.run(callbacks={x: lambda s, r, b: b.__setitem__(Ellipsis, data[s, r])})
        np.testing.assert_array_equal(again[total], expected[total])


def test_an_exception_in_an_asynchronous_run_surfaces_at_wait():
    ir, x, y, total = _model()
    with plexus.Session(ir, device_iterations=N) as session:
        def fill(step, replica, buffer):
            raise KeyError("missing sample")

        run = session.run_async(callbacks={x: fill})
        with pytest.raises(plexus.RunError, match="KeyError.*missing sample") as info:
            run.wait(timeout=60)
        assert isinstance(info.value.__cause__, KeyError)
        data = _data()
        # numpy's matmul sums in its own order (and Plexus's GEMM kernel is timed per
        # process): equal to float32 rounding, not bit for bit.
        np.testing.assert_allclose(session.run({x: data})[y], data @ (np.arange(15, dtype=np.float32)
                                                                       .reshape(5, 3) / 10), rtol=1e-6, atol=1e-6)


def test_writing_the_wrong_shape_into_a_fill_buffer_is_a_run_error():
    ir, x, y, total = _model()
    with plexus.Session(ir) as session:
        def fill(step, replica, buffer):
            buffer[...] = np.ones((3, 3), np.float32)      # numpy refuses to broadcast

        with pytest.raises(plexus.RunError, match="ValueError") as info:
            session.run(callbacks={x: fill})
        assert isinstance(info.value.__cause__, ValueError)


def test_a_deliver_buffer_is_only_valid_during_the_call():
    """The value handed to deliver is a view of the runtime's buffer: copying it keeps it."""
    ir, x, y, total = _model()
    data = _data()
    with plexus.Session(ir, device_iterations=N) as session:
        expected = session.run({x: data})[y]
        kept = []
        session.run({x: data}, callbacks={y: lambda row, r, v: kept.append((row, r, v.copy()))})
        assert len(kept) == N * R
        for row, r, value in kept:
            np.testing.assert_array_equal(value, expected.reshape(N * R, 4, 3)[row])
            assert row % R == r
