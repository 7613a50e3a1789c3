"""popxl's scopes and location names (bindings/python/popxl/context.py, random_seed.py,
tensorlocation.py): create_seeds' values, shape and dtype against PopXL's rule computed here
another way; name_scope's names for named, unnamed, nested and subgraph tensors, and a run
reading a scoped variable; ipu / io_tiles argument checks and nesting; the TensorLocation
family's fields; the errors for bad arguments."""
import numpy as np
import pytest

import plexus
import popxl
import popxl.context


def _expected_seeds(seed, count):
    # PopXL's rule, split through binary strings instead of shifts: the high 32 bits first.
    draws = np.random.default_rng(seed).integers(0, 2 ** 64 - 1, endpoint=True, dtype="uint64", size=count)
    bits = [f"{int(d):064b}" for d in draws]
    return np.array([[int(b[:32], 2), int(b[32:], 2)] for b in bits], dtype=np.uint32)


def test_create_seeds_default_is_one_pair():
    seeds = popxl.create_seeds(42)
    assert seeds.dtype == np.uint32 and seeds.shape == (2,)
    np.testing.assert_array_equal(seeds, _expected_seeds(42, 1)[0])
    np.testing.assert_array_equal(seeds, popxl.create_seeds(42))
    assert not np.array_equal(seeds, popxl.create_seeds(43))


def test_create_seeds_shape_offset_and_values():
    seeds = popxl.create_seeds(7, offset=3, batches_per_step=3, gradient_accumulation_factor=2, replicas=4)
    assert seeds.dtype == np.uint32 and seeds.shape == (3, 2, 4, 2)
    np.testing.assert_array_equal(seeds.reshape(24, 2), _expected_seeds(10, 24))
    np.testing.assert_array_equal(popxl.create_seeds(10, batches_per_step=3, gradient_accumulation_factor=2,
                                                     replicas=4), seeds)
    assert popxl.create_seeds(1, replicas=5).shape == (5, 2)  # dims of size 1 dropped, as PopXL's
    assert popxl.create_seeds(1, batches_per_step=4, replicas=2).shape == (4, 2, 2)
    assert len({tuple(s) for s in seeds.reshape(24, 2)}) == 24


@pytest.mark.parametrize("kwargs, error, word", [
    ({"seed": 1.5}, TypeError, "seed"),
    ({"seed": -1}, ValueError, r"seed \+ offset"),
    ({"seed": 1, "batches_per_step": 0}, ValueError, "batches_per_step"),
    ({"seed": 1, "replicas": True}, TypeError, "replicas"),
    ({"seed": 1, "gradient_accumulation_factor": -2}, ValueError, "gradient_accumulation_factor"),
])
def test_create_seeds_bad_arguments(kwargs, error, word):
    with pytest.raises(error, match=word):
        popxl.create_seeds(**kwargs)


def test_name_scope_prefixes_tensor_names():
    ir = popxl.Ir()
    with ir.main_graph:
        outside = popxl.variable(np.zeros(2, np.float32), name="w")
        with popxl.name_scope("enc") as scopes:
            assert scopes == ["enc"]
            w = popxl.variable(np.arange(3, dtype=np.float32), name="w")
            a = popxl.variable(np.zeros(1, np.float32))
            b = popxl.variable(np.zeros(1, np.float32))
            c = popxl.constant(np.ones(1, np.float32), name="c")
            with popxl.name_scope("layer0") as inner:
                assert inner == ["enc", "layer0"]
                x = popxl.h2d_stream((2,), popxl.float32, name="x")
                y = popxl.d2h_stream((2,), popxl.float32, name="y")
                z = popxl.d2h_stream((2,), popxl.float32)
        after = popxl.variable(np.zeros(1, np.float32))
        popxl.ops.host_store(popxl.d2h_stream((3,), popxl.float32), w + 1.0)
    assert (outside.name, w.name, a.name, b.name, c.name) == ("w", "enc/w", "enc/variable", "enc/variable_1", "enc/c")
    assert x.name == "enc/layer0/x" and after.name == "variable"
    assert (y.name, z.name) == ("enc/layer0/y", "enc/layer0/d2h_stream")
    with popxl.Session(ir) as session:
        np.testing.assert_array_equal(session.get_tensor_data(w), [0.0, 1.0, 2.0])


def test_name_scope_applies_to_subgraph_inputs():
    ir = popxl.Ir()
    graph = ir.create_empty_graph("sub")
    with graph, popxl.name_scope("blk"):
        t = popxl.graph_input((2,), popxl.float32, "t")
        u = popxl.graph_input((2,), popxl.float32)
    assert (t.name, u.name) == ("blk/t", "blk/input")


def test_name_scope_closes_on_error_and_refuses_bad_names():
    with pytest.raises(RuntimeError):
        with popxl.name_scope("a"):
            raise RuntimeError("inside")
    with popxl.name_scope("b") as scopes:
        assert scopes == ["b"]
    for bad in ("", 3, None):
        with pytest.raises(plexus.InvalidArgument, match="name_scope"):
            with popxl.name_scope(bad):
                pass


def test_ipu_and_io_tiles_record_the_scope():
    assert popxl.context.current_ipu() == 0 and not popxl.context.in_io_tiles()
    with popxl.ipu(2) as index:
        assert index == 2 and popxl.context.current_ipu() == 2
        with popxl.ipu(0), popxl.io_tiles():
            assert popxl.context.current_ipu() == 0 and popxl.context.in_io_tiles()
        assert popxl.context.current_ipu() == 2 and not popxl.context.in_io_tiles()
    assert popxl.context.current_ipu() == 0


@pytest.mark.parametrize("bad, error", [(1.0, TypeError), ("1", TypeError), (True, TypeError), (-1, ValueError)])
def test_ipu_refuses_bad_indices(bad, error):
    with pytest.raises(error, match="ipu"):
        with popxl.ipu(bad):
            pass
    assert popxl.context.current_ipu() == 0


def test_ipu_scope_does_not_change_the_results():
    ir = popxl.Ir()
    with ir.main_graph, popxl.ipu(1), popxl.io_tiles():
        w = popxl.variable(np.array([1.0, 2.0], np.float32), name="w")
        popxl.ops.host_store(popxl.d2h_stream((2,), popxl.float32), w * 3.0)
    with popxl.Session(ir) as session:
        np.testing.assert_array_equal(session.get_tensor_data(w), [1.0, 2.0])


def test_tensor_location_family():
    loc = popxl.TensorLocation()
    assert loc.storage is popxl.TensorStorage.OnChip
    assert loc.replicated_tensor_sharding is popxl.ReplicatedTensorSharding.Off
    off = popxl.TensorLocation(popxl.TensorStorage.OffChip, popxl.ReplicatedTensorSharding.On)
    assert (off.storage.value, off.replicated_tensor_sharding.value) == ("OffChip", "On")
    assert off == popxl.TensorLocation(popxl.TensorStorage.OffChip, popxl.ReplicatedTensorSharding.On) and off != loc
    assert [m.value for m in popxl.TileSet] == [0, 1, 2, 3] and popxl.TileSet.IO.name == "IO"
    assert [m.name for m in popxl.ExecutionContext][:2] == ["Normal", "AccumulateOuterFragment"]
    assert len(popxl.ExecutionContext) == 6
    with pytest.raises(TypeError, match="storage"):
        popxl.TensorLocation("OnChip")
    with pytest.raises(TypeError, match="replicated_tensor_sharding"):
        popxl.TensorLocation(popxl.TensorStorage.OnChip, True)
