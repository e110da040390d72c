"""The objects of the fdlink package, over the extension :mod:`fdlink._fdlink`.

Everything here is names and sugar; every capability is a call into libfdlink (docs/python.md).
"""

from __future__ import annotations

import numbers
import os
import re
import struct
import threading
import weakref
from typing import (Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple,
                    Union)

from . import _errors, _fdlink, _libs

_fdlink._set_error_factory(_errors.from_record)

PathLike = Union[str, "os.PathLike[str]"]
Dim = Union[int, Tuple[int, ...]]

#: Kinds of inputs, as libfdlink names them.
KINDS = ("auto", "ptx", "cubin", "fatbin", "ltoir", "object", "library", "cuda", "bitcode")

# ---- types -------------------------------------------------------------------------------------

# The signature language's scalar types (abi/ABI.md) as array-interface type codes.
_TYPECODES = {
    "bool": "b1", "boolean": "b1", "bool_": "b1",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "intp": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8", "uintp": "u8",
    "float16": "f2", "float32": "f4", "float64": "f8",
    # C spellings
    "char": "i1", "signed char": "i1", "unsigned char": "u1", "short": "i2",
    "unsigned short": "u2", "int": "i4", "unsigned": "u4", "unsigned int": "u4",
    "long": "i8", "long long": "i8", "unsigned long": "u8", "unsigned long long": "u8",
    "size_t": "u8", "float": "f4", "double": "f8", "__half": "f2", "half": "f2",
    "int8_t": "i1", "int16_t": "i2", "int32_t": "i4", "int64_t": "i8",
    "uint8_t": "u1", "uint16_t": "u2", "uint32_t": "u4", "uint64_t": "u8",
}
_STRUCT = {"b1": "?", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
           "u4": "I", "u8": "Q", "f2": "e", "f4": "f", "f8": "d"}


def _type_code(t: str) -> Optional[str]:
    """'*f4' for an array (pointer) of float32, 'f4' for a float32 scalar, None for void*/unknown."""
    t = " ".join(t.replace("const ", "").split())
    depth = 0
    while True:
        if t.endswith("[:]") or t.endswith("[::1]"):
            t, depth = t[: t.rindex("[")].strip(), depth + 1
        elif t.endswith("*"):
            t, depth = t[:-1].strip(), depth + 1
        elif t.startswith("CPointer(") and t.endswith(")"):
            t, depth = t[len("CPointer("):-1].strip(), depth + 1
        else:
            break
    if t in ("void", "voidptr"):
        return None if depth or t == "voidptr" else None
    code = _TYPECODES.get(t)
    if code is None:
        raise ValueError(f"unknown type {t!r} (use the signature language's names: float32, "
                         "int32, ..., or C's: float, int, ...)")
    if depth > 1:
        return None  # an array of pointers: not checked
    return ("*" + code) if depth else code


def _parse_names(signature: Union[str, Sequence[str], None]) -> Tuple[Optional[str], ...]:
    """Parameter names of a C-style signature ('float *y, int n' -> ('y', 'n')); None where a
    parameter has none (and for the signature language's 'void(float32[:], int32)')."""
    if not isinstance(signature, str):
        return ()
    s = signature.strip()
    if "(" in s and s.endswith(")"):
        s = s[s.index("(") + 1:-1]
    names: List[Optional[str]] = []
    for p in (p.strip() for p in s.split(",") if p.strip()):
        words = p.replace("*", " * ").split()
        last = words[-1] if words else ""
        named = (len(words) > 1 and last.isidentifier() and last not in _TYPECODES and
                 last not in ("const", "unsigned", "signed", "long", "short", "int", "char"))
        names.append(last if named else None)
    return tuple(names)


class Param(NamedTuple):
    """One kernel parameter (``kernel.params``): its position, its name where a signature gave
    one, its class (``'float'``, ``'signed'``, ``'unsigned'``, ``'bits'`` (an integer or a
    pointer), ``'bytes'`` (a struct by value), ``'pointer'`` and ``'bool'`` from a signature, or
    ``'unknown'``), its size in bytes (0: not known), and where the class came from: ``'signature'``,
    ``'code'`` (the PTX fdlink saw), or ``'size'`` (only the size is known: a cubin from
    elsewhere; then ``known`` is False and arguments are packed by their Python type, see
    docs/python.md)."""

    index: int
    name: Optional[str]
    cls: str
    size: int
    source: str

    @property
    def known(self) -> bool:
        return self.source != "size"


_CLASS_NAMES = ("unknown", "float", "signed", "unsigned", "bits", "bytes")
_SIG_CLASS = {"f": "float", "i": "signed", "u": "unsigned", "b": "bool"}


def _parse_types(signature: Union[str, Sequence[str]]) -> Tuple[Optional[str], ...]:
    """Parameter types from 'void(float32[:], float32, int32)', 'float *x, float a' or a list."""
    if isinstance(signature, str):
        s = signature.strip()
        if "(" in s and s.endswith(")"):
            s = s[s.index("(") + 1:-1]
        parts = [p.strip() for p in s.split(",") if p.strip()]
        items = []
        for p in parts:
            # "float *x" / "const float* x" / "float32": drop a trailing parameter name
            words = p.replace("*", " * ").split()
            if len(words) > 1 and words[-1] not in ("*",) and words[-1].isidentifier() and \
                    " ".join(words[:-1]).replace(" *", "*").replace(" * ", "*") and \
                    words[-1] not in _TYPECODES and not words[-1].startswith("CPointer"):
                words = words[:-1]
            items.append(" ".join(words).replace(" *", "*"))
        signature = items
    return tuple(_type_code(t) for t in signature)


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
    return dev.wrap_stream(_stream_handle(obj))


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
    return None if h == 0 else dev.wrap_stream(h)


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
    if s in _TYPECODES:
        s = _TYPECODES[s]
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


