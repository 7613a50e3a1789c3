"""`import popxl` (bindings/python/popxl): PopXL's own spellings over plexus. Sessions with
device_desc and attach / detach contexts, d2h_stream + host_store, num_host_transfers,
the var_updates ops, reading constants, remote_code_load's checks, Tensor.T / spec, and
the errors PopXL raises for each."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import plexus
import popxl
import popxl.ops as ops
from popxl.ops.call import CallSiteInfo


def _increment_ir(num_host_transfers=1):
    ir = popxl.Ir()
    ir.num_host_transfers = num_host_transfers
    with ir.main_graph:
        x_h2d = popxl.h2d_stream([2], popxl.float32, name="x")
        x = ops.host_load(x_h2d, "x")
        graph = ir.create_graph(lambda t: t + np.ones(t.shape, t.dtype.as_numpy()), x.spec)
        (y,) = ops.call(graph, x)
        y_d2h = popxl.d2h_stream(y.shape, y.dtype, name="y")
        ops.host_store(y_d2h, y)
    return ir, x_h2d, y_d2h


@pytest.mark.parametrize("device_desc", ["cpu", "ipu_model", "ipu_hw"])
def test_every_device_desc_runs_on_the_virtual_devices(device_desc):
    ir, x_h2d, y_d2h = _increment_ir()
    with popxl.Session(ir, device_desc) as session:
        out = session.run({x_h2d: [1.5, 2.5]})  # a list and float64, converted as PopXL does
    assert list(out) == [y_d2h]
    np.testing.assert_array_equal(out[y_d2h], [2.5, 3.5])
    assert out[y_d2h].dtype == np.float32


def test_memory_report_of_the_compiled_ir_before_any_run():
    ir, x_h2d, y_d2h = _increment_ir()
    session = popxl.Session(ir, "ipu_model")
    report = session.memory_report()  # not attached, nothing run
    assert report["schema"] == "plexus.memory_report"
    (device,) = report["devices"]
    assert device["planned_peak_bytes"] == max(sum(s["bytes"].values()) for s in device["steps"])
    assert device["planned_peak_bytes"] == session._session.memory_stats(0)["planned_peak_bytes"]
    assert any(s["bytes"]["stream_slots"] == 8 for s in device["steps"])  # x, float32[2]


def test_num_host_transfers_gives_the_leading_dim_of_every_stream():
    ir, x_h2d, y_d2h = _increment_ir(num_host_transfers=3)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    with popxl.Session(ir) as session:
        y = session.run({x_h2d: x})[y_d2h]
        outputs = {y_d2h: np.zeros((3, 2), np.float32)}
        session.run_with_outputs({x_h2d: x * 2}, outputs)
    np.testing.assert_array_equal(y, x + 1)
    np.testing.assert_array_equal(outputs[y_d2h], x * 2 + 1)
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="num_host_transfers"):
            ir.num_host_transfers = bad


def test_a_session_runs_only_while_attached_and_is_reusable():
    ir, x_h2d, y_d2h = _increment_ir()
    session = popxl.Session(ir, "ipu_model")
    assert not session.is_attached
    with pytest.raises(ValueError, match="Must be attached"):
        session.run({x_h2d: np.zeros(2, np.float32)})
    with pytest.raises(ValueError, match="Must be attached"):
        session.weights_to_host()
    with session:
        with session:
            assert session.is_attached
        assert session.is_attached
        session.weights_from_host()
    assert not session.is_attached
    with session:  # attach again: the same session runs on
        np.testing.assert_array_equal(session.run({x_h2d: np.ones(2, np.float32)})[y_d2h], [2, 2])


def test_bad_device_desc_and_host_store_are_errors():
    ir = popxl.Ir()
    with pytest.raises(ValueError, match="device_desc.*'gpu'"):
        popxl.Session(ir, "gpu")
    with pytest.raises(TypeError, match="popxl.Ir"):
        popxl.Session(plexus.Ir(), "cpu")
    with ir.main_graph:
        v = popxl.variable(np.zeros(2, np.float32), name="v")
        stream = popxl.d2h_stream((3,), popxl.float32, name="wrong_shape")
        with pytest.raises(ValueError, match="wrong_shape"):
            ops.host_store(stream, v)
        ok = popxl.d2h_stream((2,), popxl.float32, name="ok")
        ops.host_store(ok, v)
        graph = ir.create_graph(lambda t: ops.host_store(ok, t), v.spec)
        ops.call(graph, v)
    with graph, pytest.raises(ValueError, match="after the graph was called"):
        ops.host_store(ok, graph.inputs[0])
    plain = plexus.Ir()
    with plain.main_graph, pytest.raises(TypeError, match="popxl.Ir"):
        popxl.d2h_stream((2,), popxl.float32)


def test_var_updates_write_in_place():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        f = popxl.variable(np.array([np.nan, np.inf], np.float32), name="f")
        i = popxl.variable(np.array([1, 2], np.int32), name="i")
        a = popxl.variable(np.array([1, 1], np.float32), name="a")
        ops.var_updates.copy_var_update_(f, popxl.constant(np.array([3, 4], np.float32)))
        ops.var_updates.copy_var_update_(i, popxl.constant(np.array([-7, 9], np.int32)))
        ops.var_updates.accumulate_(a, popxl.constant(np.array([1, 2], np.float32)))
        ops.var_updates.accumulate_(a, popxl.constant(np.array([1, 2], np.float32)), 0.5)
        ops.var_updates.accumulate_(a, popxl.constant(np.array([2, 2], np.float32)),
                                    popxl.constant(np.float32(-1)))
        c = popxl.constant(np.array([5, 6], np.int32), name="c")
    with popxl.Session(ir) as session:
        session.run()
    np.testing.assert_array_equal(session.get_tensor_data(f), [3, 4])  # whatever f held
    np.testing.assert_array_equal(session.get_tensor_data(i), [-7, 9])
    np.testing.assert_array_equal(session.get_tensor_data(a), [0.5, 2])  # 1 + 1 + 0.5 - 2, 1 + 2 + 1 - 2
    np.testing.assert_array_equal(session.get_tensor_data(c), [5, 6])  # constants read too


def test_remote_code_load_has_no_effect_and_checks_its_arguments():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.float32(2), name="x")
    graph = ir.create_graph(lambda t: t.T.T * 3, x.spec)  # made outside any `with`
    with ir.main_graph, popxl.in_sequence():
        ops.remote_code_load(graph, destination="executable")
        info = ops.call_with_info(graph, x)
        assert isinstance(info, CallSiteInfo)
        y_d2h = popxl.d2h_stream((), popxl.float32, "y")
        ops.host_store(y_d2h, info.outputs[0])
        with pytest.raises(NotImplementedError, match="io_buffer"):
            ops.remote_code_load(graph, "io_buffer")
        with pytest.raises(ValueError, match="destination"):
            ops.remote_code_load(graph, "elsewhere")
        with pytest.raises(TypeError, match="Graph"):
            ops.remote_code_load("graph", "executable")
    with graph, pytest.raises(ValueError, match="resides in"):
        ops.remote_code_load(graph, "executable")
    with popxl.Session(ir) as session:
        assert session.run()[y_d2h] == 6


def test_tensor_methods_follow_popxl():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="x")
        assert x.spec == popxl.TensorSpec((2, 3), popxl.float32)
        assert x.T.shape == (3, 2) and x.transpose([1, 0]).shape == (3, 2)
        assert x.reshape((3, 2)).shape == (3, 2) and x.flatten().shape == (6,)
        assert popxl.float32.as_numpy() == np.float32
        d2h = [popxl.d2h_stream(t.shape, t.dtype) for t in (x.T, x.flatten())]
        for stream, t in zip(d2h, (x.T, x.flatten())):
            ops.host_store(stream, t)
    with popxl.Session(ir) as session:
        out = session.run()
    np.testing.assert_array_equal(out[d2h[0]], np.arange(6).reshape(2, 3).T)
    np.testing.assert_array_equal(out[d2h[1]], np.arange(6))


def _nll_reference(logits, labels, ignore_index, reduction):
    """numpy: the loss and d(loss)/d(logits) of nll(softmax(logits))."""
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    kept = (labels != ignore_index).astype(np.float64)
    safe = np.where(kept > 0, labels, 0)
    per_row = -np.log(p[np.arange(len(labels)), safe]) * kept
    onehot = np.eye(p.shape[-1])[safe]
    scale = kept / kept.sum() if reduction == "mean" else kept
    loss = {"mean": per_row.sum() / kept.sum(), "sum": per_row.sum(), "none": per_row}[reduction]
    return loss, (p - onehot) * scale[:, None]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_with_softmax_grad_matches_numpy(reduction):
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(6, 4)).astype(np.float32)
    labels = np.array([0, 3, 1, -100, 2, 3], np.int32)
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(logits, name="logits")
        t = popxl.variable(labels, name="labels")
        probs = ops.softmax(x, axis=-1)
        loss, dx = ops.nll_loss_with_softmax_grad(probs, t, ignore_index=-100, reduction=reduction)
        plain = ops.nll_loss(probs, t, ignore_index=-100, reduction=reduction)
        logged = ops.nll_loss(ops.log_softmax(x, axis=-1), t, ignore_index=-100, reduction=reduction, log_prob=True)
        streams = [popxl.d2h_stream(v.shape, v.dtype) for v in (loss, dx, plain, logged)]
        for stream, v in zip(streams, (loss, dx, plain, logged)):
            ops.host_store(stream, v)
        with pytest.raises(ValueError, match="Not a valid reduction"):
            ops.nll_loss(probs, t, reduction="max")
        with pytest.raises(ValueError, match="leading|without its last"):
            ops.nll_loss(probs, x, reduction="mean")
    with popxl.Session(ir) as session:
        out = session.run()
    want_loss, want_dx = _nll_reference(logits.astype(np.float64), labels, -100, reduction)
    for stream in (streams[0], streams[2], streams[3]):
        np.testing.assert_allclose(out[stream], want_loss, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(out[streams[1]], want_dx, rtol=2e-6, atol=1e-7)
    assert not np.any(out[streams[1]][3]), "the ignored row has no gradient"


POPDIST_PROGRAM = """
import sys
import numpy as np, popxl, popxl.ops as ops
ir = popxl.Ir(replication="popdist")
with ir.main_graph:
    buffer = popxl.replica_sharded_buffer((6,), popxl.float32)
    v = popxl.remote_replica_sharded_variable(np.arange(6, dtype=np.float32), buffer, 0)
    shard = ops.remote_load(buffer, 0)
    doubled = ops.collectives.replica_sharded_slice(ops.collectives.replicated_all_gather(shard) * 2)
    ops.remote_store(buffer, 0, doubled)
