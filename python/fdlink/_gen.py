"""Generated kernels (fdlink/gen.h): Map over a declared function, Elementwise and Reduction
(PyCUDA's ElementwiseKernel and ReductionKernel), with their scalars packed to the declared types.
"""

from __future__ import annotations

import numbers
import struct
from typing import Any, Dict, List, Optional, Protocol, Tuple

from . import _errors, _fdlink
from ._device import _launch_stream, device
from ._types import _STRUCT, Declaration, _arg_list_types, _type_code

fdlink_device = device


class _Library(Protocol):
    """What a Map needs of its Library (fdlink._library, the module above this one)."""

    def declaration(self, name: str) -> Declaration: ...

    def _gen(self, dev: Optional["_fdlink.Device"]) -> "_fdlink.Gen": ...


# ---- generated kernels -------------------------------------------------------------------------

def _length(a: Any) -> Optional[int]:
    """Elements of an array argument (None for a scalar)."""
    if isinstance(a, (int, float, bytes)):
        return None
    if isinstance(a, _fdlink.Buffer):
        n = 1
        for s in a.shape:
            n *= s
        return n
    t = type(a)
    if hasattr(t, "__cuda_array_interface__") or hasattr(t, "__dlpack__"):
        # an array type (CuPy, PyTorch, Numba, JAX): its shape, without building the interface
        # dict (CuPy's costs microseconds, as much as the launch)
        shape = getattr(a, "shape", None)
        if isinstance(shape, tuple):
            n = 1
            for s in shape:
                n *= int(s)
            return n
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        n = 1
        for s in cai["shape"]:
            n *= s
        return n
    if hasattr(a, "__dlpack__") and hasattr(a, "shape"):
        n = 1
        for s in a.shape:
            n *= int(s)
        return n
    return None


def _arg_error(cls: type, message: str) -> "_errors.Error":
    """An fdlink argument error raised in Python (as the extension's conversion raises them)."""
    return cls({"code": -1, "status": "FDL_EINVAL", "message": message, "formatted": message})


def _pack_scalar(v: Any, code: Optional[str], what: str) -> Any:
    """A scalar for a declared type: Python's bool, int and float and NumPy's scalars go to the
    extension, which converts them as C converts them to a prototype (docs/python.md); other
    numbers are packed here."""
    if code is None or code.startswith("*"):
        return v
    if isinstance(v, (bytes, int, float)):
        return v
    if hasattr(v, "__array_interface__") and getattr(v, "shape", None) == ():
        return v  # a NumPy scalar: checked and packed by the extension
    if not isinstance(v, numbers.Number):
        raise _arg_error(_errors.ArgumentTypeError,
                         f"{what}: a {type(v).__name__} cannot be packed as {code}")
    try:
        return struct.pack("<" + _STRUCT[code], v)
    except (struct.error, TypeError, OverflowError, ValueError) as e:
        raise _arg_error(_errors.InvalidArgumentError,
                         f"{what}: {v!r} cannot be packed as {code}: {e}") from None


