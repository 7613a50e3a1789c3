"""Bad input never crashes the interpreter: each mistake raises a plexus exception whose
message names the argument at fault; the nastiest ones run in a child interpreter that
must survive them."""
import numpy as np
import pytest

import plexus
from plexus import ops

from conftest import run_python


@pytest.fixture
def model():
    ir = plexus.Ir(replication=2)
    with ir.main_graph:
        x = plexus.h2d_stream((3,), plexus.float32, name="x")
        v = plexus.variable(np.ones(3, np.float32), name="v")
        y = plexus.d2h_stream(ops.mul(ops.host_load(x), v), name="y")
    other = plexus.Ir(replication=2)
    with other.main_graph:
        ox = plexus.h2d_stream((3,), plexus.float32, name="x")
        ov = plexus.variable(np.ones(3, np.float32), name="v")
        oy = plexus.d2h_stream(ops.mul(ops.host_load(ox), ov), name="y")
    session = plexus.Session(ir)
    yield dict(ir=ir, x=x, v=v, y=y, other=other, ox=ox, ov=ov, oy=oy, session=session,
               good=np.ones((2, 3), np.float32))
    session.close()


def _raises(cls, fn, *words):
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, plexus.Error)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    return info.value


def test_bad_run_arrays_name_the_stream(model):
    s, x = model["session"], model["x"]
    _raises(plexus.DTypeMismatch, lambda: s.run({x: model["good"].astype(np.float64)}), "'x'", "float64", "float32")
    _raises(plexus.InvalidArgument, lambda: s.run({x: np.ones((3, 2), np.float32).T}), "'x'", "C-contiguous")
    _raises(plexus.ShapeMismatch, lambda: s.run({x: np.ones((2, 4), np.float32)}), "'x'", "[2,4]", "[2,3]")
    _raises(plexus.ShapeMismatch, lambda: s.run({x: np.ones(6, np.float32)}), "'x'", "[6]")
    _raises(plexus.InvalidArgument, lambda: s.run({x: None}), "'x'", "numpy array", "NoneType")
    _raises(plexus.InvalidArgument, lambda: s.run({x: [[1.0, 2.0, 3.0]] * 2}), "'x'", "list")
    _raises(plexus.InvalidArgument, lambda: s.run({}), "'x'", "no host array")
    _raises(plexus.InvalidArgument, lambda: s.run({None: model["good"]}), "HostToDeviceStream", "None")
    _raises(plexus.InvalidArgument, lambda: s.run({model["y"]: model["good"]}), "HostToDeviceStream")
    _raises(plexus.InvalidArgument, lambda: s.run(5), "inputs", "dict")
    _raises(plexus.InvalidArgument, lambda: s.run({x: model["good"]}, callbacks=[1]), "callbacks", "dict")
    _raises(plexus.InvalidArgument, lambda: s.run(callbacks={x: 5}), "'x'", "not callable")
    _raises(plexus.InvalidArgument, lambda: s.run({x: model["good"]}, callbacks={x: lambda *a: None}), "'x'")
    # After all that, the session runs.
    np.testing.assert_array_equal(s.run({x: model["good"]})[model["y"]], model["good"])


def test_objects_of_another_ir(model):
    s, other = model["session"], model
    _raises(plexus.InvalidArgument, lambda: s.run({other["ox"]: model["good"]}), "another IR")
    _raises(plexus.InvalidArgument, lambda: s.run({model["x"]: model["good"], other["ox"]: model["good"]}),
            "another IR")
    _raises(plexus.InvalidArgument, lambda: s.run(callbacks={other["ox"]: lambda *a: None}), "another IR")
    _raises(plexus.InvalidArgument, lambda: s.get_tensor_data(other["ov"]), "another IR")
    _raises(plexus.InvalidArgument, lambda: s.write_variable_data(other["ov"], np.ones(3)), "another IR")
    _raises(plexus.InvalidArgument, lambda: s.host_shape(other["oy"]), "another IR")
    _raises(plexus.InvalidArgument, lambda: s.variable_storage(other["ov"]), "another IR")
    with model["ir"].main_graph:
        _raises(plexus.InvalidArgument, lambda: ops.add(model["v"], other["ov"]), "'add'", "another IR")
        _raises(plexus.InvalidArgument, lambda: plexus.autodiff(ops.reduce_sum(model["v"]), [other["ov"]]),
                "wrt[0]", "another IR")