with popxl.Session(ir, "ipu_hw") as session:
    session.run()
line = f"worker {ir.workers} R {ir.replication_factor} shard {buffer.shape} {list(session.get_tensor_data(v))}"
with open(f"{sys.argv[1]}/worker{ir.workers[1]}.txt", "w") as out:  # one file each: stdout interleaves
    out.write(line)
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed")
def test_popdist_spreads_the_replicas_over_the_processes_of_mpirun(tmp_path):
    program = tmp_path / "popdist_program.py"
    program.write_text(POPDIST_PROGRAM)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("PLEXUS_COLLECTIVES", None)
    if "ASAN_OPTIONS" in env:  # the sanitizer pass: Open MPI keeps its allocations until exit
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    done = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "-x", "PYTHONPATH", "-x", "PLEXUS_PLUGIN_PATH",
                           sys.executable, str(program), str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [(tmp_path / f"worker{i}.txt").read_text() for i in range(2)]
    want = "R 2 shard (3,) [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]"
    assert lines == [f"worker (2, 0) {want}", f"worker (2, 1) {want}"], done.stdout


def test_replication_other_than_an_int_or_popdist_is_an_error(monkeypatch):
    with pytest.raises(ValueError, match="'popdist'"):
        popxl.Ir(replication="mpi")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "zero")
    with pytest.raises(ValueError, match="POPDIST_NUM_LOCAL_REPLICAS"):
        popxl.Ir(replication="popdist")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "4")
    ir = popxl.Ir(replication="popdist")  # no launcher: one process of 4 replicas
    assert (ir.workers, ir.replication_factor) == ((1, 0), 4)


