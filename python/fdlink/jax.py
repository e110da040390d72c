"""fdlink kernels, maps, elementwise kernels and reductions inside ``jax.jit``, through XLA's FFI.

    import fdlink, fdlink.jax
    mul = fdlink.jax.map_call(lib.map("mul_f32_f32"), "as")
    f = jax.jit(lambda x: mul(jnp.sin(x), 3.0) + 1.0)

Each call is an XLA custom call of fdlink's one FFI handler (python/fdlink/_xla_ffi.c, C on
XLA's FFI C API): XLA allocates the outputs from the declared shapes and dtypes, and the handler
launches on XLA's stream over the buffers XLA gives it: no copy, no host synchronisation. The
handler is built at first use with the system C compiler (``CC``, else Python's, else ``cc``)
against the headers of the jaxlib in use (``jax.ffi.include_dir()``) and fdlink's, and linked
with the libfdlink the package loaded (jaxlib is not linked); the library is kept in fdlink's
cache folder, one per jaxlib and fdlink build. ``FDLINK_XLA_FFI_LIB`` names a prebuilt one.

Scalar arguments are static (Python numbers, put in the call's attributes); arrays are traced.
Statuses of FDL_CALL / FDL_MAP_CALL are checked by :func:`check` after the computation, or by the
call itself with ``check=True`` (the handler then waits for the stream, and a failed call raises
with the function and the lowest failing index). ``jax.vmap`` works through ``vmap_method``
("sequential" by default: one launch per batch element).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import struct
import subprocess
import sysconfig
import tempfile
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import jax
import numpy as np

from . import _cache, _fdlink, _gen, _kernel, _ops, _types
from ._ops import dims as _dims, fail as _fail, out_spec as _out_spec, parse_params as _params

__all__ = ["map_call", "kernel_call", "elementwise_call", "reduction_call", "check",
           "handler_library", "TARGET"]

#: The FFI target name fdlink's handler is registered under (platform CUDA).
TARGET = "fdlink_call"

_NP = {"f2": np.float16, "f4": np.float32, "f8": np.float64, "i1": np.int8, "i2": np.int16,
       "i4": np.int32, "i8": np.int64, "u1": np.uint8, "u2": np.uint16, "u4": np.uint32,
       "u8": np.uint64, "b1": np.bool_}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_keep: List[Any] = []      # the fdlink objects whose C addresses the compiled calls hold
_checks: List[Callable[[], None]] = []


def _np_dtype(code: Optional[str]) -> Any:
    c = (code or "").lstrip("*")
    if c not in _NP:
        raise _fail(f"type {code!r} has no NumPy dtype")
    return np.dtype(_NP[c])


def _libfdlink() -> str:
    """The path of the libfdlink this process loaded (through the extension)."""
    so = os.path.realpath(_fdlink.__file__)
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path).startswith("libfdlink.so"):
                    return path
    except OSError:
        pass
    raise _fail(f"fdlink.jax: libfdlink's path is unknown (not in /proc/self/maps; extension "
                f"{so})")


def _include_dirs() -> List[str]:
    env = os.environ.get("FDLINK_INCLUDE_DIRS")
    if env:
        return [d for d in env.split(os.pathsep) if d]
    d = _cache.include_dir()
    if d is None:
        raise _fail("fdlink.jax: fdlink's C headers are not installed with the package (set "
                    "FDLINK_INCLUDE_DIRS to their folders)")
    return [d]


def _compiler() -> List[str]:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return cc.split()


def handler_library() -> ctypes.CDLL:
    """The handler's shared library: built (once, cached) and loaded, and its handler registered
    with XLA as :data:`TARGET` for CUDA."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        path = os.environ.get("FDLINK_XLA_FFI_LIB") or _build()
        lib = ctypes.CDLL(path)
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.fdl_xla_handler),
                                    platform="CUDA")
        _lib = lib
        return lib


