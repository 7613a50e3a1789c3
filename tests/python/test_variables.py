"""plexus.variables: variables, constants, streams, remote buffers and replica-sharded
variables (seed 000 17.2), checked by reading them back from a session and by what the
devices compute with them."""
import math

import numpy as np
import pytest

import plexus
from plexus import ops


def test_dtypes_downcast_and_shapes():
    ir = plexus.Ir()
    with ir.main_graph:
        f = plexus.variable(np.arange(6.0).reshape(2, 3), name="f")          # float64 -> float32
        i = plexus.variable(np.arange(4), name="i")                           # int64 -> int32
        b = plexus.variable(np.array([True, False]), name="b")               # bool stays bool
        s = plexus.variable(2.5, name="s")                                    # a Python scalar: shape ()
        u = plexus.variable([1, 2, 3], dtype=plexus.uint8, name="u")
        c = plexus.constant(np.float32(7))
        with pytest.raises(plexus.DTypeMismatch, match="float64"):
            plexus.variable(np.zeros(2), downcast=False)
    assert [(t.dtype, t.shape) for t in (f, i, b, s, u, c)] == [
        (plexus.float32, (2, 3)), (plexus.int32, (4,)), (plexus.dtypes.bool_, (2,)), (plexus.float32, ()),
        (plexus.uint8, (3,)), (plexus.float32, ())]
    assert (f.rank, f.nelms, s.rank, s.nelms) == (2, 6, 0, 1)
    assert ir.variables == [f, i, b, s, u]
    with plexus.Session(ir) as session:
        values = session.weights_to_host()
        assert list(values) == [f, i, b, s, u]
        np.testing.assert_array_equal(values[f], np.arange(6.0).reshape(2, 3))
        assert values[f].dtype == np.float32 and values[i].dtype == np.int32 and values[b].dtype == np.bool_
        np.testing.assert_array_equal(values[b], [True, False])
        assert values[s].shape == () and values[s] == np.float32(2.5)
        session.write_variable_data(s, 4)
        assert session.get_tensor_data(s) == 4.0


def test_data_is_copied_at_creation_and_non_contiguous_data_is_fine():
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    ir = plexus.Ir()
    with ir.main_graph:
        v = plexus.variable(source.T, name="v")          # a transposed (non-contiguous) view
        w = plexus.variable(source, name="w")
        y = plexus.d2h_stream(ops.add(v, 0.0), name="y")
    source[:] = -1
    with plexus.Session(ir) as session:
        np.testing.assert_array_equal(session.get_tensor_data(v), np.arange(12).reshape(3, 4).T)
        np.testing.assert_array_equal(session.run()[y], np.arange(12).reshape(3, 4).T)
        np.testing.assert_array_equal(session.get_tensor_data(w), np.arange(12).reshape(3, 4))
        new = np.full((4, 3), 5.0)
        session.weights_from_host({v: new})
        new[:] = 0
        np.testing.assert_array_equal(session.run()[y], np.full((4, 3), 5.0))


def test_names_are_unique_and_generated():
    ir = plexus.Ir()
    with ir.main_graph:
        a, b = plexus.variable(1.0), plexus.variable(2.0)
        x1, x2 = plexus.h2d_stream((2,), plexus.int32), plexus.h2d_stream((2,), plexus.int32)
        named = plexus.variable(3.0, name="weights")
        d = plexus.d2h_stream(named)
        with pytest.raises(plexus.InvalidArgument, match="weights"):
            plexus.variable(4.0, name="weights")
    assert (a.name, b.name, x1.name, x2.name, d.name) == ("variable", "variable_1", "input", "input_1", "weights_d2h")
    assert ir.h2d_streams == [x1, x2] and ir.d2h_streams == [d]
    assert "weights" in repr(named) and "float32" in repr(named)


def test_a_variable_keeps_its_updates_between_runs_and_a_constant_is_read_only():
    ir = plexus.Ir()
    with ir.main_graph:
        v = plexus.variable(np.zeros(3, np.float32), name="v")
        c = plexus.constant(np.array([1, 2, 3], np.float32))
        ops.add_(v, c)
        with pytest.raises(plexus.InvalidArgument, match="constant"):
            ops.add_(c, v)
    with plexus.Session(ir, device_iterations=4) as session:
        session.run()
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(v), [8, 16, 24])
        np.testing.assert_array_equal(session.get_tensor_data(c), [1, 2, 3])  # PopXL reads constants
        with pytest.raises(plexus.InvalidArgument, match="not a variable"):
            session.write_variable_data(c, np.zeros(3, np.float32))


def test_replica_sharded_variable_storage_and_gather():
    R = 4
    ir = plexus.Ir(replication=R)
    data = np.arange(10, dtype=np.float32)
    with ir.main_graph:
        var, shard = plexus.replica_sharded_variable(data, name="rts")
        full = ops.collectives.replicated_all_gather(shard)
        y = plexus.d2h_stream(full, name="full")
        s = plexus.d2h_stream(ops.add(shard, 0.0), name="shard")
    # The variable is its shard on the device (plexus.h): both name the [ceil(10 / R)] tensor.
    assert var.shape == shard.shape == (3,) and full.shape == (10,)
    with plexus.Session(ir) as session:
        storage = session.variable_storage(var)
        assert storage.items() >= dict(device_bytes=math.ceil(10 / R) * 4, remote_bytes=0, shard_over=R).items()
        np.testing.assert_array_equal(session.get_tensor_data(var), data)
        out = session.run()
        np.testing.assert_array_equal(out[y], np.tile(data, (R, 1)))
        padded = np.concatenate([data, [0, 0]]).reshape(R, 3)
        np.testing.assert_array_equal(out[s], padded)          # replica m keeps shard m
        session.write_variable_data(var, data * 10)
        np.testing.assert_array_equal(session.run()[s], padded * 10)