class Map:
    """A map over a declared function: ``m(out, a, b, n=None, stream=None, sync=True)``.

    out[i] = f(a[i], b[i]) for i < n (n: the output's length); each parameter an array or a
    scalar broadcast to every index. Arrays' element types are checked against the declaration;
    scalars are packed to the declared types. With sync (the default) the call waits and raises
    DeviceStatusError with the lowest failing index.
    """

    def __init__(self, lib: _Library, name: str, modes: Optional[str],
                 device: Optional["_fdlink.Device"]):
        self.lib, self.name, self.modes = lib, name, modes
        self.device = device or fdlink_device()
        d = lib.declaration(name)
        self.declaration = d
        self._ret = _type_code(d.return_type)
        self._params = [_type_code(t) for t in d.param_types]
        self._maps: Dict[str, _fdlink.Map] = {}

    def _map(self, modes: str) -> "_fdlink.Map":
        m = self._maps.get(modes)
        if m is None:
            m = self.lib._gen(self.device).map(self.name, modes)
            arr = lambda c: None if c is None else ("*" + c.lstrip("*"))  # noqa: E731
            m.types = tuple([arr(self._ret)] + [arr(c) if mo == "a" else c
                                                 for c, mo in zip(self._params, modes)])
            self._maps[modes] = m
        return m

    def __call__(self, out: Any, *args: Any, n: Optional[int] = None, stream: Any = None,
                 sync: bool = True) -> Any:
        if len(args) != len(self._params):
            raise TypeError(f"map '{self.name}' takes {len(self._params) + 1} arguments (the "
                            f"output, then {len(self._params)}), but {len(args) + 1} were given")
        modes = self.modes or "".join("a" if _length(a) is not None else "s" for a in args)
        if n is None:
            n = _length(out)
            if n is None:
                raise TypeError(f"map '{self.name}': the output must be an array")
        packed = [_pack_scalar(a, c, f"map '{self.name}': argument {i + 2}") if mo == "s" else a
                  for i, (a, c, mo) in enumerate(zip(args, self._params, modes))]
        self._map(modes).launch(n, sync, _launch_stream(stream, self.device), out, *packed)
        return out

    def check(self) -> None:
        """After calls with sync=False: wait, then raise DeviceStatusError for the lowest failing
        index since the last check."""
        for m in self._maps.values():
            m.check()

    def source(self, modes: Optional[str] = None) -> str:
        """The generated CUDA C (for @modes, default all arrays)."""
        return self._map(modes or self.modes or "a" * len(self._params)).source

    def __repr__(self) -> str:
        return f"<fdlink.Map {self.name}: {self.declaration.signature}>"


def _count_and_pack(what: str, args: Tuple[Any, ...], n: Optional[int],
                    types: List[Optional[str]]) -> Tuple[int, List[Any]]:
    """An elementwise kernel's or a reduction's n (given, else the first array's length) and
    its arguments with their scalars packed to the declared types."""
    if n is None:
        n = next((ln for ln in map(_length, args) if ln is not None), None)
        if n is None:
            raise TypeError(f"{what}: no array argument to take n from; pass n=")
    return n, [_pack_scalar(a, c, f"argument {i + 1}") for i, (a, c) in
               enumerate(zip(args, types + [None] * len(args)))]


class Elementwise:
    """An elementwise kernel: ``k(*args, n=None, stream=None, sync=True)`` over i < n (n: the
    first array's length)."""

    def __init__(self, m: "_fdlink.Map", arguments: str, device: "_fdlink.Device"):
        self._m, self.arguments, self.device = m, arguments, device
        self._types = _arg_list_types(arguments)
        m.types = tuple(self._types)

    @property
    def source(self) -> str:
        return self._m.source

    def __call__(self, *args: Any, n: Optional[int] = None, stream: Any = None,
                 sync: bool = True) -> None:
        n, packed = _count_and_pack("elementwise", args, n, self._types)
        self._m.launch(n, sync, _launch_stream(stream, self.device), *packed)

    def check(self) -> None:
        """After calls with sync=False: wait, then raise DeviceStatusError (lowest index)."""
        self._m.check()


class Reduction:
    """A reduction: ``r(*args, n=None, stream=None)`` -> the result as a Python number."""

    def __init__(self, r: "_fdlink.Reduction", type: str, arguments: str,
                 device: "_fdlink.Device"):
        self._r, self.arguments, self.device = r, arguments, device
        self._code = _type_code(type)
        self._types = _arg_list_types(arguments)
        r.types = tuple(self._types)

    @property
    def source(self) -> str:
        return self._r.source

    def __call__(self, *args: Any, n: Optional[int] = None, stream: Any = None,
                 out: Any = None) -> Any:
        """The result as a Python number (waits); with @out (device memory of the result's
        size, e.g. a one-element CuPy array), written there in the stream and nothing waits
        (``check()`` reports failed calls later); returns @out."""
        n, packed = _count_and_pack("reduction", args, n, self._types)
        if out is not None:
            self._r.run_async(n, _launch_stream(stream, self.device), out, *packed)
            return out
        raw = self._r.run(n, _launch_stream(stream, self.device), *packed)
        if self._code in _STRUCT:
            return struct.unpack("<" + _STRUCT[self._code], raw)[0]
        return raw

    def check(self) -> None:
        """After calls with out=: wait, then raise DeviceStatusError for a failed FDL_MAP_CALL."""
        self._r.check()