# ---- inputs ------------------------------------------------------------------------------------

class Source:
    """One input: bytes or a file, with a name for diagnostics and an optional stated kind."""

    __slots__ = ("data", "path", "name", "kind", "log")

    def __init__(self, data: Union[bytes, str, None] = None, *, path: Optional[PathLike] = None,
                 name: Optional[str] = None, kind: str = "auto"):
        if (data is None) == (path is None):
            raise TypeError("Source: give data or path, not both or neither")
        if isinstance(data, str):  # CUDA C text
            data = data.encode()
            if kind == "auto":
                kind = "cuda"
        self.data = data
        # a path as str; bytes that are no UTF-8 kept by surrogateescape (the extension passes
        # the file system's bytes on)
        self.path = None if path is None else os.fsdecode(os.fspath(path))
        name = name or (os.path.basename(self.path) if self.path else "input")
        # a name for diagnostics is text: bytes that were not UTF-8 shown as U+FFFD
        self.name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        self.kind = kind
        self.log: Optional[str] = None

    def _entry(self, default_name: str) -> Tuple[Optional[bytes], Optional[str], str, int]:
        kind = _fdlink.kind_parse(self.kind)
        name = self.name if (self.name != "input" or self.path) else default_name
        return (self.data, self.path, name, kind)

    def __repr__(self) -> str:
        what = self.path if self.path else f"{len(self.data or b'')} bytes"
        return f"Source({what!s}, name={self.name!r}, kind={self.kind!r})"


SourceLike = Union[Source, bytes, bytearray, str, "os.PathLike[str]"]


def _as_source(x: SourceLike, i: int, cuda_name: str) -> Source:
    """bytes: any input kind (recognised from its content); a pathlib.Path, or a str naming an
    existing file: that file; any other str: CUDA C source text (PyCUDA's SourceModule style)."""
    if isinstance(x, Source):
        return x
    if isinstance(x, (bytes, bytearray)):
        return Source(bytes(x), name=f"input{i}")
    if isinstance(x, os.PathLike):
        return Source(path=x)
    if isinstance(x, str):
        if "\n" not in x and os.path.isfile(x):
            return Source(path=x)
        return Source(x, name=cuda_name, kind="cuda")
    raise TypeError(f"input {i} must be bytes, a path or CUDA C text (str), not "
                    f"{type(x).__name__}")


_BACKENDS = {"auto": 0, "nvjitlink": 1, "culink": 2}
_LTO = {"auto": 0, True: 1, "on": 1, False: 2, "off": 2, None: 0}
_CACHE = {"auto": 0, True: 1, "on": 1, False: 2, "off": 2, None: 0}
_OUTPUT = {"auto": 0, "ptx": 1, "ltoir": 2, None: 0}


def _options(arch: Optional[str], options: Mapping[str, Any]) -> Dict[str, Any]:
    """Keyword options -> the extension's dict (C names; enums as numbers)."""
    known = {"opt_level", "debug", "lineinfo", "verbose", "extra", "backend", "lto",
             "maxrregcount", "ftz", "prec_div", "prec_sqrt", "fma", "cudadevrt", "cache",
             "cache_dir", "isolate", "xptxas", "split_compile", "cache_remote", "defines",
             "include_dirs", "std", "cuda_output", "nvrtc_extra", "emit_ptx", "kernels_used",
             "variables_used", "time", "optimize_unused_variables", "split_compile_extended",
             "jump_table_density", "jl_cache", "device_stack_protector", "no_toolkit_include",
             "cache_lease_ms", "jobs", "lto_report", "require_warm"}
    bad = set(options) - known
    if bad:
        raise TypeError(f"unknown option(s): {', '.join(sorted(bad))}")
    d: Dict[str, Any] = dict(options)
    d["arch"] = arch
    for key, table in (("backend", _BACKENDS), ("lto", _LTO), ("cache", _CACHE),
                       ("cuda_output", _OUTPUT)):
        if key in d:
            if d[key] not in table:
                raise ValueError(f"option {key}={d[key]!r}: expected one of "
                                 f"{', '.join(repr(k) for k in table if k is not None)}")
            d[key] = table[d[key]]
    if "cache_dir" in d and d["cache_dir"] is not None:
        d["cache_dir"] = os.fspath(d["cache_dir"])
    if "require_warm" in d:  # True: a cache miss is an error; False: never; None: the env's
        d["require_warm"] = {True: 1, False: -1, None: 0}.get(d["require_warm"],
                                                              d["require_warm"])
    if "defines" in d and isinstance(d["defines"], Mapping):
        d["defines"] = [k if v is None else f"{k}={v}" for k, v in d["defines"].items()]
    if "include_dirs" in d and d["include_dirs"] is not None:
        d["include_dirs"] = [os.fspath(p) for p in d["include_dirs"]]
    for key in ("extra", "xptxas", "nvrtc_extra", "kernels_used", "variables_used"):
        if isinstance(d.get(key), (list, tuple)):
            d[key] = list(d[key])
    return d