def test_bad_ops_and_attributes(model):
    v = model["v"]
    with model["ir"].main_graph:
        _raises(plexus.UnknownOp, lambda: ops.frobnicate(v), "frobnicate")
        _raises(plexus.UnknownOp, lambda: ops.add_op("frobnicate", [v], {}), "frobnicate")
        _raises(plexus.InvalidArgument, lambda: ops.reshape(v, (3,), colour=2), "'reshape'", "'colour'")
        _raises(plexus.InvalidArgument, lambda: ops.reshape(v, shape="abc"), "'shape'", "ints")
        _raises(plexus.InvalidArgument, lambda: ops.reduce_sum(v, keepdims="yes"), "'keepdims'", "int")
        _raises(plexus.InvalidArgument, lambda: ops.reduce_sum(v, keepdims=1.5), "'keepdims'")
        _raises(plexus.InvalidArgument, lambda: ops.scaled_add_(v, v, b="fast"), "'b'", "float")
        _raises(plexus.InvalidArgument, lambda: ops.replicated_all_reduce(v, op=3), "'op'", "string")
        _raises(plexus.InvalidArgument, lambda: ops.add(v, None), "'add'", "input 1", "None")
        _raises(plexus.InvalidArgument, lambda: ops.matmul(None, None), "'matmul'", "input 0")
        _raises(plexus.InvalidArgument, lambda: ops.gelu(), "'gelu'", "input 0")
        _raises(plexus.InvalidArgument, lambda: ops.host_load(v), "HostToDeviceStream")
        _raises(plexus.InvalidArgument, lambda: ops.collectives.replicated_all_reduce(v, group="all"),
                "ReplicaGrouping")
        _raises(plexus.InvalidArgument, lambda: plexus.d2h_stream(None), "d2h_stream", "None")
        _raises(plexus.ShapeMismatch, lambda: ops.reshape(v, (-5,)), "'reshape'", "[-5]")
        _raises(plexus.ShapeMismatch, lambda: ops.reshape(v, (2**63 - 1,)), "'reshape'")
        # ops.add_ on a constant, and a second output too many, are refused by the C API.
        c = plexus.constant(np.ones(3, np.float32))
        _raises(plexus.InvalidArgument, lambda: ops.add_(c, v), "constant")


def test_bad_shapes_and_dtypes(model):
    with model["ir"].main_graph:
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream((-1, 4), plexus.float32), "[-1,4]", ">= 1")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream((0, 4), plexus.float32), "[0,4]")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream((2**40, 2**40), plexus.float32), "2^60")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream((2**62, 2**62, 2**62), plexus.float32), "2^60")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream((2**70,), plexus.float32), "shape", "int64")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream(("a",), plexus.float32), "shape")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream(None, plexus.float32), "shape")
        _raises(plexus.InvalidArgument, lambda: plexus.h2d_stream((1,) * 20, plexus.float32), "rank 20")
        _raises(plexus.DTypeMismatch, lambda: plexus.h2d_stream((2,), np.float64), "float64")
        _raises(plexus.DTypeMismatch, lambda: plexus.h2d_stream((2,), "complex"), "complex")
        _raises(plexus.InvalidArgument, lambda: plexus.variable(np.zeros((0, 3), np.float32)), "dim 0")
        _raises(plexus.InvalidArgument, lambda: plexus.variable(None), "variable", "None")
        _raises(plexus.DTypeMismatch, lambda: plexus.variable([object()]), "variable", "object")
        _raises(plexus.DTypeMismatch, lambda: plexus.variable("abc"), "variable")
        _raises(plexus.InvalidArgument, lambda: plexus.variable(np.ones(3), name="v"), "'v'")   # duplicate name
        _raises(plexus.InvalidArgument, lambda: plexus.variable(np.ones(3), retrieval_mode="some"), "retrieval_mode")
        _raises(plexus.InvalidArgument, lambda: plexus.remote_buffer((4,), plexus.float32, entries=-1), "entries")
        _raises(plexus.InvalidArgument, lambda: plexus.remote_buffer((-4,), plexus.float32), "-4")


def test_an_expand_past_2_to_the_40_elements_is_refused(model):
    with model["ir"].main_graph:
        _raises(plexus.InvalidArgument, lambda: ops.expand(model["v"], (2**40, 2**40, 3)), "expand",
                "more than 2^40 elements")


def test_bad_session_calls(model):
    s, v = model["session"], model["v"]
    _raises(plexus.InvalidArgument, lambda: plexus.Session(None), "Session", "None")
    _raises(plexus.InvalidArgument, lambda: plexus.Session(model["ir"], device_iterations=-1), "device_iterations")
    _raises(plexus.InvalidArgument, lambda: plexus.Session(model["ir"], io_threads=0), "io_threads")
    _raises(plexus.ShapeMismatch, lambda: s.write_variable_data(v, np.ones(4)), "'v'", "[3]", "[4]")
    _raises(plexus.InvalidArgument, lambda: s.write_variable_data(v, None), "'v'", "None")
    _raises(plexus.NotFound, lambda: s.memory_stats(-1), "device -1")
    _raises(plexus.NotFound, lambda: s.memory_stats(2), "device 2")
    _raises(plexus.InvalidArgument, lambda: s.get_tensor_data(model["y"].tensor), "not a variable")
    _raises(plexus.InvalidArgument, lambda: s.save_checkpoint("/tmp/never", level=99), "level")
    _raises(plexus.InvalidArgument, lambda: s.save_checkpoint("/tmp/never", shuffle="maybe"), "shuffle")
    s.close()
    _raises(plexus.InvalidArgument, lambda: s.run({model["x"]: model["good"]}), "closed")


