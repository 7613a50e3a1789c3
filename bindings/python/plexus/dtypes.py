"""Tensor element types (plexus/types.h plx_dtype) and their numpy twins.

Plexus's devices hold float32, float16, int32, int8, uint8, uint32 and bool (one byte);
the kernels of float16 compute in float32 (docs/ops.md). PopXL spells them popxl.float32,
popxl.float16 ... (also popxl.dtypes.float32); so does this module, re-exported as
plexus.float32 ... and plexus.dtypes. PopXL's other types (float64, int64, ...) are named and
classified here and converted on the host, but refused as device tensors.
"""
import numpy as np

from plexus.errors import DTypeMismatch, InvalidArgument


class DType:
    """One element type: `name`, `code` (PLX_DTYPE_*; None for a type PopXL names that
    Plexus's devices do not hold), `numpy` (np.dtype), `itemsize` (bytes), and PopXL's
    classification (`is_int`, `is_floating_point`, `is_signed`, `is_complex`). Immutable;
    compare with ==."""

    __slots__ = ("name", "code", "numpy")

    def __init__(self, name, code, numpy_dtype):
        self.name, self.code, self.numpy = name, code, np.dtype(numpy_dtype)

    def as_numpy(self):
        """The numpy dtype (PopXL's DType.as_numpy())."""
        return self.numpy

    def as_torch(self):
        """The torch dtype of the same name (PopXL's DType.as_torch()). Raises ImportError
        without torch, TypeError for a type torch does not have (uint32)."""
        import torch
        if not hasattr(torch, self.name):
            raise TypeError(f"{self!r} has no torch dtype")
        return getattr(torch, self.name)

    @property
    def itemsize(self):
        """Bytes per element."""
        return self.numpy.itemsize

    @property
    def is_int(self):
        """True for the integer types (not bool), as PopXL's dtype.is_int."""
        return self.numpy.kind in "iu"

    @property
    def is_floating_point(self):
        """True for float16, float32, float64."""
        return self.numpy.kind == "f"

    @property
    def is_signed(self):
        """True for the signed integer, floating-point and complex types."""
        return self.numpy.kind in "ifc"

    @property
    def is_complex(self):
        """True for complex64 and complex128."""
        return self.numpy.kind == "c"

    @classmethod
    def from_name(cls, name):
        """The DType called `name` (PopXL dtype.from_name). Raises ValueError for another."""
        found = _BY_NAME.get(name)
        if found is None:
            raise ValueError(f"not a dtype name: {name!r} (one of {', '.join(sorted(_BY_NAME))})")
        return found

    @classmethod
    def as_dtype(cls, type_value):
        """The DType of a DType, a name, a numpy dtype or type, or a Python type (float ->
        float32, int -> int32, bool -> bool) (PopXL dtype.as_dtype). Raises ValueError."""
        if isinstance(type_value, DType):
            return type_value
        if isinstance(type_value, str):
            return cls.from_name(type_value)
        python_types = {float: float32, int: int32, bool: bool_}
        if type_value in python_types:
            return python_types[type_value]
        try:
            return cls.from_name(np.dtype(type_value).name)
        except TypeError:
            raise ValueError(f"not a dtype: {type_value!r}") from None

    def __repr__(self):
        return f"plexus.{self.name}"


float32 = DType("float32", 1, np.float32)
int32 = DType("int32", 2, np.int32)
uint8 = DType("uint8", 3, np.uint8)
float16 = DType("float16", 4, np.float16)
int8 = DType("int8", 5, np.int8)
uint32 = DType("uint32", 6, np.uint32)
bool_ = DType("bool", 7, np.bool_)
DEVICE = (float32, int32, uint8, float16, int8, uint32, bool_)
# PopXL's other types: named, converted on the host, refused on a device (no kernels hold them).
HOST_ONLY = (DType("int16", None, np.int16), DType("int64", None, np.int64), DType("uint16", None, np.uint16),
             DType("uint64", None, np.uint64), DType("float64", None, np.float64),
             DType("complex64", None, np.complex64), DType("complex128", None, np.complex128))
_BY_NAME = {d.name: d for d in DEVICE + HOST_ONLY}

_BY_CODE = {d.code: d for d in DEVICE}
_BY_NUMPY = {d.numpy: d for d in DEVICE}
# PopXL's `downcast=True` (popxl.utils.to_numpy): 64-bit host data without a dtype becomes
# the 32-bit type.
_DOWNCAST = {np.dtype(np.float64): float32, np.dtype(np.int64): int32, np.dtype(np.uint64): uint32}
_DEVICE_NAMES = "float32, float16, int32, int8, uint8, uint32 or bool"


def from_code(code):
    """The DType of a PLX_DTYPE_* code."""
    return _BY_CODE[code]


def of(value):
    """The device DType named by `value`: a DType, a numpy dtype or type, or a name
    ("float32"). Raises DTypeMismatch for a type the devices do not hold (int8, float16, ...)."""
    if isinstance(value, DType):
        if value.code is None:
            raise DTypeMismatch(f"{value.name} tensors are not supported on Plexus's devices ({_DEVICE_NAMES}; "
                                f"docs/python.md)")
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return of(_BY_NAME[value])
    try:
        dt = np.dtype(value)
    except TypeError:
        raise DTypeMismatch(f"not a Plexus dtype: {value!r} ({_DEVICE_NAMES})") from None
    if dt in _BY_NUMPY:
        return _BY_NUMPY[dt]
    raise DTypeMismatch(f"not a Plexus dtype: {dt} ({_DEVICE_NAMES})")


def host_array(data, dtype=None):
    """`data` as a C-contiguous numpy array of a Plexus dtype: of `dtype` when given
    (converted as numpy's astype: float to int truncates, float to float16 rounds to nearest
    even, as PopXL's np.array(data, dtype)), else of the data's own type with float64 ->
    float32, int64 -> int32 and uint64 -> uint32 (PopXL's downcast). Returns (array, DType).
    None is refused (numpy would make it NaN)."""
    if data is None:
        raise InvalidArgument("data is None, not an array")
    array = np.asarray(data)
    if dtype is None:
        dtype = _DOWNCAST.get(array.dtype) or of(array.dtype)
    else:
        dtype = of(dtype)
    # np.asarray(order="C"), not np.ascontiguousarray: that one turns a scalar into shape [1].
    return np.asarray(array, dtype=dtype.numpy, order="C"), dtype