def _default_arch(arch: Any) -> Optional[str]:
    """None -> the default device's architecture when there is one, else an error naming arch;
    a list of architectures (a fat link's) -> its first sm_NN, for what links one."""
    targets = _fat_targets(arch) if arch is not None else None
    if targets is not None:
        return targets[0][0]
    if isinstance(arch, (list, tuple)):
        arch = arch[0] if arch else None
    if arch is not None:
        return arch
    try:
        return device().arch
    except (_errors.NoDeviceError, _errors.LibraryNotFoundError) as e:
        # an fdlink error (InvalidArgumentError) that is also the ValueError it always was
        raise _errors.bad_argument("arch", f"is needed without a GPU ({e})") from e


# ---- declarations and libraries ----------------------------------------------------------------

class Declaration:
    """One declared foreign function."""

    __slots__ = ("name", "signature", "abi", "source", "line", "column", "return_type",
                 "param_types")

    def __init__(self, t: tuple):
        (self.name, self.signature, self.abi, self.source, _unused, self.line, self.column,
         _sigcol, self.return_type, self.param_types) = t

    def __repr__(self) -> str:
        return (f"Declaration({self.name}: {self.signature} abi={self.abi} "
                f"at {self.source}:{self.line}:{self.column})")


def _load_decls(decls: Union[PathLike, bytes, str], name: Optional[str]) -> "_fdlink.Decls":
    """A PathLike, or a str naming a file (no ':' and no newline, or an existing file): the
    file; any other str, or bytes: declaration text."""
    is_path = isinstance(decls, os.PathLike) or (
        isinstance(decls, str) and (os.path.isfile(decls) or
                                    ("\n" not in decls and ":" not in decls)))
    if is_path:
        assert not isinstance(decls, bytes)
        # read by the C library's checked reader, as every input file: a device, FIFO,
        # directory or a file beyond its limit refused at once with its message (FileError,
        # LimitError); the path names the declarations
        return _fdlink.decls_load(os.fsdecode(os.fspath(decls)))
    assert not isinstance(decls, os.PathLike)
    return _fdlink.Decls(decls, name or "<declarations>")


