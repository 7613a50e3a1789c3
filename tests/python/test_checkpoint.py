"""Checkpoints from Python (docs/checkpoint-format.md): save and load, synchronous and
asynchronous, restore every variable bit for bit, the step and the caller's counters, and
training resumed from a checkpoint continues exactly as without the break."""
import numpy as np
import pytest

import plexus
from plexus import ops

R = 2


def _trainer():
    """A small model with every kind of state: a replicated weight trained with AdamW
    (moments and step), a per-replica grouped variable, a replica-sharded variable, a
    remote variable and a uint8 and int32 variable; one loss per step."""
    rng = np.random.default_rng(2)
    ir = plexus.Ir(replication=R)
    with ir.main_graph, plexus.in_sequence():
        x = plexus.h2d_stream((4, 6), plexus.float32, name="x")
        w = plexus.variable(rng.standard_normal((6, 3)).astype(np.float32), name="w")
        m = plexus.variable(np.zeros((6, 3), np.float32), name="w_m")
        v = plexus.variable(np.zeros((6, 3), np.float32), name="w_v")
        step = plexus.variable(np.float32(0), name="w_step")
        per_replica = plexus.variable(rng.standard_normal((R, 3)).astype(np.float32), name="bias",
                                      replica_grouping=ir.replica_grouping(group_size=1))
        sharded, shard = plexus.replica_sharded_variable(rng.standard_normal(5).astype(np.float32), name="rts")
        buffer = plexus.remote_buffer((3,), plexus.int32)
        counter = plexus.remote_variable(np.array([1, 2, 3]), buffer, 0, name="remote")
        flags = plexus.variable(np.array([1, 0, 255], np.uint8), name="flags")
        ints = plexus.variable(np.array([-5, 7], np.int32), name="ints")
        y = ops.add(ops.matmul(ops.host_load(x), w), per_replica)
        loss = ops.reduce_mean(y * y)
        loss_d2h = plexus.d2h_stream(loss, name="loss")
        grad, = plexus.autodiff(loss, [w])
        ops.adamw_(w, ops.collectives.replicated_all_reduce(grad, op="mean"), m, v, step, lr=0.05)
        ops.scaled_add_(shard, ops.collectives.replica_sharded_slice(
            ops.collectives.replicated_all_gather(shard)), a=0.5)
        loaded = ops.remote_load(buffer, 0)
        ops.remote_store(buffer, 0, ops.add(loaded, 1))
    variables = [w, m, v, step, per_replica, sharded, counter, flags, ints]
    return ir, x, loss_d2h, variables


def _batches(n):
    rng = np.random.default_rng(4)
    return [rng.standard_normal((2, R, 4, 6)).astype(np.float32) for _ in range(n)]


def _assert_bitwise_equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("asynchronous", [False, True])
def test_round_trip_restores_variables_bit_for_bit_step_and_counters(tmp_path, asynchronous):
    ir, x, loss, variables = _trainer()
    batches = _batches(5)
    path = tmp_path / "state.plxckpt"
    with plexus.Session(ir, device_iterations=2) as session:
        for data in batches[:2]:
            session.run({x: data})
        assert session.step == 4
        saved = session.get_tensors_data(variables)
        counters = {"epoch": 3, "position": 2**40 + 1, "negative": -7}
        if asynchronous:
            handle = session.save_checkpoint_async(path, counters=counters, level=5, threads=2)
            session.run({x: batches[2]})            # runs go on while the file is written
            handle.wait(timeout=60)
            handle.wait(timeout=0)                  # a finished save answers at once
        else:
            session.save_checkpoint(path, counters=counters, level=1)
            session.run({x: batches[2]})
        assert path.stat().st_size > 0
        changed = session.get_tensors_data(variables)
        assert any(changed[t].tobytes() != saved[t].tobytes() for t in variables)
        # Load into the same session, then into a fresh one.
        assert session.load_checkpoint(path, counters=["epoch", "position", "negative"]) == counters
        assert session.step == 4
        for t in variables:
            _assert_bitwise_equal(session.get_tensor_data(t), saved[t])
    with plexus.Session(ir, device_iterations=2) as fresh:
        assert fresh.load_checkpoint(path, counters=["position"]) == {"position": 2**40 + 1}
        assert fresh.step == 4
        for t in variables:
            _assert_bitwise_equal(fresh.get_tensor_data(t), saved[t])
        with pytest.raises(plexus.NotFound, match="'missing'"):
            fresh.load_checkpoint(path, counters=["missing"])


