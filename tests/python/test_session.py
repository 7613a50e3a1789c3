"""plexus.Session: host array shapes ([device_iterations, R] + S, leading 1s dropped; seed
000 17.1), output modes (seed 003), asynchronous runs, the figures a session reports, and
zero-copy passing of the caller's arrays to the C API."""
import threading

import numpy as np
import pytest

import plexus
import plexus.session
from plexus import ops
from plexus._lib import ffi


def _affine_ir(replication, shape=(4, 3)):
    """y = x * w + b per step and replica; w, b variables; x an input stream."""
    ir = plexus.Ir(replication=replication)
    with ir.main_graph:
        x = plexus.h2d_stream(shape, plexus.float32, name="x")
        w = plexus.variable(np.full(shape, 2.0, np.float32), name="w")
        b = plexus.variable(np.float32(0.5), name="b")
        y = ops.add(ops.mul(ops.host_load(x), w), b)
        y_d2h = plexus.d2h_stream(y, name="y")
    return ir, x, y_d2h


def _drop_ones(*dims):
    return tuple(d for d in dims if d != 1)


@pytest.mark.parametrize("replication", [1, 2, 4])
@pytest.mark.parametrize("device_iterations", [1, 3])
@pytest.mark.parametrize("shape", [(4, 3), (1, 5), ()])
def test_host_shapes_drop_leading_ones(replication, device_iterations, shape):
    ir, x, y = _affine_ir(replication, shape)
    with plexus.Session(ir, device_iterations=device_iterations) as session:
        expected = _drop_ones(device_iterations, replication) + shape
        assert session.host_shape(x) == expected
        assert session.host_shape(y) == expected
        data = np.random.default_rng(0).standard_normal(expected).astype(np.float32)
        out = session.run({x: data})
        assert list(out) == [y]
        assert out[y].shape == expected and out[y].dtype == np.float32
        np.testing.assert_allclose(out[y], data * 2.0 + 0.5, rtol=1e-6)


def test_each_step_and_replica_reads_its_own_row():
    ir, x, y = _affine_ir(2, (3,))
    with plexus.Session(ir, device_iterations=4) as session:
        data = np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3)
        out = session.run({x: data})[y]
        np.testing.assert_array_equal(out, data * 2 + 0.5)


def _counting_ir(replication):
    """A counter variable incremented each step; y = counter * (replica's input)."""
    ir = plexus.Ir(replication=replication)
    with ir.main_graph:
        x = plexus.h2d_stream((2,), plexus.float32, name="x")
        count = plexus.variable(np.zeros((), np.float32), name="count")
        counted = count
        counted += 1.0          # PopXL's `+=`: add_ in place; `counted` still names the variable
        y = plexus.d2h_stream(ops.mul(ops.host_load(x), counted), name="y")
    return ir, x, y, count


@pytest.mark.parametrize("mode,period", [("all", None), ("final", None), ("sum", None), ("every_n", 2)])
def test_output_modes(mode, period):
    R, N = 2, 4
    ir, x, y, count = _counting_ir(R)
    options = dict(device_iterations=N, output_mode=mode)
    if period:
        options["output_return_period"] = period
    with plexus.Session(ir, **options) as session:
        data = np.ones((N, R, 2), np.float32) * np.array([1, 10], np.float32)[None, :, None]
        out = session.run({x: data})[y]
        steps = np.arange(1, N + 1, dtype=np.float32)[:, None, None] * data    # step i multiplies by i + 1
        expected = {"all": steps, "final": steps[-1], "sum": steps.sum(axis=0),
                    "every_n": steps[(period or 1) - 1::period]}[mode]
        assert out.shape == session.host_shape(y) == expected.shape
        np.testing.assert_array_equal(out, expected)
        assert session.get_tensor_data(count) == N
        assert session.step == N