def test_write_variable_data_follows_popxls_rules():
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v = popxl.variable(np.zeros(3, np.float32), name="v")
        c = popxl.constant(np.zeros(3, np.float32), name="c")
        pairs = popxl.variable(np.zeros((1, 3), np.float32), name="pairs", replica_grouping=ir.replica_grouping(),
                               retrieval_mode="all_replicas")
    session = popxl.Session(ir)
    assert pairs.retrieval_mode == "all_replicas" and pairs.replica_grouping.group_size == 2
    session.write_variable_data(v, np.arange(3, dtype=np.float32))  # not attached: allowed, as PopXL
    np.testing.assert_array_equal(session.get_tensor_data(v), [0, 1, 2])
    with pytest.raises(TypeError, match="not of type Variable"):
        session.write_variable_data(c, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="float64.*v : float32"):
        session.write_variable_data(v, np.ones(3))
    with pytest.raises(ValueError, match="v"):
        session.write_variable_data(v, np.ones(4, np.float32))
    with pytest.raises(NotImplementedError, match="pairs.*all_replicas"):
        session.write_variable_data(pairs, np.ones((2, 3), np.float32))


def test_init_makes_a_writable_zero_tensor_each_run():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        t = ops.init((2, 3), popxl.float32, "acc")
        u = ops.init([2], popxl.int32, init_type="undef")
        ops.var_updates.accumulate_(t, popxl.constant(np.ones((2, 3), np.float32)))
        d2h = [popxl.d2h_stream(x.shape, x.dtype) for x in (t, u)]
        for stream, x in zip(d2h, (t, u)):
            ops.host_store(stream, x)
        with pytest.raises(ValueError, match="init_type"):
            ops.init((2,), popxl.float32, init_type="ones")
    with popxl.Session(ir) as session:
        for _ in range(2):  # zero again at every run: not a variable
            out = session.run()
            np.testing.assert_array_equal(out[d2h[0]], np.ones((2, 3)))
            np.testing.assert_array_equal(out[d2h[1]], [0, 0])