class Library:
    """Foreign device functions: their declarations and their device code, checked together.

    ``Library(decls, sources, arch=...)``: @decls is a ``.decl`` file (a path) or its text;
    @sources the functions' code, each CUDA C (text, or a ``.cu`` file), PTX, cubin, fatbin,
    LTO-IR, a host object or a static library, as bytes or paths (kinds recognised from content).
    With ``check=True`` (the default) the sources are compiled and checked against the
    declarations now, through the cache (an ABIError names file, line, column, symbol and rule).
    Keyword options are the link options of the C library (``opt_level``, ``lto``, ``cache``,
    ``defines``, ``include_dirs``, ``std``, ...).
    """

    def __init__(self, decls: Union[PathLike, bytes, str], sources: Iterable[SourceLike] = (),
                 *, arch: Optional[str] = None, name: Optional[str] = None, check: bool = True,
                 **options: Any):
        _libs.ensure()
        if isinstance(sources, (str, bytes, bytearray, os.PathLike, Source)):
            raise _errors.bad_argument(
                "sources", f"must be a list of sources, not one {type(sources).__name__} (a str "
                "would be compiled one character at a time): Library(decls, "
                f"[{sources!r:.40}])", type_error=True)
        self._decls = _load_decls(decls, name)
        self.sources = [_as_source(s, i, f"source{i}.cu") for i, s in enumerate(sources)]
        self.arch = arch
        self.options = dict(options)
        _options(arch, options)  # refuse unknown options now
        self._check: Optional[_fdlink.Link] = None
        if check and self.sources:
            self.check()

    @property
    def declarations(self) -> List[Declaration]:
        """The declarations, in file order."""
        return [Declaration(t) for t in self._decls.items()]

    def declaration(self, name: str) -> Declaration:
        for d in self.declarations:
            if d.name == name:
                return d
        raise KeyError(name)

    def header(self, guard: Optional[str] = None) -> str:
        """The prototypes header (``.cuh``) for callers: one extern "C" __device__ per function."""
        return self._decls.header(guard)

    def _inputs(self, extra: Sequence[Source] = ()) -> List[tuple]:
        return [s._entry(f"input{i}") for i, s in enumerate(list(self.sources) + list(extra))]

    def check(self) -> "Library":
        """Compile and check the sources against the declarations (cached); raise on a mismatch."""
        arch = _default_arch(self.arch)
        # the checks of a link without the link (fdl_link_check): functions declared but not
        # defined by these sources are an error here, as at a link
        self._check = _fdlink.Link(_options(arch, self.options), [self._decls], self._inputs(),
                                   True)
        return self

    def link(self, *callers: SourceLike, arch: Union[str, Sequence[str], None] = None,
             device: Optional["_fdlink.Device"] = None, **options: Any) -> "Module":
        """Link caller kernels (CUDA C text, files, or any input kind) with the library -> Module.

        The callers' CUDA C sees the declarations' prototypes (pre-included), so a call that
        disagrees with a declaration does not compile.
        """
        _libs.ensure()
        arch = arch or self.arch
        if arch is None and device is not None:
            arch = device.arch
        extra = [_as_source(c, i, f"caller{i}.cu") for i, c in enumerate(callers)]
        targets = _fat_targets(arch)
        if targets is not None:
            return _fat_link(targets, lambda a, o: _fdlink.Link(
                _options(a, {**self.options, **options, **o}), [self._decls],
                self._inputs(extra)), device, {**self.options, **options}.get("isolate"))
        if isinstance(arch, (list, tuple)):
            arch = arch[0] if arch else None
        arch = _default_arch(arch)
        lk = _fdlink.Link(_options(arch, {**self.options, **options}), [self._decls],
                          self._inputs(extra))
        return Module(lk, device)

    # generated kernels (fdlink/gen.h)
    def _gen(self, dev: Optional["_fdlink.Device"]) -> "_fdlink.Gen":
        key = id(dev)
        gens = self.__dict__.setdefault("_gens", {})
        g = gens.get(key)
        if g is None:
            paths = [s.path for s in self.sources if s.path]
            datas = [(s.data, s.name, _fdlink.kind_parse(s.kind)) for s in self.sources
                     if s.data is not None]
            g = _fdlink.Gen(dev, self._decls, None if dev is not None else
                            _default_arch(self.arch), paths, datas,
                            _options(None, self.options))
            gens[key] = (g, dev)
        else:
            g = g[0]
        return g

    def map(self, name: str, modes: Optional[str] = None, *,
            device: Optional["_fdlink.Device"] = None) -> "Map":
        """``lib.map("mul_f32_f32")(out, a, b)``: out[i] = f(a[i], b[i]); scalars broadcast.

        @modes: one character per parameter, 'a' array or 's' scalar; None: chosen at the first
        call from the arguments (one compiled kernel per pattern).
        """
        return Map(self, name, modes, device)

    def elementwise(self, arguments: str, operation: str, *,
                    device: Optional["_fdlink.Device"] = None) -> "Elementwise":
        """PyCUDA's ElementwiseKernel: ``lib.elementwise("float a, float *x, float *y",
        "y[i] = a * x[i] + y[i]")(a, x, y)``; the statement may call declared functions."""
        dev = device or fdlink_device()
        return Elementwise(self._gen(dev).elementwise(arguments, operation), arguments, dev)

    def reduction(self, type: str, arguments: str, map: str, reduce: str = "sum",
                  neutral: Optional[str] = None, *,
                  device: Optional["_fdlink.Device"] = None) -> "Reduction":
        """PyCUDA's ReductionKernel: ``lib.reduction("float32", "const float *x", "x[i]*x[i]",
        "sum")(x)`` -> a Python number."""
        dev = device or fdlink_device()
        return Reduction(self._gen(dev).reduction(type, arguments, map, reduce, neutral),
                         type, arguments, dev)

    def __repr__(self) -> str:
        return (f"<fdlink.Library {self._decls.source}: {len(self._decls.items())} functions, "
                f"{len(self.sources)} sources, arch={self.arch}>")


fdlink_device = device


def compile(source: Union[str, bytes], *, decls: Union[PathLike, bytes, str, None] = None,
            arch: Optional[str] = None, name: str = "source.cu", output: str = "auto",
            **options: Any) -> Source:
    """CUDA C -> checked LTO-IR or PTX bytes (NVRTC, through the cache), without a link.

    With @decls the declarations' prototypes are pre-included (a definition that disagrees does
    not compile) and the output is checked against them. @output: 'auto' (LTO-IR where a link
    can use it), 'ltoir' or 'ptx'. The result is a Source (``.data``, ``.kind``, ``.log``: NVRTC's
    warnings) that any link takes, e.g. Numba's ``link=``.
    """
    _libs.ensure()
    arch = _default_arch(arch)
    d = _load_decls(decls, None) if decls is not None else None
    opts = _options(arch, {**options, "cuda_output": output})
    data, kind, log = _fdlink.cuda_compile(source, name, arch, d, opts)
    out = Source(data, name=name.rsplit(".", 1)[0] + (".ltoir" if kind == "ltoir" else ".ptx"),
                 kind=kind)
    out.log = log
    return out


class Kernels:
    """Generated kernels without declared functions (``fdlink.kernels.elementwise(...)``)."""

    def __init__(self) -> None:
        self._lib: Optional[Library] = None

    def _library(self) -> Library:
        if self._lib is None:
            self._lib = Library(b"", check=False)
        return self._lib

    def elementwise(self, arguments: str, operation: str, **kw: Any) -> "Elementwise":
        return self._library().elementwise(arguments, operation, **kw)

    def reduction(self, *args: Any, **kw: Any) -> "Reduction":
        return self._library().reduction(*args, **kw)