def _build() -> str:
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_xla_ffi.c")
    xla_inc = jax.ffi.include_dir()
    incs = _include_dirs()
    libfdlink = _libfdlink()
    h = hashlib.sha256()
    for part in (open(src, "rb").read(), open(os.path.join(xla_inc, "xla", "ffi", "api",
                                                           "c_api.h"), "rb").read(),
                 libfdlink.encode(), "\0".join(incs).encode(), _fdlink.version.encode()):
        h.update(part)
        h.update(b"\0")
    folder = os.path.join(_fdlink.cache_dir(), "xla")
    os.makedirs(folder, exist_ok=True)
    out = os.path.join(folder, f"libfdlink_xla_{h.hexdigest()[:20]}.so")
    if os.path.exists(out):
        return out
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=folder)
    os.close(fd)
    cmd = _compiler() + ["-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden",
                         "-I", xla_inc] + [a for d in incs for a in ("-I", d)] + \
        [src, "-o", tmp, libfdlink, "-Wl,-rpath," + os.path.dirname(libfdlink), "-lpthread"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        os.unlink(tmp)
        raise _fail(f"fdlink.jax: building the XLA FFI handler failed ({' '.join(cmd)}): "
                    f"{(r.stderr or r.stdout).strip()}")
    os.replace(tmp, out)
    return out


def _call(kind: int, target: Any, device: Any, plan: Sequence[int], scalars: bytes,
          geometry: Sequence[int], check: bool, results: Any, operands: Sequence[Any],
          vmap_method: str, aliases: Optional[Dict[int, int]] = None) -> Any:
    handler_library()
    call = jax.ffi.ffi_call(TARGET, results, vmap_method=vmap_method,
                            input_output_aliases=aliases or None)
    return call(*operands, fdl_kind=np.int32(kind), fdl_target=np.uint64(target._c_handle),
                fdl_device=np.uint64(device._c_handle), fdl_plan=np.array(plan, np.int64),
                fdl_scalars=np.frombuffer(scalars or b"\0", np.uint8),
                fdl_geometry=np.array(geometry, np.int64), fdl_check=np.int32(bool(check)))


def _scalar(v: Any, code: Optional[str], what: str) -> bytes:
    if isinstance(v, jax.Array):  # tracers too
        raise _fail(f"{what}: a scalar argument must be a Python number (static), not a traced "
                    "array: make the parameter an array, or close over the value")
    if code is None or code.startswith("*"):
        raise _fail(f"{what}: the type is unknown")
    try:
        return struct.pack("<" + _types._STRUCT[code], v)
    except (struct.error, TypeError, OverflowError) as e:
        raise _fail(f"{what}: {v!r} cannot be packed as {code}: {e}") from None


def _size(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def map_call(m: "_gen.Map", modes: str, *, check: bool = False,
             vmap_method: str = "sequential") -> Callable[..., Any]:
    """A function over a map (``lib.map(name)``) for use in (or out of) ``jax.jit``: @modes one
    character per parameter, 'a' an array (every array of as many elements), 's' a static scalar.
    ``f(a, b) -> Array``: the declared return dtype, the first array's shape."""
    what = f"map_call '{m.name}'"
    if len(modes) != len(m._params) or set(modes) - {"a", "s"} or "a" not in modes:
        raise _fail(f"{what}: modes {modes!r}: one 'a' or 's' per parameter "
                    f"({len(m._params)}), at least one 'a'")
    fm = m._map(modes)
    _keep.append(m)
    _checks.append(m.check)
    rdt = _np_dtype(m._ret)

    def f(*args: Any) -> Any:
        if len(args) != len(modes):
            raise TypeError(f"{what} takes {len(modes)} arguments, but {len(args)} were given")
        plan = [1, 0, 0]
        scal = b""
        ops: List[Any] = []
        shape = None
        for i, (a, mo, c) in enumerate(zip(args, modes, m._params)):
            if mo == "a":
                if a.dtype != _np_dtype(c):
                    raise _fail(f"{what}: argument {i + 1} is {a.dtype}, but parameter "
                                f"{i + 1} is {_np_dtype(c)}")
                if shape is None:
                    shape = tuple(a.shape)
                elif _size(a.shape) != _size(shape):
                    raise _fail(f"{what}: argument {i + 1} has {_size(a.shape)} elements, the "
                                f"first array {_size(shape)}")
                plan += [0, len(ops), 0]
                ops.append(a)
            else:
                b = _scalar(a, c, f"{what}: argument {i + 1}")
                plan += [2, len(scal), len(b)]
                scal += b
        assert shape is not None
        return _call(1, fm, m.device, plan, scal, [_size(shape)], check,
                     jax.ShapeDtypeStruct(shape, rdt), ops, vmap_method)

    return f


def _kernel_like(kind: int, target: Any, device: Any, ps: List[Tuple[str, Optional[str]]],
                 what: str, outputs: Mapping[str, Any], inouts: Sequence[str], check: bool,
                 vmap_method: str, geometry: Callable[[Dict[str, Any]], List[int]]) -> Callable[..., Any]:
    codes = dict(ps)
    for o in list(outputs) + list(inouts):
        if o not in codes or not (codes[o] or "").startswith("*"):
            raise _fail(f"{what}: {o!r} is not an array parameter of {[p for p, _ in ps]}")
    if not outputs and not inouts:
        raise _fail(f"{what}: nothing is returned: name the arrays it writes in outputs= "
                    "(allocated) or inouts= (given, and returned written)")
    shapes = {o: _out_spec(s, codes, f"{what}: output {o!r}") for o, s in outputs.items()}
    ins = [(n, c) for n, c in ps if n not in outputs]

    def f(*args: Any) -> Any:
        if len(args) != len(ins):
            raise TypeError(f"{what} takes {len(ins)} arguments ({', '.join(n for n, _ in ins)}),"
                            f" but {len(args)} were given")
        named = dict(zip((n for n, _ in ins), args))
        results = []
        res_index: Dict[str, int] = {}
        for o in outputs:
            res_index[o] = len(results)
            results.append(jax.ShapeDtypeStruct(tuple(shapes[o](**named)), _np_dtype(codes[o])))
        ops: List[Any] = []
        op_index: Dict[str, int] = {}
        aliases: Dict[int, int] = {}
        scal = b""
        plan: List[int] = []
        for i, (n, c) in enumerate(ps):
            if n in outputs:
                plan += [1, res_index[n], 0]
                continue
            a = named[n]
            if (c or "").startswith("*"):
                if a.dtype != _np_dtype(c):
                    raise _fail(f"{what}: {n} is {a.dtype}, but the parameter is {_np_dtype(c)}")
                op_index[n] = len(ops)
                ops.append(a)
                if n in inouts:
                    res_index[n] = len(results)
                    results.append(jax.ShapeDtypeStruct(a.shape, a.dtype))
                    aliases[op_index[n]] = res_index[n]
                    plan += [1, res_index[n], 0]
                else:
                    plan += [0, op_index[n], 0]
            else:
                b = _scalar(a, c, f"{what}: {n}")
                plan += [2, len(scal), len(b)]
                scal += b
        out = _call(kind, target, device, plan, scal, geometry(named), check, results, ops,
                    vmap_method, aliases)
        return out[0] if len(results) == 1 else tuple(out)

    return f


def _dim3(d: Any) -> List[int]:
    t = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(t) <= 3:
        raise _fail(f"a geometry of {len(t)} dimensions")
    return [int(x) for x in t] + [1] * (3 - len(t))


def kernel_call(kernel: "_kernel.Kernel", params: Union[str, Sequence[Tuple[str, str]]], *,
                grid: Any, block: Any, outputs: Optional[Mapping[str, Any]] = None,
                inouts: Sequence[str] = (), shared_mem: int = 0, check: bool = False,
                vmap_method: str = "sequential") -> Callable[..., Any]:
    """A function launching @kernel inside ``jax.jit``: @params its parameters with names
    ('float *y, const float *x, float a, int n'); @outputs {parameter: shape} the arrays XLA
    allocates and the call returns (uninitialised memory the kernel writes; shape an input's
    name, an int, a tuple or a callable over the arguments by name); @inouts arrays given and
    returned written (XLA's input_output_aliases: the kernel reads and writes them). Scalars
    are static. @grid, @block: dims or callables over the arguments by name (arrays' shapes)."""
    ps = _params(params)
    k = kernel.module.kernel(kernel.name, [_ops.type_name(c) for _, c in ps])
    _keep.append(k)
    _checks.append(kernel.module.check_status)
    what = f"kernel_call '{kernel.name}'"
    for n, c in ps:
        if c is None:
            raise _fail(f"{what}: parameter {n!r} has no checked type (void*): not allowed")

    def geometry(named: Dict[str, Any]) -> List[int]:
        return _dim3(_dims(grid, named)) + _dim3(_dims(block, named)) + [int(shared_mem)]

    return _kernel_like(0, k._k, kernel.module.device, ps, what, dict(outputs or {}), inouts,
                        check, vmap_method, geometry)


def elementwise_call(ew: "_gen.Elementwise", *, outputs: Optional[Mapping[str, Any]] = None,
                     inouts: Sequence[str] = (), check: bool = False,
                     vmap_method: str = "sequential") -> Callable[..., Any]:
    """A function over an elementwise kernel inside ``jax.jit`` (as kernel_call: @outputs and
    @inouts name its arrays that are returned); n is the first array's element count."""
    ps = _params(ew.arguments)
    _keep.append(ew)
    _checks.append(ew.check)

    def geometry(named: Dict[str, Any]) -> List[int]:
        first = next(named[n] for n, c in ps if (c or "").startswith("*") and n in named)
        return [_size(first.shape)]

    outputs = dict(outputs or {})
    if any(n in outputs for n, c in ps if (c or "").startswith("*")) and \
            not any(n not in outputs for n, c in ps if (c or "").startswith("*")):
        raise _fail("elementwise_call: every array is an output: n is unknown")
    return _kernel_like(1, ew._m, ew.device, ps, "elementwise_call", outputs, inouts, check,
                        vmap_method, geometry)


def reduction_call(r: "_gen.Reduction", *, check: bool = False,
                   vmap_method: str = "sequential") -> Callable[..., Any]:
    """A function over a reduction inside ``jax.jit``: ``f(*args) -> 0-d Array`` (the result
    type), n the first array's element count."""
    ps = _params(r.arguments)
    _keep.append(r)
    _checks.append(r.check)
    rdt = _np_dtype(r._code)
    what = "reduction_call"

    def f(*args: Any) -> Any:
        if len(args) != len(ps):
            raise TypeError(f"{what} takes {len(ps)} arguments, but {len(args)} were given")
        plan = [1, 0, 0]
        ops: List[Any] = []
        scal = b""
        n = None
        for (name, c), a in zip(ps, args):
            if (c or "").startswith("*"):
                if a.dtype != _np_dtype(c):
                    raise _fail(f"{what}: {name} is {a.dtype}, but the argument is "
                                f"{_np_dtype(c)}")
                n = _size(a.shape) if n is None else n
                plan += [0, len(ops), 0]
                ops.append(a)
            else:
                b = _scalar(a, c, f"{what}: {name}")
                plan += [2, len(scal), len(b)]
                scal += b
        if n is None:
            raise _fail(f"{what}: no array argument")
        return _call(2, r._r, r.device, plan, scal, [n], check, jax.ShapeDtypeStruct((), rdt),
                     ops, vmap_method)

    return f


def check() -> None:
    """Wait, then raise DeviceStatusError for a failed FDL_CALL / FDL_MAP_CALL in any call made
    here since the last check (the lowest failing index of a map)."""
    for c in list(_checks):
        c()