def test_every_popxl_dtype_is_named_and_classified_and_the_host_only_ones_are_refused_on_a_device():
    assert popxl.half is popxl.float16 and popxl.double is popxl.float64 and popxl.float is popxl.float32
    kinds = {d.name: (d.is_int, d.is_floating_point, d.is_signed, d.is_complex)
             for d in (popxl.bool, popxl.int8, popxl.uint32, popxl.float16, popxl.complex64)}
    assert kinds == {"bool": (False, False, False, False), "int8": (True, False, True, False),
                     "uint32": (True, False, False, False), "float16": (False, True, True, False),
                     "complex64": (False, False, True, True)}
    assert popxl.dtype.from_name("uint32").as_numpy() == np.uint32
    assert popxl.dtype.as_dtype(np.float64) is popxl.float64 and popxl.dtype.as_dtype(float) is popxl.float32
    assert popxl.dtype.as_dtype(bool) is popxl.bool and popxl.dtype.as_dtype("int8") is popxl.int8
    with pytest.raises(ValueError, match="'float7'"):
        popxl.dtype.from_name("float7")
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(plexus.DTypeMismatch, match="variable_a.*float64 tensors are not supported"):
            popxl.variable(3, dtype=popxl.float64, name="variable_a")
        with pytest.raises(plexus.DTypeMismatch, match="int64 tensors are not supported"):
            popxl.h2d_stream((2,), popxl.int64, name="x")