def link(*inputs: SourceLike, decls: Union[PathLike, bytes, str, None] = None,
         arch: Union[str, Sequence[str], None] = None, device: Optional["_fdlink.Device"] = None,
         **options: Any) -> "Module":
    """Link inputs (with declarations to check them against, if given) -> Module."""
    _libs.ensure()
    arch = arch or (device.arch if device is not None else None)
    # without declarations, an empty set: the link's check then makes the post-LTO PTX of
    # LTO-IR inputs (CUDA C compiled by NVRTC among them), beside the link and cached, whose
    # .entry prototypes give the kernels' parameter classes (kernel.params, issue 38)
    ds = [_load_decls(decls if decls is not None else b"", None if decls is not None
                      else "<no declarations>")]
    srcs = [_as_source(x, i, f"input{i}.cu") for i, x in enumerate(inputs)]
    targets = _fat_targets(arch)
    if targets is not None:
        return _fat_link(targets, lambda a, o: _fdlink.Link(
            _options(a, {**options, **o}), ds, [s._entry(f"input{i}")
                                                for i, s in enumerate(srcs)]), device,
            options.get("isolate"))
    if isinstance(arch, (list, tuple)):
        arch = arch[0] if arch else None
    arch = _default_arch(arch)
    lk = _fdlink.Link(_options(arch, options), ds, [s._entry(f"input{i}")
                                                    for i, s in enumerate(srcs)])
    return Module(lk, device)


# ---- fat binaries: one program for several architectures (issue 40) ----------------------------

def _fat_targets(arch: Any) -> Optional[List[Tuple[str, int, bool, bool]]]:
    """An arch that names several architectures (a list, "sm_80,sm_90", or any compute_NN) ->
    [(link arch "sm_NN", NN, its cubin wanted, its PTX wanted)], one per sm_NN; else None."""
    if isinstance(arch, str):
        names = arch.split(",")
    elif isinstance(arch, (list, tuple)):
        names = list(arch)
    else:
        return None
    if len(names) == 1 and isinstance(names[0], str) and not names[0].startswith("compute_"):
        return None  # one architecture: a plain link
    out: Dict[str, List[Any]] = {}
    for n in names:
        m = re.fullmatch(r"(sm|compute)_([0-9]{2,4})", n) if isinstance(n, str) else None
        if not m:
            raise ValueError(f"arch {n!r} in a list: expected sm_NN or compute_NN (sm_90, "
                             f"compute_90)")
        t = out.setdefault(f"sm_{m.group(2)}", [f"sm_{m.group(2)}", int(m.group(2)), False,
                                                 False])
        t[2 if m.group(1) == "sm" else 3] = True
    return [tuple(t) for t in out.values()]  # type: ignore[misc]


