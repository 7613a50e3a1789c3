"""Who keeps what alive: a session outlives its Ir, tensors keep their Ir, closed sessions
refuse calls, and 10,000 runs leak nothing."""
import gc
import os
import weakref

import numpy as np
import pytest

import plexus
from plexus import ops

from conftest import SANITIZED


def _build(replication=1):
    ir = plexus.Ir(replication=replication)
    with ir.main_graph:
        x = plexus.h2d_stream((4,), plexus.float32, name="x")
        v = plexus.variable(np.arange(4, dtype=np.float32), name="v")
        y = plexus.d2h_stream(ops.mul(ops.host_load(x), v), name="y")
    return ir, x, v, y


def test_a_session_runs_after_its_ir_is_dropped():
    ir, x, v, y = _build(2)
    session = plexus.Session(ir, device_iterations=2)
    ir_ref = weakref.ref(ir)
    streams = (x.id, y.id)
    del ir
    gc.collect()
    data = np.ones((2, 2, 4), np.float32)
    out = session.run({x: data})
    np.testing.assert_array_equal(out[y], data * np.arange(4))
    np.testing.assert_array_equal(session.get_tensor_data(v), np.arange(4))
    assert (x.id, y.id) == streams
    # The session (and the streams) are what keeps the Ir; once they go, it goes.
    del session, x, v, y, out
    gc.collect()
    assert ir_ref() is None


def test_the_c_session_does_not_need_the_c_ir():
    """plx_session_create copies what it needs: destroying the plx_ir under a live session
    is fine (the package never does it early; this checks the C side it relies on)."""
    ir, x, v, y = _build()
    session = plexus.Session(ir)
    assert (x.dtype, y.dtype) == (plexus.float32, plexus.float32)   # tensors cache their type
    ir._ptr = None                 # releases the cffi gc handle: plx_ir_destroy runs now
    gc.collect()
    np.testing.assert_array_equal(session.run({x: np.full(4, 2.0, np.float32)})[y], 2 * np.arange(4))
    session.close()


def test_tensors_and_streams_keep_their_ir_alive():
    def make():
        ir, x, v, y = _build()
        with ir.main_graph:
            w = ops.add(v, 1.0)
        return weakref.ref(ir), w, x

    ir_ref, w, x = make()
    gc.collect()
    assert ir_ref() is not None
    assert (w.shape, w.dtype) == ((4,), plexus.float32)     # the C IR is still there to ask
    with w.ir.main_graph:
        z = ops.mul(w, w)
    assert z.shape == (4,)
    del w, z
    gc.collect()
    assert ir_ref() is not None            # the stream still holds it
    del x
    gc.collect()
    assert ir_ref() is None


CLOSED_CALLS = {
    "run": lambda s, x, v, y: s.run({x: np.ones(4, np.float32)}),
    "run_async": lambda s, x, v, y: s.run_async({x: np.ones(4, np.float32)}),
    "cancel": lambda s, x, v, y: s.cancel(),
    "host_shape": lambda s, x, v, y: s.host_shape(x),
    "get_tensor_data": lambda s, x, v, y: s.get_tensor_data(v),
    "write_variable_data": lambda s, x, v, y: s.write_variable_data(v, np.zeros(4)),
    "weights_to_host": lambda s, x, v, y: s.weights_to_host(),
    "save_checkpoint": lambda s, x, v, y: s.save_checkpoint("/nonexistent/never-written"),
    "save_checkpoint_async": lambda s, x, v, y: s.save_checkpoint_async("/nonexistent/never-written"),
    "load_checkpoint": lambda s, x, v, y: s.load_checkpoint("/nonexistent/never-read"),
    "step": lambda s, x, v, y: s.step,
    "num_devices": lambda s, x, v, y: s.num_devices,
    "replicas": lambda s, x, v, y: s.replicas,
    "memory_stats": lambda s, x, v, y: s.memory_stats(),
    "variable_storage": lambda s, x, v, y: s.variable_storage(v),
    "stream_stats": lambda s, x, v, y: s.stream_stats(),
    "report": lambda s, x, v, y: s.report(),
    "trace": lambda s, x, v, y: s.trace(),
}