def test_utils_to_numpy_converts_as_popxl_and_table_to_string_aligns_columns():
    import popxl.utils as utils
    import torch
    # downcast: 64-bit data without a dtype becomes 32-bit; a dtype wins; torch tensors convert
    assert utils.to_numpy([1, 2]).dtype == np.int32 and utils.to_numpy(1.5).dtype == np.float32
    assert utils.to_numpy(np.arange(3, dtype=np.uint64)).dtype == np.uint32
    assert utils.to_numpy([1, 2], downcast=False).dtype == np.int64
    np.testing.assert_array_equal(utils.to_numpy([0.1, 70000.0], popxl.float16), np.array([0.1, 70000.0], np.float16))
    assert utils.to_numpy(np.zeros(2), popxl.float64).dtype == np.float64  # host-side: any popxl dtype
    t = torch.arange(4, dtype=torch.float32, requires_grad=True)
    np.testing.assert_array_equal(utils.to_numpy(t), [0, 1, 2, 3])
    # copy: never shares memory with the input; without copy an array of the right type is returned as it is
    a = np.arange(4, dtype=np.float32)
    assert not np.shares_memory(utils.to_numpy(a), a) and utils.to_numpy(a, copy=False) is a
    with pytest.raises(RuntimeError, match="log2_scale"):
        utils.to_numpy(a, log2_scale=2)
    with pytest.raises(RuntimeError, match="nan_on_overflow"):
        utils.to_numpy(a, nan_on_overflow=False)
    rows = [["num", "foo"], [3, "aaab"], [-10, "b"]]
    assert utils.table_to_string(rows) == "num | foo \n-----------\n3   | aaab\n-10 | b   \n"
    assert utils.table_to_string(rows, delimiter=",", header=False) == "num,foo \n3  ,aaab\n-10,b   \n"
    with pytest.raises(ValueError, match="row 1 has 1 items"):
        utils.table_to_string([["a", "b"], ["c"]])


def test_utils_to_numpy_returns_a_memmap_itself_and_refuses_one_needing_conversion(tmp_path):
    import popxl.utils as utils
    m = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(4,))
    assert utils.to_numpy(m) is m
    with pytest.raises(ValueError, match="dtype int32"):
        utils.to_numpy(m, popxl.int32)
    m64 = np.memmap(tmp_path / "m64.bin", dtype=np.float64, mode="w+", shape=(4,))
    with pytest.raises(ValueError, match="downcast"):
        utils.to_numpy(m64)


def test_context_getters_and_remote_buffer_constructor_are_popxls():
    ir = popxl.Ir()
    with pytest.raises(plexus.InvalidArgument):
        popxl.get_ir()  # no graph open
    with ir.main_graph:
        assert popxl.get_ir() is ir and popxl.gir() is ir
        assert popxl.get_main_graph() == ir.main_graph and popxl.get_current_graph() == ir.main_graph
        buffer = popxl.RemoteBuffer((2, 3), popxl.float32, 4)  # PopXL's constructor, positional
        assert (buffer.shape, buffer.dtype, buffer.entries) == ((2, 3), popxl.float32, 4)
        assert isinstance(popxl.remote_buffer((2,), popxl.int32), popxl.RemoteBuffer)
        v = popxl.remote_variable(np.arange(6, dtype=np.float32).reshape(2, 3), buffer, 3, name="v")
        loaded = ops.remote_load(buffer, 3)
        out = popxl.d2h_stream(loaded.shape, loaded.dtype, "out")
        ops.host_store(out, loaded)
        with pytest.raises(plexus.InvalidArgument):
            popxl.RemoteBuffer((2, 3), popxl.float32, 0)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_array_equal(session.run()[out], np.arange(6).reshape(2, 3))
        np.testing.assert_array_equal(session.get_tensor_data(v), np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("reuse_code", [False, True])
def test_remote_load_and_store_inside_a_called_graph(reuse_code):
    """A called graph loads entry 0 of a remote buffer, scales it and stores it to entry 1,
    inlined or as a call op (its kernels bound once, with the replica's remote buffers)."""
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((2,), popxl.float32, 2)
        popxl.remote_variable(np.array([1, 2], np.float32), buffer, 0)
        out = popxl.d2h_stream((2,), popxl.float32, "y")

        def scaled(scale):
            t = ops.remote_load(buffer, 0) * scale
            ops.remote_store(buffer, 1, t)
            return t

        graph = ir.create_graph(scaled, popxl.constant(3.0))
        (result,) = ops.call(graph, popxl.constant(3.0), reuse_code=reuse_code)
        ops.host_store(out, ops.remote_load(buffer, 1) + result)
    with popxl.Session(ir, "cpu") as session:
        np.testing.assert_array_equal(session.run()[out], [6.0, 12.0])
