"""PopXL's dtypes on Plexus's devices (bindings/python/plexus/dtypes.py, docs/ops.md):
float16, int8, uint32 and bool tensors built, run and read back against numpy; host data
converted as PopXL does (to the tensor's dtype, 64-bit data downcast); float16 matmul equal
to numpy's float32 product rounded to float16; and the refusals naming the op or tensor and
the dtype (a float64 device tensor, a float16 relu, bool arithmetic)."""
import numpy as np
import pytest

import plexus
import popxl
import popxl.ops as ops


def run(build):
    """Builds `build()` -> {name: tensor} in a main graph, stores each tensor to the host
    and returns {name: numpy array} from one run."""
    ir = popxl.Ir()
    with ir.main_graph:
        tensors = build()
        streams = {name: popxl.d2h_stream(t.shape, t.dtype, name=name) for name, t in tensors.items()}
        for name, t in tensors.items():
            ops.host_store(streams[name], t)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    return {name: out[s] for name, s in streams.items()}


def test_the_user_guides_tensor_addition_adds_int8():
    out = run(lambda: {"o": popxl.variable(3, dtype=popxl.int8, name="variable_a")
                       + popxl.constant(1, dtype=popxl.int8, name="constant_b")})
    assert out["o"].dtype == np.int8 and out["o"] == 4


def test_device_dtypes_map_to_numpy_both_ways():
    for name, np_type in [("float32", np.float32), ("float16", np.float16), ("int32", np.int32), ("int8", np.int8),
                          ("uint8", np.uint8), ("uint32", np.uint32), ("bool", np.bool_)]:
        d = popxl.dtype.from_name(name)
        assert d.as_numpy() == np.dtype(np_type) and d.code is not None
        assert popxl.dtype.as_dtype(np_type) is d and popxl.dtypes.dtype.as_dtype(name) is d
    assert popxl.float16.itemsize == 2 and popxl.bool.itemsize == 1


def test_host_data_is_converted_to_the_tensors_dtype_as_numpy_astype():
    data = np.array([1.7, -2.7, 70000.0, 1.0 + 2.0 ** -11, 3 * 2.0 ** -25])
    out = run(lambda: {"h": popxl.variable(data, dtype=popxl.float16),
                       "i": popxl.variable([1.9, -1.9, 100.5], dtype=popxl.int8),
                       "u": popxl.variable(np.arange(3, dtype=np.uint64)),
                       "b": popxl.variable(np.array([True, False, True]))})
    assert out["h"].dtype == np.float16
    np.testing.assert_array_equal(out["h"].view(np.uint16), data.astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(out["i"], np.array([1.9, -1.9, 100.5]).astype(np.int8))
    assert out["u"].dtype == np.uint32 and list(out["u"]) == [0, 1, 2]   # uint64 downcast, as PopXL
    assert out["b"].dtype == np.bool_ and list(out["b"]) == [True, False, True]


def test_float16_matmul_is_numpys_float32_product_rounded_to_float16():
    rng = np.random.default_rng(3)
    a = rng.uniform(-2, 2, (6, 40)).astype(np.float16)
    b = rng.uniform(-2, 2, (40, 5)).astype(np.float16)
    out = run(lambda: {"y": popxl.variable(a) @ popxl.variable(b)})
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    assert out["y"].dtype == np.float16
    # numpy's float32 GEMM sums in another order: allow one float16 ulp, no more.
    np.testing.assert_array_max_ulp(out["y"], expected, maxulp=1)
    ones = run(lambda: {"s": popxl.variable(np.ones((1, 4096), np.float16)) @ popxl.variable(np.ones((4096, 1), np.float16))})
    assert ones["s"][0, 0] == 4096  # float32 accumulation: a float16 sum stops at 2048


def test_integer_and_float16_elementwise_match_numpy():
    x8, y8 = np.array([127, -128, 7, -7], np.int8), np.array([1, -1, 2, 2], np.int8)
    xu, yu = np.array([4294967295, 5, 3000000000], np.uint32), np.array([1, 7, 2], np.uint32)
    xh, yh = np.array([1, 65504, 0.1], np.float16), np.array([2 ** -11, 16, 0.2], np.float16)
    out = run(lambda: {"add8": popxl.variable(x8) + popxl.variable(y8),
                       "mulu": popxl.variable(xu) * popxl.variable(yu),
                       "subu": popxl.variable(yu) - popxl.variable(xu),
                       "addh": popxl.variable(xh) + popxl.variable(yh),
                       "casth": ops.cast(popxl.variable(np.array([0.1, 65520.0, -1e-8], np.float32)), popxl.float16),
                       "eq": ops.equal(popxl.variable(np.array([True, False])), popxl.variable(np.array([True, True])))})
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out["add8"], x8 + y8)  # wraps: 127 + 1 = -128
        np.testing.assert_array_equal(out["mulu"], xu * yu)
        np.testing.assert_array_equal(out["subu"], yu - xu)
        expected_h = (xh.astype(np.float32) + yh.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(out["addh"].view(np.uint16), expected_h.view(np.uint16))
    assert out["addh"][0] == 1.0 and np.isinf(out["addh"][1])  # a tie to even; 65520 overflows
    np.testing.assert_array_equal(out["casth"].view(np.uint16),
                                  np.array([0.1, 65520.0, -1e-8], np.float32).astype(np.float16).view(np.uint16))
    assert out["eq"].dtype == np.bool_ and list(out["eq"]) == [True, False]


def test_unsupported_dtypes_are_refused_naming_the_op_or_tensor_and_the_dtype():
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(plexus.DTypeMismatch, match="w.*float64 tensors are not supported"):
            popxl.variable(np.zeros(2), dtype=popxl.float64, name="w")
        h = popxl.variable(np.zeros(2, np.float16))
        with pytest.raises(plexus.DTypeMismatch, match=r"op 'relu.*float16\[2\].*must be float32"):
            ops.relu(h)
        b = popxl.variable(np.array([True, False]))
        with pytest.raises(plexus.DTypeMismatch, match=r"op 'add.*bool\[2\].*not bool"):
            b + b
        with pytest.raises(plexus.DTypeMismatch, match=r"op 'matmul.*float16\[2,2\], float32\[2,2\].*input 0's dtype"):
            popxl.variable(np.zeros((2, 2), np.float16)) @ popxl.variable(np.zeros((2, 2), np.float32))