def test_gradient_accumulation_multiplies_the_input_steps():
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        x = plexus.h2d_stream((3,), plexus.float32, name="x")
        w = plexus.variable(np.zeros(3, np.float32), name="w")
        loss = ops.reduce_sum(ops.mul(ops.host_load(x), w))
        loss_d2h = plexus.d2h_stream(loss, name="loss")
        grad, = plexus.autodiff(loss, [w])
        ops.scaled_add_(w, grad, b=-1.0)
    with plexus.Session(ir, device_iterations=2, gradient_accumulation=3) as session:
        assert session.host_shape(x) == (6, 2, 3)
        assert session.host_shape(loss_d2h) == (2, 3, 2)      # [device_iterations, accumulation, R]
        data = np.ones((6, 2, 3), np.float32)
        loss = session.run({x: data})[loss_d2h]
        # Each weight update uses the mean of 3 micro-batches' gradients (1s): w = 0, then -1.
        np.testing.assert_array_equal(loss, np.stack([np.zeros((3, 2)), np.full((3, 2), -3.0)]))
        np.testing.assert_array_equal(session.get_tensor_data(w), [-2.0, -2.0, -2.0])
        assert session.step == 2


def test_inputs_are_not_modified_and_outputs_are_fresh_arrays():
    ir, x, y = _affine_ir(1, (3,))
    with plexus.Session(ir) as session:
        data = np.array([1, 2, 3], np.float32)
        first = session.run({x: data})[y]
        second = session.run({x: data})[y]
        np.testing.assert_array_equal(data, [1, 2, 3])
        assert first is not second and not np.shares_memory(first, second)
        np.testing.assert_array_equal(first, second)


class _RecordingLib:
    """Stands in for plexus.session's `lib`: records the data pointers of every host array
    handed to plx_session_run / plx_session_run_async, then calls the real function."""

    def __init__(self, real):
        self._real, self.pointers = real, []

    def __getattr__(self, name):
        return getattr(self._real, name)

    def _record(self, arrays, count):
        self.pointers.append([int(ffi.cast("uintptr_t", arrays[i].data)) for i in range(count)])

    def plx_session_run(self, session, inputs, num_inputs, outputs, num_outputs):
        self._record(inputs, num_inputs)
        self._record(outputs, num_outputs)
        return self._real.plx_session_run(session, inputs, num_inputs, outputs, num_outputs)

    def plx_session_run_async(self, session, options, out):
        self._record(options.inputs, options.num_inputs)
        self._record(options.outputs, options.num_outputs)
        return self._real.plx_session_run_async(session, options, out)


def test_input_arrays_reach_the_c_api_without_a_copy(monkeypatch):
    recording = _RecordingLib(plexus.session.lib)
    monkeypatch.setattr(plexus.session, "lib", recording)
    ir, x, y = _affine_ir(2, (1000,))
    with plexus.Session(ir, device_iterations=3) as session:
        data = np.ones((3, 2, 1000), np.float32)
        out = session.run({x: data})[y]
        (inputs, outputs), = [recording.pointers[i:i + 2] for i in range(0, len(recording.pointers), 2)]
        assert inputs == [data.ctypes.data]
        assert outputs == [out.ctypes.data]     # the returned array is the one the runtime wrote
        # A view into a bigger array (C-contiguous) is passed in place too.
        big = np.ones((5, 3, 2, 1000), np.float32)
        recording.pointers.clear()
        out = session.run_async({x: big[2]}).wait()[y]
        assert recording.pointers == [[big[2].ctypes.data], [out.ctypes.data]]
        np.testing.assert_array_equal(out, np.full((3, 2, 1000), 2.5, np.float32))


def test_the_runtime_reads_the_callers_memory_at_run_time():
    """The array given to run_async is read during the run, not copied at the call: a
    change made while the run waits on a gating callback shows in its output."""
    ir = plexus.Ir()
    with ir.main_graph:
        gate = plexus.h2d_stream((1,), plexus.float32, name="gate")
        x = plexus.h2d_stream((4,), plexus.float32, name="x")
        # gate is add's first operand, so each step loads gate (and waits in its callback)
        # before it loads x: a step loads its streams in the order its ops read them. With
        # x first, step 0 read x before the assignment below whenever the device thread
        # got there first (it did once in CI's ASan pass; always with a 50 ms sleep).
        y = plexus.d2h_stream(ops.add(ops.host_load(gate), ops.host_load(x)), name="y")
    release = threading.Event()

    def fill_gate(step, replica, buffer):
        assert release.wait(30)
        buffer[:] = 0.0

    with plexus.Session(ir, device_iterations=2, prefetch_depth=0) as session:
        data = np.zeros((2, 4), np.float32)
        run = session.run_async({x: data}, callbacks={gate: fill_gate})
        data[:] = 7.0            # written before any step can have read x
        release.set()
        np.testing.assert_array_equal(run.wait(30)[y], np.full((2, 4), 7.0))