def _fat_link(targets: List[Tuple[str, int, bool, bool]], make: Any,
              device: Optional["_fdlink.Device"], isolate: Any = None) -> "Module":
    """Link once per architecture, side by side (each link runs without the GIL, checked and
    cached on its own), into one fatbin: a cubin per sm_NN, the post-LTO PTX per compute_NN.
    Isolated links (@p isolate, or FDLINK_LINK_ISOLATE=1) run one after another: each forks a
    child, and a fork beside running threads is not safe (fdl_links_complete does the same)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(t: Tuple[str, int, bool, bool]) -> Any:
        return make(t[0], {"emit_ptx": 1} if t[3] else {})

    jobs = int(os.environ.get("FDLINK_JOBS", "0") or 0) or (os.cpu_count() or 1)
    if isolate or (isolate is None and os.environ.get("FDLINK_LINK_ISOLATE") == "1"):
        jobs = 1
    with ThreadPoolExecutor(max_workers=max(1, min(len(targets), jobs))) as ex:
        links = list(ex.map(one, targets))
    entries = [(2, t[1], lk.cubin) for t, lk in zip(targets, links) if t[2]]
    entries += [(1, t[1], lk.ptx.encode()) for t, lk in zip(targets, links) if t[3]]
    return FatModule(links, [t for t in targets], _fdlink.fatbin(entries), device)


# ---- modules and kernels -----------------------------------------------------------------------

class Module:
    """A linked program: its cubin (``.cubin``), logs and diagnostics; loaded on its device at the
    first ``kernel()``."""

    def __init__(self, link: Optional["_fdlink.Link"], device: Optional["_fdlink.Device"] = None):
        self._link = link
        self._device = device
        self._mod: Optional[_fdlink.Module] = None
        self._kernels: Dict[Tuple[str, Any], Kernel] = {}

    @classmethod
    def load(cls, image: bytes, *, name: str = "module",
             device: Optional["_fdlink.Device"] = None) -> "Module":
        """A module from a cubin, fatbin or PTX image (no link)."""
        m = cls.__new__(cls)
        m._link = None
        m._device = device or fdlink_device()
        m._mod = m._device.load(image, name)
        m._kernels = {}
        return m

    @property
    def cubin(self) -> bytes:
        """The linked cubin's bytes (e.g. for cuda.core's ObjectCode.from_cubin)."""
        return self._link.cubin if self._link is not None else self._loaded().image

    @property
    def ptx(self) -> Optional[str]:
        return self._link.ptx if self._link is not None else None

    @property
    def info(self) -> Dict[str, Any]:
        """arch, backend, lto, wall_ms, cache ('miss', 'memory', 'disk', ...), cache_key, logs."""
        return self._link.info if self._link is not None else {}

    @property
    def diagnostics(self) -> List[Dict[str, Any]]:
        return self._link.diagnostics if self._link is not None else []

    @property
    def device(self) -> "_fdlink.Device":
        if self._device is None:
            self._device = fdlink_device()
        return self._device

    def _loaded(self) -> "_fdlink.Module":
        if self._mod is None:
            assert self._link is not None  # a module made by Module.load is loaded already
            self._mod = self.device.load(self._link.cubin, "module")
        return self._mod

    def kernel(self, name: str, signature: Union[str, Sequence[str], None] = None) -> "Kernel":
        """The kernel @name; with @signature ('void(float32[:], float32, int32)', 'float *y,
        float a, int n' or a list), arrays' element types and scalars are checked and packed as
        declared."""
        key = (name, signature if isinstance(signature, (str, type(None))) else tuple(signature))
        k = self._kernels.get(key)
        if k is None:
            ck = self._loaded().kernel(name)
            if signature is not None:
                ck.types = _parse_types(signature)
            # the parameters' classes as the code says them (the PTX the link saw), else their
            # sizes as the image says them: arguments are converted with them (docs/python.md)
            info = self._link.kernel_params(name) if self._link is not None else None
            if info is None:
                info = _fdlink.image_kernel_params(self.cubin, name)
            if info is not None:
                ck._code_params = info
            k = self._kernels[key] = Kernel(ck, self)
            k._names = _parse_names(signature)
        return k

    def kernel_names(self) -> Tuple[str, ...]:
        return self._loaded().kernel_names()

    def check_status(self) -> None:
        """Wait, then raise DeviceStatusError for a failed FDL_CALL since the last check."""
        self._loaded().check_status()

    def __repr__(self) -> str:
        info = self.info
        return (f"<fdlink.Module {len(self.cubin)}-byte cubin for {info.get('arch', '?')}, "
                f"cache {info.get('cache', '?')}>")


class FatModule(Module):
    """A program linked for several architectures into one fatbin (``.fatbin``, also
    ``.cubin``, the image loaded): the driver picks the cubin of its GPU, or JIT-compiles the
    newest PTX it can. ``.links`` holds each architecture's link (``info``, diagnostics)."""

    def __init__(self, links: List["_fdlink.Link"], targets: List[Tuple[str, int, bool, bool]],
                 image: bytes, device: Optional["_fdlink.Device"] = None):
        super().__init__(None, device)
        self.links = {t[0]: lk for t, lk in zip(targets, links)}
        self.archs = [a for t in targets for a, w in ((t[0], t[2]),
                                                       (f"compute_{t[1]}", t[3])) if w]
        self.fatbin = image

    @property
    def cubin(self) -> bytes:
        return self.fatbin

    @property
    def info(self) -> Dict[str, Any]:
        """archs, and each link's info (arch, cache, cache_key, ...) under links."""
        return {"archs": list(self.archs),
                "links": {a: lk.info for a, lk in self.links.items()}}

    @property
    def diagnostics(self) -> List[Dict[str, Any]]:
        return [d for lk in self.links.values() for d in lk.diagnostics]

    def _loaded(self) -> "_fdlink.Module":
        if self._mod is None:
            self._mod = self.device.load(self.fatbin, "fatbin")
        return self._mod

    def __repr__(self) -> str:
        return f"<fdlink.FatModule {len(self.fatbin)}-byte fatbin for {', '.join(self.archs)}>"


def prewarm(manifest: Union[str, "os.PathLike[str]"], *,
            bundle: Union[str, "os.PathLike[str]", None] = None) -> str:
    """``fdlink prewarm``: make every link of @manifest (one ``fdlink link`` command line a
    line) into the cache, or with @bundle into a bundle file (``fdlink.cache.import_``
    or ``fdlink cache import`` on the deployment's machine). Returns its report line; raises
    fdlink.Error naming the link that failed."""
    import subprocess

    from ._cli import executable

    _libs.ensure()
    args = [executable(), "prewarm"]
    if bundle is not None:
        args += ["--bundle", os.fspath(bundle)]
    r = subprocess.run(args + [os.fspath(manifest)], capture_output=True, text=True,
                       check=False)
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        first = next((ln for ln in lines if ": error: " in ln), lines[0] if lines else "")
        msg = first.split(": error: ", 1)[-1] if ": error: " in first else first
        raise _errors.Error({"message": msg or f"fdlink prewarm failed (exit {r.returncode})",
                             "formatted": first.removeprefix("fdlink: "), "log": r.stderr})
    return r.stdout.strip()


def _flags(cooperative: Optional[bool], sync: bool) -> int:
    # only True, False or None: 1 (or any other truthy value) is refused rather than guessed
    if cooperative is not None and not isinstance(cooperative, bool):
        raise _errors.bad_argument("cooperative", "must be True, False or None, not "
                                   f"{cooperative!r}", type_error=True)
    f = 0
    if cooperative is True:
        f |= _fdlink.LAUNCH_COOPERATIVE
    elif cooperative is False:
        f |= _fdlink.LAUNCH_NOT_COOPERATIVE
    if sync:
        f |= _fdlink.LAUNCH_SYNC
    return f


class Kernel:
    """A kernel: ``kernel[grid, block](*args)`` (Numba's style, optionally ``[grid, block,
    stream, shared_mem]``), ``kernel(*args, grid=, block=)`` (PyCUDA's), or
    ``kernel.prepare(grid, block, args)`` for a launch checked once that then costs what the C
    prepared launch costs."""

    __slots__ = ("_k", "module", "_configs", "_names", "__weakref__")

    def __init__(self, k: "_fdlink.Kernel", module: Module):
        self._k = k
        self.module = module
        self._configs: Dict[Any, Any] = {}
        self._names: Tuple[Optional[str], ...] = ()

    @property
    def params(self) -> Tuple[Param, ...]:
        """The parameters as fdlink knows them (:class:`Param`): classes from the signature
        given to ``module.kernel(name, signature)``, else from the kernel's code (PTX, CUDA C
        and LTO-IR that fdlink compiled or checked), else sizes only."""
        code = self._k._code_params or ()
        attrs = self._k.attributes
        sizes = attrs["param_sizes"] if attrs["params_known"] else tuple(s for _, s in code)
        types = self._k.types or ()
        n = max(len(sizes), len(code), len(types))
        out = []
        for i in range(n):
            size = sizes[i] if i < len(sizes) else (code[i][1] if i < len(code) else 0)
            t = types[i] if i < len(types) else None
            name = self._names[i] if i < len(self._names) else None
            if t is not None:
                cls = "pointer" if t.startswith("*") else _SIG_CLASS.get(t[0], "unknown")
                out.append(Param(i, name, cls, size or (0 if cls == "pointer" else int(t[1:])),
                                 "signature"))
            elif i < len(code) and code[i][0] and (not code[i][1] or code[i][1] == size):
                out.append(Param(i, name, _CLASS_NAMES[code[i][0]], size, "code"))
            else:
                out.append(Param(i, name, "unknown", size, "size"))
        return tuple(out)

    @property
    def name(self) -> str:
        return self._k.name

    @property
    def attributes(self) -> Dict[str, Any]:
        return self._k.attributes

    @property
    def types(self) -> Optional[Tuple[Optional[str], ...]]:
        return self._k.types

    def __getitem__(self, config: tuple) -> Any:
        try:
            return self._configs[config]  # the same configuration again: no new object
        except (KeyError, TypeError):
            pass
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise TypeError("kernel[grid, block] or kernel[grid, block, stream, shared_mem]")
        grid, block = config[0], config[1]
        s = config[2] if len(config) > 2 else None
        shared = config[3] if len(config) > 3 else 0
        slow = _Configured(self, grid, block, s, shared)
        c = self._k.configure(grid, block, shared, slow._stream, 0, slow)
        try:
            if len(self._configs) < 32 and (s is None or isinstance(s, _fdlink.Stream)):
                self._configs[config] = c
        except TypeError:  # a list geometry: not hashable, not cached
            pass
        return c

    def __call__(self, *args: Any, grid: Dim, block: Dim, stream: Any = None,
                 shared_mem: int = 0, cooperative: Optional[bool] = None,
                 sync: bool = False) -> None:
        if stream is not None and type(stream) is not _fdlink.Stream:
            stream = _launch_stream(stream, self.module.device)
        self._k.launch(grid, block, shared_mem, stream,
                       0 if cooperative is None and not sync else _flags(cooperative, sync),
                       *args)

    def launch(self, grid: Dim, block: Dim, *args: Any, stream: Any = None,
               shared_mem: int = 0, cooperative: Optional[bool] = None,
               sync: bool = False) -> None:
        if stream is None and not shared_mem and cooperative is None and not sync:
            self._k.launch(grid, block, 0, None, 0, *args)
            return
        if stream is not None and type(stream) is not _fdlink.Stream:
            stream = _launch_stream(stream, self.module.device)
        self._k.launch(grid, block, shared_mem, stream,
                       0 if cooperative is None and not sync else _flags(cooperative, sync),
                       *args)

    def prepare(self, grid: Dim, block: Dim, args: Sequence[Any] = (), *, stream: Any = None,
                shared_mem: int = 0, cooperative: Optional[bool] = None) -> "_fdlink.Launch":
        """A prepared launch: geometry and arguments checked and packed once; call it to launch
        (``p()``), ``p.set_arg(i, value)`` to change one argument."""
        return self._k.prepare(grid, block, shared_mem,
                               _launch_stream(stream, self.module.device),
                               _flags(cooperative, False), *args)

    def set_max_dynamic_shared(self, nbytes: int) -> None:
        self._k.set_max_dynamic_shared(nbytes)

    def __repr__(self) -> str:
        return f"<fdlink.Kernel {self.name}>"


class _Configured:
    """The keyword form of ``kernel[grid, block](*args, stream=, shared_mem=, cooperative=,
    sync=)``. ``kernel[grid, block]`` is the extension's Configured object, which launches a
    call without keywords itself and hands one with keywords to this. It holds the module
    weakly: the kernel caches its configurations, and the extension's objects take no part in
    garbage collection, so a strong reference back would keep the module alive for ever."""

    __slots__ = ("_launch", "_module", "_grid", "_block", "_stream", "_shared")

    def __init__(self, kernel: Kernel, grid: Dim, block: Dim, stream: Any, shared: int):
        self._launch = kernel._k.launch
        self._module = weakref.ref(kernel.module)
        self._grid, self._block = grid, block
        if stream is not None and type(stream) is not _fdlink.Stream:
            stream = _launch_stream(stream, kernel.module.device)
        self._stream = stream
        self._shared = shared

    def __call__(self, *args: Any, stream: Any = None, shared_mem: Optional[int] = None,
                 cooperative: Optional[bool] = None, sync: bool = False) -> None:
        if stream is None:
            stream = self._stream
        elif type(stream) is not _fdlink.Stream:
            m = self._module()
            stream = _launch_stream(stream, m.device if m is not None else device())
        self._launch(self._grid, self._block, self._shared if shared_mem is None else shared_mem,
                     stream, 0 if cooperative is None and not sync else _flags(cooperative, sync),
                     *args)


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

    def __init__(self, lib: Library, name: str, modes: Optional[str],
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


def _arg_list_types(arguments: str) -> List[Optional[str]]:
    out: List[Optional[str]] = []
    for p in arguments.split(","):
        p = p.strip()
        if not p:
            continue
        words = p.replace("*", " * ").split()
        typ = " ".join(words[:-1]).replace(" *", "*").replace("* ", "*")
        try:
            out.append(_type_code(typ.replace(" * ", "*")))
        except ValueError:
            out.append(None)
    return out


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
        if n is None:
            n = next((ln for ln in map(_length, args) if ln is not None), None)
            if n is None:
                raise TypeError("elementwise: no array argument to take n from; pass n=")
        packed = [_pack_scalar(a, c, f"argument {i + 1}") for i, (a, c) in
                  enumerate(zip(args, self._types + [None] * len(args)))]
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
        if n is None:
            n = next((ln for ln in map(_length, args) if ln is not None), None)
            if n is None:
                raise TypeError("reduction: no array argument to take n from; pass n=")
        packed = [_pack_scalar(a, c, f"argument {i + 1}") for i, (a, c) in
                  enumerate(zip(args, self._types + [None] * len(args)))]
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


# ---- cache, doctor, versions -------------------------------------------------------------------

class _Cache:
    """The link cache (docs/cache.md): ``fdlink.cache.stats()``, ``clear()``, ``export()``,
    ``import_()``; @directory None is the default (FDLINK_CACHE_DIR or ~/.cache/fdlink)."""

    @staticmethod
    def directory() -> str:
        return _fdlink.cache_dir()

    @staticmethod
    def stats(directory: Optional[PathLike] = None) -> Dict[str, int]:
        return _fdlink.cache_stats(None if directory is None else os.fspath(directory))

    @staticmethod
    def clear(directory: Optional[PathLike] = None) -> int:
        """Remove every entry; the number removed."""
        return _fdlink.cache_clear(None if directory is None else os.fspath(directory))

    @staticmethod
    def export(path: PathLike, keys: Optional[Sequence[str]] = None,
               directory: Optional[PathLike] = None) -> int:
        """Write a bundle of the entries (all, or @keys) to @path; the number exported."""
        return _fdlink.cache_export(None if directory is None else os.fspath(directory),
                                    os.fspath(path), None if keys is None else list(keys))

    @staticmethod
    def import_(path: PathLike, directory: Optional[PathLike] = None) -> Dict[str, int]:
        """Add a bundle's entries: {'imported', 'rejected', 'unsigned_forged'}."""
        return _fdlink.cache_import(None if directory is None else os.fspath(directory),
                                    os.fspath(path))


cache = _Cache()


def doctor() -> Dict[str, Any]:
    """What ``fdlink doctor --json`` reports (driver, devices, libraries, cache), as data."""
    import json
    import subprocess

    from ._cli import executable

    _libs.ensure()
    r = subprocess.run([executable(), "doctor", "--json"], capture_output=True, text=True,
                       check=False)
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise RuntimeError(f"fdlink doctor --json gave no JSON (exit {r.returncode}): "
                           f"{r.stderr.strip()}") from e


def include_dir() -> Optional[str]:
    """The folder of fdlink's C headers installed with the package (``fdlink/device.h`` for
    FDL_CALL in caller kernels, the library's API), or None when they are not installed."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
    return d if os.path.isdir(d) else None


def cmake_dir() -> Optional[str]:
    """The CMake package's folder (``-Dfdlink_DIR=...``), or None when it is not installed."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "cmake", "fdlink")
    return d if os.path.isdir(d) else None


def versions() -> Dict[str, Any]:
    """fdlink's version, and the driver's, nvJitLink's and NVRTC's where they can be loaded; with
    ``pair`` saying when NVRTC is newer than nvJitLink (its LTO-IR and PTX then cannot be linked)."""
    out: Dict[str, Any] = {"fdlink": _fdlink.version}
    try:
        out["driver"] = _fdlink.driver_version()
    except _errors.Error as e:
        out["driver"] = None
        out["driver_error"] = str(e)
    try:
        out["nvjitlink"] = _fdlink.linker_version()
    except _errors.Error as e:
        out["nvjitlink"] = None
        out["nvjitlink_error"] = str(e)
    try:
        out["nvrtc"] = _fdlink.nvrtc_version()
    except _errors.Error as e:
        out["nvrtc"] = None
        out["nvrtc_error"] = str(e)
    if out["nvrtc"] and out["nvjitlink"] and tuple(out["nvrtc"]) > tuple(out["nvjitlink"]):
        rtc, jl = ("%d.%d" % tuple(out["nvrtc"])), ("%d.%d" % tuple(out["nvjitlink"]))
        out["pair"] = (f"NVRTC {rtc} and nvJitLink {jl} disagree: the LTO-IR and PTX that NVRTC "
                       f"{rtc} writes cannot be linked by nvJitLink {jl}; use nvJitLink {rtc} or "
                       f"later (FDLINK_NVJITLINK, or the cu13 extra), or NVRTC {jl} (FDLINK_NVRTC)")
    return out