def test_training_resumed_from_a_checkpoint_continues_identically(tmp_path):
    ir, x, loss, variables = _trainer()
    batches = _batches(6)
    path = tmp_path / "resume.plxckpt"
    with plexus.Session(ir, device_iterations=2) as straight:
        losses = [straight.run({x: b})[loss] for b in batches]
        final = straight.get_tensors_data(variables)
    with plexus.Session(ir, device_iterations=2) as first:
        for b in batches[:3]:
            first.run({x: b})
        first.save_checkpoint(path, counters={"next_batch": 3})
    with plexus.Session(ir, device_iterations=2) as second:
        start = second.load_checkpoint(path, counters=["next_batch"])["next_batch"]
        resumed = [second.run({x: b})[loss] for b in batches[start:]]
        for a, b in zip(resumed, losses[start:]):
            _assert_bitwise_equal(a, b)
        for t in variables:
            _assert_bitwise_equal(second.get_tensor_data(t), final[t])
        assert second.step == 12


def test_a_checkpoint_loads_into_another_replication_factor(tmp_path):
    def build(replication):
        ir = plexus.Ir(replication=replication)
        with ir.main_graph:
            w = plexus.variable(np.arange(12, dtype=np.float32).reshape(3, 4), name="w")
            rts, _ = plexus.replica_sharded_variable(np.arange(10, dtype=np.float32), name="rts")
        return ir, w, rts

    ir2, w2, rts2 = build(2)
    path = tmp_path / "r2.plxckpt"
    with plexus.Session(ir2) as s2:
        s2.write_variable_data(w2, np.full((3, 4), 9.5))
        s2.write_variable_data(rts2, np.arange(10, dtype=np.float32) * -1)
        s2.save_checkpoint(path)
    ir4, w4, rts4 = build(4)
    with plexus.Session(ir4) as s4:
        s4.load_checkpoint(path)
        np.testing.assert_array_equal(s4.get_tensor_data(w4), np.full((3, 4), 9.5))
        np.testing.assert_array_equal(s4.get_tensor_data(rts4), np.arange(10) * -1.0)
        assert s4.variable_storage(rts4)["device_bytes"] == 3 * 4          # ceil(10 / 4) floats


def test_strict_and_lenient_loading(tmp_path):
    def build(extra):
        ir = plexus.Ir()
        with ir.main_graph:
            a = plexus.variable(np.array([1, 2], np.float32), name="a")
            if extra:
                plexus.variable(np.array([3], np.int32), name="extra")
        return ir, a

    path = tmp_path / "small.plxckpt"
    ir, a = build(extra=True)
    with plexus.Session(ir) as session:
        session.write_variable_data(a, [5, 6])
        session.save_checkpoint(path, shuffle="on")
    ir, a = build(extra=False)
    with plexus.Session(ir) as session:
        with pytest.raises(plexus.InvalidArgument, match="extra"):
            session.load_checkpoint(path)
        np.testing.assert_array_equal(session.get_tensor_data(a), [1, 2])       # unchanged on error
        session.load_checkpoint(path, strict=False)
        np.testing.assert_array_equal(session.get_tensor_data(a), [5, 6])


def test_damaged_and_missing_files(tmp_path):
    ir, x, loss, variables = _trainer()
    path = tmp_path / "ok.plxckpt"
    with plexus.Session(ir) as session:
        session.save_checkpoint(path)
        before = session.get_tensors_data(variables)
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        damaged = tmp_path / "damaged.plxckpt"
        damaged.write_bytes(bytes(data))
        with pytest.raises(plexus.BadFormat, match="damaged.plxckpt"):
            session.load_checkpoint(damaged)
        truncated = tmp_path / "truncated.plxckpt"
        truncated.write_bytes(path.read_bytes()[:100])
        with pytest.raises(plexus.BadFormat, match="truncated.plxckpt"):
            session.load_checkpoint(truncated)
        with pytest.raises(plexus.IoError, match="absent"):
            session.load_checkpoint(tmp_path / "absent.plxckpt")
        with pytest.raises(plexus.IoError):
            session.save_checkpoint(tmp_path / "no" / "such" / "folder" / "x.plxckpt")
        with pytest.raises(plexus.IoError):
            session.save_checkpoint_async(tmp_path / "no" / "such" / "folder" / "y.plxckpt").wait(timeout=60)
        for t in variables:
            _assert_bitwise_equal(session.get_tensor_data(t), before[t])