def test_run_async_and_wait_with_a_timeout():
    """A run held back by a gating fill callback: run_async returns at once, wait(timeout)
    raises StillRunning while it is held, and returns the outputs once it is let go."""
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        gate = plexus.h2d_stream((), plexus.float32, name="gate")
        x = plexus.h2d_stream((3,), plexus.float32, name="x")
        # gate is add's first operand, so each step loads gate (and waits in its callback)
        # before it loads x: a step loads its streams in the order its ops read them. With
        # x first, step 0 read x before the assignment below whenever the device thread
        # got there first (it did once in CI's ASan pass; always with a 50 ms sleep).
        y = plexus.d2h_stream(ops.add(ops.host_load(gate), ops.host_load(x)), name="y")
    release = threading.Event()

    def fill_gate(step, replica, buffer):
        assert release.wait(60)
        buffer[...] = 100.0

    with plexus.Session(ir, device_iterations=3) as session:
        data = np.arange(18, dtype=np.float32).reshape(3, 2, 3)
        run = session.run_async({x: data}, callbacks={gate: fill_gate})
        with pytest.raises(plexus.StillRunning, match="wait again"):
            run.wait(timeout=0.05)
        with pytest.raises(plexus.StillRunning):
            run.wait(timeout=0)
        queued = session.run_async({x: data * 2}, callbacks={gate: lambda step, replica, b: b.fill(0)})
        with pytest.raises(plexus.StillRunning):
            queued.wait(timeout=0.01)              # runs execute in order: it waits behind the first
        release.set()
        out = run.wait(timeout=60)
        np.testing.assert_array_equal(out[y], data + 100)
        assert run.wait(0)[y] is out[y]             # a finished run answers at once, again
        np.testing.assert_array_equal(queued.wait(timeout=60)[y], data * 2)
        # Several runs in flight complete in order, each with its own arrays.
        runs = [session.run_async({x: data + k}, callbacks={gate: lambda s, r, b: b.fill(0)}) for k in range(5)]
        for k, r in enumerate(runs):
            np.testing.assert_array_equal(r.wait(60)[y], data + k)
        assert session.step == 7 * 3


def test_figures_memory_storage_streams_report_and_trace():
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        x = plexus.h2d_stream((16, 32), plexus.float32, name="x")
        w = plexus.variable(np.ones((32, 8), np.float32), name="w")
        plexus.d2h_stream(ops.matmul(ops.host_load(x), w), name="y")
    with plexus.Session(ir, device_iterations=5, profile=True) as session:
        assert session.num_devices == 2
        assert session.replicas.items() >= dict(replication_factor=2, num_workers=1, worker_index=0,
                                                first_local_replica=0, local_replicas=2).items()
        session.run({x: np.ones((5, 2, 16, 32), np.float32)})
        memory = session.memory_stats(1)
        assert memory["variable_bytes"] == 32 * 8 * 4
        assert memory["current_bytes"] == memory["variable_bytes"]
        assert memory["arena_bytes"] >= memory["planned_peak_bytes"] >= memory["variable_bytes"]
        assert memory["peak_bytes"] >= 32 * 8 * 4 + 16 * 32 * 4
        assert (memory["remote_buffer_bytes"], memory["offloaded_bytes"]) == (0, 0)
        storage = session.variable_storage(w)
        assert storage.items() >= dict(device_bytes=32 * 8 * 4, remote_bytes=0, shard_over=1).items()
        stats = session.stream_stats()
        assert stats["h2d_bytes"] == 5 * 2 * 16 * 32 * 4
        assert stats["d2h_bytes"] == 5 * 2 * 16 * 8 * 4
        assert stats["micro_batches"] == 5 * 2
        assert stats["run_ns"] > 0 and stats["prefetch_depth"] == 2
        assert 0 <= stats["mean_occupancy"] <= 2 and stats["exposed_wait_ns"] >= 0
        report = session.report()
        assert (report["replication_factor"], report["device_iterations"]) == (2, 5)
        assert len(report["devices"]) == 2
        trace = session.trace()
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        assert len(events) >= 10
        assert {e["pid"] for e in events} >= {0, 1}
        assert trace["otherData"]["run_seconds"] > 0
    with plexus.Session(ir) as plain, pytest.raises(plexus.InvalidArgument, match="profile"):
        plain.trace()