def test_seed_000_rts_training_step_matches_numpy():
    """Seed 000 17.2: W0 a replica-sharded variable used through replicated_all_gather, W1 a
    remote replica-sharded variable (remote_load, gather, update, remote_store); the
    gradients are reduce-scattered over the replicas (mean) onto the shards."""
    R, lr = 2, 0.5
    rng = np.random.default_rng(3)
    w0_data = rng.standard_normal((6, 4)).astype(np.float32)
    w1_data = rng.standard_normal((4, 3)).astype(np.float32)
    ir = plexus.Ir(replication=R)
    with ir.main_graph, plexus.in_sequence():
        x = plexus.h2d_stream((5, 6), plexus.float32, name="x")
        w0_remote, w0_shards = plexus.replica_sharded_variable(w0_data, name="W0")
        w0 = ops.collectives.replicated_all_gather(w0_shards)
        buffer = plexus.remote_buffer((w1_data.size // R,), plexus.float32, entries=R)
        w1_remote = plexus.remote_replica_sharded_variable(w1_data, buffer, 0, name="W1")
        w1_shards = ops.remote_load(buffer, 0)
        w1 = ops.collectives.replicated_all_gather(w1_shards)
        assert (w0.shape, w1.shape, w1_shards.shape) == ((6, 4), (4, 3), (6,))
        loss = ops.reduce_sum(ops.matmul(ops.matmul(ops.host_load(x), w0), w1))
        plexus.d2h_stream(loss, name="loss")
        g0, g1 = plexus.autodiff(loss, [w0, w1])
        ops.scaled_add_(w0_shards, ops.collectives.replicated_reduce_scatter(g0, op="mean"), b=-lr)
        ops.scaled_add_(w1_shards, ops.collectives.replicated_reduce_scatter(g1, op="mean"), b=-lr)
        ops.remote_store(buffer, 0, w1_shards)
    xs = rng.standard_normal((R, 5, 6)).astype(np.float32)
    with plexus.Session(ir) as session:
        storage = session.variable_storage(w1_remote)
        assert (storage["remote_bytes"], storage["shard_over"]) == (6 * 4, R)
        session.run({x: xs})
        ones = np.ones((5, 3), np.float32)
        g0_mean = np.mean([xr.T @ ones @ w1_data.T for xr in xs], axis=0)
        g1_mean = np.mean([(xr @ w0_data).T @ ones for xr in xs], axis=0)
        np.testing.assert_allclose(session.get_tensor_data(w0_remote), w0_data - lr * g0_mean, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(session.get_tensor_data(w1_remote), w1_data - lr * g1_mean, rtol=1e-5, atol=1e-5)


def test_remote_buffers_and_their_slots():
    ir = plexus.Ir(replication=2)
    with ir.main_graph, plexus.in_sequence():
        buffer = plexus.remote_buffer((3,), plexus.float32, entries=2)
        a = plexus.remote_variable(np.array([1, 2, 3], np.float32), buffer, 0, name="a")
        b = plexus.remote_variable(np.array([10, 20, 30], np.float32), buffer, 1, name="b")
        index = plexus.h2d_stream((), plexus.int32, name="index")
        loaded = ops.remote_load(buffer, ops.host_load(index))
        y = plexus.d2h_stream(ops.add(loaded, 0.0), name="loaded")
        ops.remote_store(buffer, ops.host_load(index), ops.mul(loaded, 2.0))
        with pytest.raises(plexus.InvalidArgument):
            plexus.remote_variable(np.zeros(3, np.float32), buffer, 5, name="c")
        with pytest.raises(plexus.ShapeMismatch):
            plexus.remote_variable(np.zeros(4, np.float32), buffer, 1, name="d")
    assert (buffer.shape, buffer.dtype, buffer.entries) == ((3,), plexus.float32, 2)
    with plexus.Session(ir) as session:
        assert session.memory_stats()["remote_buffer_bytes"] == 2 * 3 * 4
        out = session.run({index: np.array([1, 0], np.int32)})[y]     # replica 0 slot 1, replica 1 slot 0
        np.testing.assert_array_equal(out, [[10, 20, 30], [1, 2, 3]])
        # Reading returns one value per group (all replicas one group): replica 0's slot.
        np.testing.assert_array_equal(session.get_tensor_data(b), [20, 40, 60])
        np.testing.assert_array_equal(session.get_tensor_data(a), [1, 2, 3])


def test_positional_arguments_are_popxls():
    """PopXL's positional orders: (data, dtype, name, downcast, replica_grouping,
    retrieval_mode) for variable and replica_sharded_variable (shard_over after the
    grouping), (data, dtype, name, downcast) for constant."""
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        pairs = ir.replica_grouping(1, 1)
        v = plexus.variable(np.array([[1, 2], [3, 4]], np.float32), None, "v", True, pairs, "all_replicas")
        c = plexus.constant(np.int64(7), None, "c", True)
        s, _ = plexus.replica_sharded_variable(np.arange(4, dtype=np.float32), None, "s", True, None, 2)
        with pytest.raises(plexus.DTypeMismatch):
            plexus.constant(np.float64(1.5), None, "wide", False)  # no downcast: float64 has no Plexus dtype
        with pytest.raises(plexus.InvalidArgument, match="float8"):
            plexus.variable(np.zeros(2, np.float32), log2_scale=0)
    assert c.dtype == plexus.int32
    with plexus.Session(ir) as session:
        np.testing.assert_array_equal(session.get_tensor_data(v), [[1, 2], [3, 4]])  # all_replicas: [R] + shape
        np.testing.assert_array_equal(session.get_tensor_data(s), np.arange(4))
