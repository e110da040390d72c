"""Devices, streams and device arrays: ``device()``, ``stream()``, ``empty()``, ``to_device()``,
``to_host()`` over the extension's Device, Stream and Buffer.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _errors, _fdlink
from ._types import _STRUCT, _c_type

# ---- devices and streams -----------------------------------------------------------------------

Device = _fdlink.Device
Buffer = _fdlink.Buffer
Stream = _fdlink.Stream
PreparedLaunch = _fdlink.Launch


_devices: Dict[int, "_fdlink.Device"] = {}
_devices_lock = threading.Lock()


def device(ordinal: Optional[int] = None) -> "_fdlink.Device":
    """The process's handle of GPU @ordinal (None: FDLINK_DEVICE, else 0), opened once.

    Raises NoDeviceError without a GPU, LibraryNotFoundError without a driver.
    """
    key = -1 if ordinal is None else int(ordinal)
    with _devices_lock:
        d = _devices.get(key)
        if d is None:
            d = _fdlink.Device(key)
            _devices[key] = d
            _devices.setdefault(d.ordinal, d)
        return d


def device_count() -> int:
    """Number of CUDA devices (raises NoDeviceError/LibraryNotFoundError without any)."""
    return _fdlink.device_count()


def devices() -> List[Dict[str, Any]]:
    """Every device's description (name, arch, memory, limits); [] without a driver or device."""
    try:
        n = _fdlink.device_count()
    except (_errors.NoDeviceError, _errors.LibraryNotFoundError):
        return []
    return [device(i).info for i in range(n)]


def stream(obj: Any = None, *, device_: Optional["_fdlink.Device"] = None) -> "_fdlink.Stream":
    """A stream for launches.

    - ``stream()``: a new stream of fdlink's (owned);
    - ``stream(s)`` wraps another library's stream, ordered with its work: anything with
      ``__cuda_stream__`` (cuda.core, and fdlink's own), a CuPy stream (``.ptr``), a PyTorch
      stream (``.cuda_stream``), a Numba stream (``.handle``), or a raw CUstream int (0 or 1 the
      legacy default stream, 2 the per-thread default stream).
    """
    dev = device_ or device()
    if obj is None:
        return dev.stream()
    if isinstance(obj, _fdlink.Stream):
        return obj
    return dev.wrap_stream(_stream_handle(obj), obj)


def _stream_handle(obj: Any) -> int:
    if isinstance(obj, bool):
        raise TypeError("stream must be a stream object or an int handle, not a bool")
    if isinstance(obj, int):
        return obj
    proto = getattr(obj, "__cuda_stream__", None)
    if proto is not None:
        v = proto() if callable(proto) else proto
        if not (isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], int)):
            raise TypeError(f"__cuda_stream__ gave {v!r}, not (version, handle)")
        return v[1]
    for attr in ("cuda_stream", "ptr", "handle"):  # PyTorch, CuPy, Numba
        h = getattr(obj, attr, None)
        if h is not None:
            if not isinstance(h, int):
                # Numba's handle: a ctypes c_void_p (value None for the default stream), or
                # cuda-bindings' CUstream (int() gives the handle)
                v = getattr(h, "value", h)
                if v is None:
                    return 0
                try:
                    h = int(v)
                except (TypeError, ValueError):
                    continue
            return h
    raise TypeError(f"stream: {type(obj).__name__} is not a stream (no __cuda_stream__, "
                    "cuda_stream, ptr or handle)")


def _launch_stream(s: Any, dev: "_fdlink.Device") -> Optional["_fdlink.Stream"]:
    if s is None or isinstance(s, _fdlink.Stream):
        return s
    h = _stream_handle(s)
    return None if h == 0 else dev.wrap_stream(h, s)


# ---- arrays ------------------------------------------------------------------------------------

def empty(shape: Union[int, Sequence[int]], dtype: str = "f4", *,
          device_: Optional["_fdlink.Device"] = None) -> "_fdlink.Buffer":
    """Uninitialised device memory with ``__cuda_array_interface__`` and DLPack: an fdlink Buffer.

    @dtype: an array-interface code ('f4', '<i8', ...) or a type name ('float32'), or a NumPy dtype.
    """
    try:
        shape_t = (_index(shape),) if not isinstance(shape, (tuple, list)) else \
            tuple(_index(s) for s in shape)
    except TypeError:
        raise _errors.bad_argument("shape", f"{shape!r} is not an int or a sequence of ints",
                                   type_error=True) from None
    code = _dtype_code(dtype)
    n = 1
    for s in shape_t:
        if s < 0:
            raise _errors.bad_argument("shape", f"{shape_t} has a negative dimension")
        n *= s
    size = int(code[2:]) * n
    dev = device_ or device()
    return dev.alloc(max(size, int(code[2:])), code, shape_t)


def _index(v: Any) -> int:
    """An int from an int-like (int, NumPy integer), else TypeError (a float or str is not one)."""
    import operator

    return operator.index(v)


def _dtype_code(dtype: Any) -> str:
    """An array-interface code ('<f4') from a code, a type name or a NumPy dtype; any other is an
    fdlink error naming dtype (InvalidArgumentError, a ValueError)."""
    s = getattr(dtype, "str", None)  # a NumPy dtype
    if s is None:
        s = str(getattr(dtype, "__name__", dtype))
    if s[:1] not in "<>|=":  # a type name of the C library's vocabulary ('float32', 'float', ...)
        try:
            code, depth = _c_type(s)
        except _errors.Error:
            code, depth = None, 0  # not a name: perhaps a code ('f4'), checked below
        if code is not None and depth == 0:
            s = code
    if s[:1] not in "<>|=":
        s = ("|" if s[1:] == "1" else "<") + s
    if s[1:] not in _STRUCT:
        raise _errors.bad_argument(
            "dtype", f"{dtype!r} is not an element type fdlink knows: a name (float32, int32, "
            "uint8, bool, ...; C's float, int, ...) or an array-interface code ('<f4', '|u1', "
            "...) of a bool, integer or float of 1, 2, 4 or 8 bytes")
    return s


def to_device(array: Any, *, device_: Optional["_fdlink.Device"] = None) -> "_fdlink.Buffer":
    """A copy in device memory of a host array (anything with ``__array_interface__``, C-contiguous)."""
    ai = array.__array_interface__
    if ai.get("strides") is not None:
        raise ValueError("to_device: the array is not C-contiguous")
    buf = empty(ai["shape"], ai["typestr"], device_=device_)
    buf.write(array.tobytes())
    return buf


def to_host(buf: "_fdlink.Buffer") -> Any:
    """A NumPy copy of an fdlink Buffer (needs NumPy)."""
    import numpy  # only here: the package does not depend on NumPy

    return numpy.frombuffer(buf.read(), dtype=buf.typestr).reshape(buf.shape).copy()