def test_session_options_are_checked():
    ir, x, y = _affine_ir(1)
    with pytest.raises(plexus.InvalidArgument, match="device_iterations"):
        plexus.Session(ir, device_iterations=0)
    with pytest.raises(plexus.InvalidArgument, match="output_mode"):
        plexus.Session(ir, output_mode="most")
    with pytest.raises(TypeError, match="unknown option 'colour'"):
        plexus.Session(ir, colour="red")
    with plexus.Session(ir, device_iterations=4, output_mode="every_n", output_return_period=2) as session:
        assert session.host_shape(y) == (2, 4, 3)


def test_cancelling_one_run_leaves_the_next_one_running():
    """Run.cancel ends that run only (plx_run_cancel): the held run raises Cancelled once let
    go, the run queued behind it returns its outputs."""
    ir = plexus.Ir()
    with ir.main_graph:
        gate = plexus.h2d_stream((1,), plexus.float32, name="gate")
        x = plexus.h2d_stream((4,), plexus.float32, name="x")
        y = plexus.d2h_stream(ops.add(ops.host_load(gate), ops.host_load(x)), name="y")
    entered, release = threading.Event(), threading.Event()

    def fill_gate(step, replica, buffer):
        entered.set()
        assert release.wait(30)
        buffer[:] = 0.0

    def fill_zero(step, replica, buffer):
        buffer[:] = 0.0

    with plexus.Session(ir, prefetch_depth=0) as session:
        held = session.run_async({x: np.zeros(4, np.float32)}, callbacks={gate: fill_gate})
        assert entered.wait(30)
        after = session.run_async({x: np.arange(4, dtype=np.float32)}, callbacks={gate: fill_zero})
        held.cancel()
        release.set()
        with pytest.raises(plexus.Cancelled, match="plx_run_cancel"):
            held.wait(30)
        np.testing.assert_array_equal(after.wait(30)[y], [0, 1, 2, 3])


def _report_total(step):
    return sum(step["bytes"].values())


def test_memory_report_sums_equal_the_memory_stats():
    """The memory report (docs/profiling.md) of a replicated session: one device per
    replica, its largest step the planned peak, its figures those of memory_stats."""
    ir, x, y = _affine_ir(2)
    with plexus.Session(ir, device_iterations=3) as session:
        report = session.memory_report()
        assert (report["schema"], report["version"], report["replication_factor"]) == ("plexus.memory_report", 1, 2)
        (device,) = report["devices"]
        assert device["kinds"] == ["variables", "activations", "gradients", "optimizer_state", "stream_slots", "scratch"]
        assert max(_report_total(s) for s in device["steps"]) == device["planned_peak_bytes"]
        for replica in range(2):
            stats = session.memory_stats(replica)
            for key in ("arena_bytes", "planned_peak_bytes", "variable_bytes", "remote_buffer_bytes", "offloaded_bytes"):
                assert device[key] == stats[key], key
        for step in device["steps"]:
            assert step["bytes"]["variables"] == 4 * 3 * 4 + 4  # w and b throughout
            assert step["bytes"]["gradients"] == step["bytes"]["optimizer_state"] == 0  # inference
        peak = device["peak"]
        assert peak["bytes"] == device["planned_peak_bytes"]
        assert peak["bytes"] == peak["scratch_bytes"] + sum(t["bytes"] for t in peak["tensors"])
        # At x * w: w and b, the stream slot x and the product, largest first.
        assert {t["name"]: (t["kind"], t["bytes"]) for t in peak["tensors"]} == {
            "w": ("variables", 48), "b": ("variables", 4), "x": ("stream_slots", 48), "mul#0": ("activations", 48)}
        assert [t["bytes"] for t in peak["tensors"]] == sorted((t["bytes"] for t in peak["tensors"]), reverse=True)
        assert {v["name"]: v["device_bytes"] for v in device["variables"]} == {"w": 48, "b": 4}
    with pytest.raises(plexus.InvalidArgument, match="closed"):
        session.memory_report()