def test_the_nastiest_inputs_do_not_crash_the_interpreter():
    """Each case runs in one child interpreter; it must print every case's exception and
    exit normally (a crash would end it with a signal)."""
    result = run_python("""
        import gc, threading, time, numpy as np, plexus
        from plexus import ops
        from plexus._lib import check, ffi, lib

        def build(r=2):
            ir = plexus.Ir(replication=r)
            with ir.main_graph:
                x = plexus.h2d_stream((3,), plexus.float32, name="x")
                v = plexus.variable(np.ones(3, np.float32), name="v")
                y = plexus.d2h_stream(ops.mul(ops.host_load(x), v), name="y")
            return ir, x, v, y

        ir, x, v, y = build()
        other, ox, ov, oy = build()
        s = plexus.Session(ir)
        big = np.ones((2, 3), np.float32)
        cases = {
            "stream of another IR": lambda: s.run({ox: big}),
            "stream of a dropped IR": lambda: s.run({build()[1]: big}),
            "bogus tensor id": lambda: plexus.Tensor(ir, 2**64 - 1).shape,
            "id of a tensor as a stream": lambda: s.run({plexus.HostToDeviceStream(ir, v.id, "v", v): big}),
            "bogus stream id": lambda: s.run({plexus.HostToDeviceStream(ir, 123456789, "z", x.tensor): big}),
            "d2h stream id as input": lambda: s.run({plexus.HostToDeviceStream(ir, y.id, "y", x.tensor): big}),
            "read-only input": lambda: s.run({x: np.broadcast_to(np.float32(1), (2, 3))}),
            "zero-sized input": lambda: s.run({x: np.ones((0, 3), np.float32)}),
            "read-only contiguous input": lambda: s.run({x: np.frombuffer(bytes(24), np.float32).reshape(2, 3)}),
            "fill raises SystemExit": lambda: s.run(callbacks={x: lambda *a: (_ for _ in ()).throw(SystemExit(3))}),
            "fill raises KeyboardInterrupt": lambda: s.run(
                callbacks={x: lambda *a: (_ for _ in ()).throw(KeyboardInterrupt())}),
            "fill resizes nothing": lambda: s.run(callbacks={x: lambda st, r, b: b.resize((100,))}),
            "deliver writes its read-only view": lambda: s.run({x: big},
                                                               callbacks={y: lambda row, r, d: d.fill(0)}),
            "close during a run": None,
            "negative device": lambda: s.memory_stats(-(2**63)),
            "huge device": lambda: s.memory_stats(2**64 - 1),
            "raw NULL session": lambda: check(lib.plx_session_run(ffi.NULL, ffi.NULL, 0, ffi.NULL, 0)),
            "raw NULL arrays": lambda: check(lib.plx_session_run(s._ptr, ffi.NULL, 1, ffi.NULL, 1)),
        }

        def close_during_run():
            s2 = plexus.Session(ir, device_iterations=20000)
            data = np.ones((20000, 2, 3), np.float32)
            t = threading.Thread(target=lambda: s2.close())
            err = []
            def go():
                try:
                    s2.run({x: data})
                except plexus.Error as e:
                    err.append(e)
            r = threading.Thread(target=go)
            r.start(); t.start(); r.join(); t.join()
            if err:
                raise err[0]
        cases["close during a run"] = close_during_run

        for name, fn in cases.items():
            t0 = time.perf_counter()
            try:
                fn()
                print(f"{name}: no error")
            except plexus.Error as e:
                print(f"{name}: {type(e).__name__}: {str(e)[:120]}")
            except Exception as e:
                print(f"{name}: NOT A PLEXUS ERROR {type(e).__name__}: {e}")
            gc.collect()
            print(f"  ({time.perf_counter() - t0:.2f} s)")
        s.close()
        print("survived")
    """)
    print(result.stdout)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.rstrip().endswith("survived")
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert "NOT A PLEXUS ERROR" not in result.stdout
    for name in ("stream of another IR", "stream of a dropped IR", "bogus tensor id", "id of a tensor as a stream",
                 "bogus stream id", "d2h stream id as input", "zero-sized input", "fill raises SystemExit",
                 "fill raises KeyboardInterrupt", "fill resizes nothing", "deliver writes its read-only view",
                 "negative device", "huge device", "raw NULL session", "raw NULL arrays"):
        assert not lines[name].startswith("no error"), (name, lines[name])