@pytest.mark.parametrize("name", sorted(CLOSED_CALLS))
def test_a_closed_session_refuses_every_call(name):
    ir, x, v, y = _build()
    session = plexus.Session(ir, profile=True)
    session.run({x: np.ones(4, np.float32)})      # caches the host shapes
    session.close()
    session.close()                              # idempotent
    with pytest.raises(plexus.InvalidArgument, match="closed"):
        CLOSED_CALLS[name](session, x, v, y)


def test_the_context_manager_closes_and_a_run_in_flight_is_cancelled_or_finished():
    ir = plexus.Ir()
    with ir.main_graph:
        w = plexus.variable(np.full((128, 128), 1 / 128, np.float32), name="w")
        t = plexus.variable(np.ones((128, 128), np.float32), name="t")
        for _ in range(8):
            t = ops.matmul(t, w)
        plexus.d2h_stream(ops.reduce_sum(t), name="y")
    with plexus.Session(ir, device_iterations=2000, output_mode="final", threads_per_device=1) as session:
        run = session.run_async()
    with pytest.raises(plexus.InvalidArgument, match="closed"):
        session.run()
    with pytest.raises(plexus.Cancelled):
        run.wait(timeout=60)
    del run
    gc.collect()


def test_a_run_keeps_its_arrays_and_callbacks_alive():
    ir, x, v, y = _build()
    with plexus.Session(ir, device_iterations=3) as session:
        data = np.ones((3, 4), np.float32) * 5
        got = []
        run = session.run_async({x: data}, callbacks={y: lambda row, r, value: got.append(value.sum())})
        del data
        gc.collect()
        run.wait(timeout=60)
        assert got == [5 * 6] * 3


def test_a_loader_keeps_its_dataset_alive():
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "data", "mnist")
    if not os.path.exists(os.path.join(folder, "t10k-labels-idx1-ubyte")):
        pytest.skip("no MNIST files in data/mnist")
    dataset = plexus.Dataset.mnist(folder, train=False)
    ref = weakref.ref(dataset)
    loader = plexus.Loader(dataset, batch_size=10, shuffle=False)
    del dataset
    gc.collect()
    assert ref() is not None
    images, labels = next(iter(loader))
    assert images.shape == (10, 28, 28) and labels.shape == (10,)
    del loader, images, labels
    gc.collect()
    assert ref() is None


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leak_over_10000_runs():
    ir, x, v, y = _build(2)
    total = 2_000 if SANITIZED else 10_000
    warmup = total // 10
    with plexus.Session(ir, device_iterations=2) as session:
        data = np.ones((2, 2, 4), np.float32)

        def fill(step, replica, buffer):
            buffer[...] = 1.0

        def one(i):
            kind = i % 4
            if kind == 0:
                return session.run({x: data})
            if kind == 1:
                return session.run_async({x: data}).wait()
            if kind == 2:
                return session.run(callbacks={x: fill})
            try:                                       # a refused run: its error path
                session.run({x: data[0]})
            except plexus.ShapeMismatch:
                return None

        for i in range(warmup):
            one(i)
        gc.collect()
        after_warmup = _rss_bytes()
        for i in range(warmup, total):
            out = one(i)
            if out is not None:
                assert out[y][1, 1, 3] == 3.0
        gc.collect()
        after_all = _rss_bytes()
    growth = after_all - after_warmup
    print(f"RSS after {warmup} runs: {after_warmup / 2**20:.1f} MiB, after {total}: {after_all / 2**20:.1f} MiB, "
          f"growth {growth / 2**10:.0f} KiB")
    if not SANITIZED:      # ASan holds freed memory in its quarantine (256 MB): RSS says nothing there
        assert growth < 4 * 2**20
