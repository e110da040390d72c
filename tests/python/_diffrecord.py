"""pytest plugin: records the calls the suite makes into fdlink, for tests/python/differential.py.

Loaded with ``-p _diffrecord`` (this folder on PYTHONPATH) and active only while the environment
variable FDLINK_DIFF_RECORD names a file; without it, it does nothing (and without ``-p`` it is not
loaded at all: the suite is unchanged). When fdlink is imported, the plugin wraps:

- every function and class of the ``fdlink`` package's modules (the public names, the public
  submodules fdlink.numba, fdlink.jax, fdlink.torch, and the internal modules' functions and
  classes that tests reach, such as ``_parse_types`` or ``from_record``): functions, methods,
  constructors (``__init__``), properties, static and class methods, and the dunders a caller
  uses (``__call__``, ``__getitem__``, ``__enter__``...);
- the extension module ``fdlink._fdlink``: its functions, and its types' methods, constructors
  (``tp_new``, called through ctypes), getters and members, and ``__call__``.

A call is written only when it comes from outside the package (its caller's code is not a file of
the fdlink package) and not from within another recorded call: the calls the suite makes, not the
package's calls to its own helpers or to the extension (a change of the package's inside is free;
what a caller sees is not). Each call is one JSON line: the context (the test's node id and its
phase, setup/call/teardown, or the module being collected), the thread (main or another), the
call's name, its arguments and its outcome: the result, or the exception (its class, str() and
its record's fields). Per test the outcome (passed, failed, skipped) is written too.

Names are public names, never an internal module's path: a class exported by ``fdlink`` (or a
public submodule) is named there (``fdlink.Kernel``, ``fdlink.Device``, ``fdlink.PreparedLaunch``
for _fdlink.Launch); the extension's other types and functions by their attribute name
(``fdlink._fdlink.Link``, ``fdlink._fdlink.detect``); anything else defined in an internal module
(fdlink._core, or the modules it is split into) as ``fdlink.<qualname>`` (``fdlink._Configured``,
``fdlink._parse_types``), so that moving code between internal modules changes no record.

Values are described, not pickled: numbers, strings, containers as they are; bytes by length and
a hash; arrays by dtype and shape (a result's contents hashed too); fdlink objects by their public
type name and a few plain attributes (a Buffer's nbytes, typestr and shape; a Device's ordinal and
arch; a Kernel's name); other objects by their type's name. An exception's fields are written
where they are not None (a field a build adds as None changes no record). What differs between
two runs of one build, or between two copies of the suite, is normalised: addresses (``0x...``
in strings, and device and host pointers: the values of Buffer.address, Stream.handle, _c_handle,
the pointers in __cuda_array_interface__ and __cuda_stream__, any int equal to one of them, and
decimal numbers of 13 digits or more in strings), the package's installed path (``<fdlink>``),
the suite's tests/ folder (``<tests>``, from FDLINK_DIFF_TESTS), the record's own path, sys.prefix,
loopback ports, random temporary names under TMPDIR, times (``T ms``; dict keys ending ``_ms``,
``time``, ``seconds``), PIDs. Pointers are numbered per test phase in the order they are met.

Not recorded: plain attribute reads of Python objects (``fdlink.__version__``, a Source's fields
are properties and are recorded), calls the package makes from its own code (callbacks, threads
and finalisers it starts), and anything in a child process (multiprocessing workers, subprocess
children: the plugin records only in the pytest process).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import json
import math
import os
import re
import sys
import threading
import types

_PATH = os.environ.get("FDLINK_DIFF_RECORD")

# the state of one recording process
_pid = os.getpid()
_tls = threading.local()
_lock = threading.Lock()
_out = None
_ctx = "<session>"
_pkg_dir: str = ""
_names: dict = {}  # id(class) -> public name
_wrapped: set = set()  # ids of classes already wrapped
_pointers: dict = {}  # pointer value -> its token, per context
_calls = 0
_ready = False  # the package instrumented (later submodules are, as they are imported)

# dunders a caller uses (others, such as __eq__, __hash__, __reduce__, __del__, are left alone)
_DUNDERS = {"__init__", "__call__", "__getitem__", "__setitem__", "__len__", "__iter__",
            "__contains__", "__enter__", "__exit__", "__repr__", "__str__", "__bool__",
            "__dlpack__", "__dlpack_device__", "__cuda_stream__", "__cuda_array_interface__",
            "__array__", "__index__", "__int__", "__float__", "__fspath__"}
# getters and methods whose value is a pointer (of the mock's malloc, or a driver handle)
_RE_POINTER_NAME = re.compile(r"(^|_)(handle|address|ptr|pointer)$")
# plain attributes that describe an object of these public types (read without side effects)
_ATTRS = {"fdlink.Device": ("ordinal", "arch"), "fdlink.Buffer": ("nbytes", "typestr", "shape"),
          "fdlink.Stream": ("owned",), "fdlink.Kernel": ("name",),
          "fdlink._fdlink.Kernel": ("name",)}
_EXC_FIELDS = ("code", "status", "backend_code", "source", "line", "column", "symbol", "message",
               "log", "diagnostics", "rule", "declaration", "library", "function", "device_status",
               "index", "block", "thread", "count", "argument")


# ---------------------------------------------------------------- normalising

_subs: list = []


def _init_subs() -> None:
    """The run's own paths, replaced by tokens (longest first)."""
    pairs = []
    if _pkg_dir:
        pairs.append((_pkg_dir, "<fdlink>"))
        pairs.append((os.path.realpath(_pkg_dir), "<fdlink>"))
    for p, tok in ((sys.prefix, "<prefix>"), (sys.exec_prefix, "<prefix>")):
        if p and p != "/":
            pairs.append((p, tok))
    if _PATH:
        pairs.append((os.path.abspath(_PATH), "<record>"))
    tests = os.environ.get("FDLINK_DIFF_TESTS")  # the suite's folder: its tests/ is <tests>
    if tests:
        pairs.append((os.path.dirname(os.path.abspath(tests)), "<tests>"))
    pairs.sort(key=lambda x: -len(x[0]))
    _subs[:] = pairs


_TMP = os.environ.get("TMPDIR") or "/tmp"
_RE_TMPNAME = re.compile(re.escape(_TMP.rstrip("/")) + r"/([A-Za-z0-9_.-]*?)[a-z0-9_]{8}(?=[/\s'\":,)]|$)")
_RE_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")
_RE_MS = re.compile(r"\b[0-9]+(\.[0-9]+)? ?(ms|s|us|ns)\b")
_RE_PID = re.compile(r"\b(pid|process) [0-9]+\b")
_RE_PORT = re.compile(r"\b(127\.0\.0\.1|localhost|\[::1\]):[0-9]+")
_RE_BIGNUM = re.compile(r"\b[0-9]{13,}\b")  # a pointer printed in decimal


def _norm_str(s: str) -> str:
    for p, tok in _subs:
        if p in s:
            s = s.replace(p, tok)
    s = _RE_TMPNAME.sub(lambda m: _TMP.rstrip("/") + "/" + m.group(1) + "XXXXXXXX", s)
    s = _RE_ADDR.sub("0xADDR", s)
    s = _RE_MS.sub(r"T \2", s)
    s = _RE_PID.sub(r"\1 PID", s)
    s = _RE_PORT.sub(r"\1:PORT", s)
    s = _RE_BIGNUM.sub("<N>", s)
    return s


def _hash(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:16]


def _ptr(v: int) -> str:
    """The token of a pointer value (numbered in the order the context meets them)."""
    tok = _pointers.get(v)
    if tok is None:
        tok = _pointers[v] = "<ptr%d>" % len(_pointers)
    return tok


def _type_name(t: type) -> str:
    n = _names.get(id(t))
    if n:
        return n
    mod = getattr(t, "__module__", "") or ""
    if mod == "builtins":
        return t.__qualname__
    if mod.split(".")[0] == "fdlink":
        return _public_prefix(mod) + "." + t.__qualname__
    return mod + "." + getattr(t, "__qualname__", t.__name__)


def _public_prefix(mod: str) -> str:
    """fdlink for the package and its internal modules; fdlink.numba for a public submodule."""
    parts = mod.split(".")
    if len(parts) >= 2 and not parts[1].startswith("_"):
        return "fdlink." + parts[1]
    if mod == "fdlink._fdlink":
        return "fdlink._fdlink"
    return "fdlink"


def _desc(v, result: bool = False, depth: int = 0):
    """A JSON-able description of @v, the same in two runs of one build."""
    if depth > 6:
        return "..."
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int) and type(v) is int:
        if v in _pointers:
            return _pointers[v]
        return v
    if isinstance(v, float) and type(v) is float:
        return repr(v) if (math.isnan(v) or math.isinf(v)) else v
    if isinstance(v, str) and type(v) is str:
        s = _norm_str(v)
        if len(s) > 400:
            return {"str": s[:120], "len": len(s), "sha": _hash(s.encode("utf-8", "replace"))}
        return s
    if isinstance(v, (bytes, bytearray)):
        return {"type": type(v).__name__, "len": len(v), "sha": _hash(bytes(v))}
    if isinstance(v, memoryview):
        return {"type": "memoryview", "nbytes": v.nbytes, "format": v.format}
    if isinstance(v, BaseException):
        return _exc(v)
    if isinstance(v, type):
        return {"class": _type_name(v)}
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType, functools.partial)):
        return {"function": _norm_str(getattr(v, "__qualname__", getattr(v, "__name__", "?")))}
    if isinstance(v, types.MethodType):
        return {"method": _norm_str(getattr(v, "__qualname__", "?"))}
    if isinstance(v, types.ModuleType):
        return {"module": v.__name__}
    if isinstance(v, os.PathLike) and type(v).__module__.startswith("pathlib"):
        return {"path": _norm_str(os.fspath(v))}
    t = type(v)
    if isinstance(v, tuple) and hasattr(v, "_fields"):  # a NamedTuple (fdlink.Param)
        return {"type": _type_name(t), "items": [_desc(x, result, depth + 1) for x in v]}
    if isinstance(v, (list, tuple)):
        items = [_desc(x, result, depth + 1) for x in list(v)[:64]]
        if len(v) > 64:
            items.append("... %d items" % len(v))
        return items if t in (list, tuple) else {"type": _type_name(t), "items": items}
    if isinstance(v, dict):
        out = {}
        for k in sorted(v, key=lambda x: str(x))[:200]:
            ks = str(k)
            x = v[k]
            if ks.endswith("_ms") or ks in ("time", "seconds", "elapsed", "wall", "pid"):
                out[ks] = "T" if isinstance(x, (int, float)) and not isinstance(x, bool) else _desc(x, result, depth + 1)
            elif ks == "data" and isinstance(x, tuple) and x and isinstance(x[0], int) and x[0]:
                out[ks] = [_ptr(x[0])] + [_desc(y, result, depth + 1) for y in x[1:]]
            else:
                out[ks] = _desc(x, result, depth + 1)
        return out if t is dict else {"type": _type_name(t), "items": out}
    if isinstance(v, (set, frozenset)):
        return {"type": t.__name__, "items": sorted(json.dumps(_desc(x, result, depth + 1),
                                                               sort_keys=True) for x in v)}
    if t.__module__ == "numpy" or t.__module__.startswith("numpy."):
        return _desc_numpy(v, result)
    name = _type_name(t)
    d = {"type": name}
    for a in _ATTRS.get(name, ()):
        try:
            d[a] = _desc(getattr(v, a), result, depth + 1)
        except Exception as e:  # noqa: BLE001 - a description never fails a test
            d[a] = {"unreadable": type(e).__name__}
    return d


def _desc_numpy(v, result: bool):
    import numpy as np

    if isinstance(v, np.ndarray):
        d = {"type": "numpy.ndarray", "dtype": str(v.dtype), "shape": list(v.shape)}
        if result and v.dtype != object:
            d["sha"] = _hash(np.ascontiguousarray(v).tobytes())
        return d
    if isinstance(v, np.generic):
        return {"type": "numpy." + type(v).__name__, "value": _desc(v.item())}
    if isinstance(v, np.dtype):
        return {"type": "numpy.dtype", "value": str(v)}
    return {"type": "numpy." + type(v).__name__}


def _exc(e: BaseException):
    d = {"exception": _type_name(type(e)), "str": _desc(str(e))}
    for f in _EXC_FIELDS:
        if f in ("log",):
            v = getattr(e, f, None)
            if isinstance(v, str):
                s = _norm_str(v)
                d[f] = {"len": len(s), "sha": _hash(s.encode("utf-8", "replace"))} if len(s) > 400 else s
            elif v is not None:
                d[f] = _desc(v)
            continue
        try:
            v = getattr(e, f, None)
        except Exception:  # noqa: BLE001
            continue
        if v is not None:  # a field a build adds as None is no change
            d[f] = _desc(v)
    return d


# ---------------------------------------------------------------- recording


def _write(rec: dict) -> None:
    global _out
    line = json.dumps(rec, sort_keys=True, default=str)
    with _lock:
        if _out is None:
            _out = open(_PATH, "a", encoding="utf-8")
        _out.write(line + "\n")
        _out.flush()


def _internal(frame) -> bool:
    """Whether the code of @frame is the fdlink package's own."""
    return frame is not None and frame.f_code.co_filename.startswith(_pkg_dir)


def _record(name: str, args, kwargs, pointer_result: bool, call):
    """Runs call() as the recorded call @name: its outcome written, then returned or raised."""
    global _calls
    try:
        a = [_desc(x) for x in args]
        k = {str(key): _desc(x) for key, x in kwargs.items()}
    except Exception as e:  # noqa: BLE001
        a, k = {"undescribable": repr(type(e))}, {}
    try:
        r = call()
    except BaseException as e:
        rec = {"ctx": _ctx, "thread": _thread(), "call": name, "args": a, "kw": k,
               "raised": _safe(lambda: _exc(e))}
        _calls += 1
        _write(rec)
        raise
    if pointer_result:
        out = _safe(lambda: _ptr_result(r))
    else:
        out = _safe(lambda: _desc(r, result=True))
    _calls += 1
    _write({"ctx": _ctx, "thread": _thread(), "call": name, "args": a, "kw": k, "returned": out})
    return r


def _ptr_result(r):
    if isinstance(r, int) and not isinstance(r, bool):
        return _ptr(r) if r else 0
    if isinstance(r, tuple) and len(r) == 2 and all(isinstance(x, int) for x in r):
        return [r[0], _ptr(r[1]) if r[1] else 0]  # __cuda_stream__: (version, handle)
    return _desc(r, result=True)


def _safe(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - a description never fails a test
        return {"undescribable": type(e).__name__}


def _thread() -> str:
    return "main" if threading.current_thread() is threading.main_thread() else "other"


def _active() -> bool:
    return _PATH is not None and os.getpid() == _pid


def _wrap_callable(name: str, orig, pointer_result: bool = False):
    """A function that calls @orig, and records the call when the suite made it."""

    def wrapper(*args, **kwargs):
        if getattr(_tls, "depth", 0) or not _active() or _internal(sys._getframe(1)):
            return orig(*args, **kwargs)
        _tls.depth = 1
        try:
            return _record(name, args, kwargs, pointer_result, lambda: orig(*args, **kwargs))
        finally:
            _tls.depth = 0

    try:
        functools.update_wrapper(wrapper, orig)
    except (AttributeError, TypeError):
        pass
    wrapper.__fdlink_diff__ = True
    return wrapper


def _is_wrapped(f) -> bool:
    return getattr(f, "__fdlink_diff__", False)


# ---------------------------------------------------------------- types whose attributes are fixed


def _set_type_attr(cls: type, attr: str, value) -> None:
    """setattr on a class, an immutable extension type too (its flag lifted for the moment)."""
    try:
        setattr(cls, attr, value)
        return
    except TypeError:
        if not cls.__flags__ & (1 << 8):  # Py_TPFLAGS_IMMUTABLETYPE
            raise
    import ctypes

    off = _flags_offset(cls)
    cell = ctypes.c_ulong.from_address(id(cls) + off)
    cell.value = cell.value & ~(1 << 8)
    try:
        setattr(cls, attr, value)
    finally:
        cell.value = cell.value | (1 << 8)


def _flags_offset(cls: type) -> int:
    import ctypes

    want = cls.__flags__
    for off in range(8, 512, 8):
        if ctypes.c_ulong.from_address(id(cls) + off).value == want:
            return off
    raise TypeError("tp_flags not found")


def _wrap_tp_new(cls: type, name: str) -> None:
    """The constructor of an extension type (its C tp_new), recorded: __new__ set to a wrapper
    that calls the C function through ctypes."""
    import ctypes

    get_slot = ctypes.pythonapi.PyType_GetSlot
    get_slot.restype = ctypes.c_void_p
    get_slot.argtypes = [ctypes.py_object, ctypes.c_int]
    addr = get_slot(cls, 65)  # Py_tp_new
    if not addr:
        return
    cnew = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object, ctypes.py_object,
                             ctypes.c_void_p)(addr)

    def new(c, *args, **kwargs):
        kw = dict(kwargs) if kwargs else None
        return cnew(c, args, id(kw) if kw is not None else None)

    # recorded as a call of the type (the class itself is not one of the call's arguments)
    def recorded(c, *args, **kwargs):
        if c is not cls or getattr(_tls, "depth", 0) or not _active() \
                or _internal(sys._getframe(1)):  # a subclass's: no record of its own
            return new(c, *args, **kwargs)
        _tls.depth = 1
        try:
            return _record(name, args, kwargs, False, lambda: new(c, *args, **kwargs))
        finally:
            _tls.depth = 0

    recorded.__fdlink_diff__ = True
    _set_type_attr(cls, "__new__", staticmethod(recorded))


def _wrap_class(cls: type, name: str, extension: bool) -> None:
    if id(cls) in _wrapped:
        return
    _wrapped.add(id(cls))
    if issubclass(cls, BaseException):
        return  # described when raised; their __init__ is the package's (from_record)
    for attr, v in list(vars(cls).items()):
        if attr.startswith("__") and attr not in _DUNDERS:
            continue
        full = name + "." + attr
        try:
            if isinstance(v, staticmethod):
                if not _is_wrapped(v.__func__):
                    _set_type_attr(cls, attr, staticmethod(_wrap_callable(full, v.__func__)))
            elif isinstance(v, classmethod):
                if not _is_wrapped(v.__func__):
                    f = v.__func__
                    w = _wrap_callable(full, lambda c, *a, _f=f, **k: _f(c, *a, **k))
                    _set_type_attr(cls, attr, classmethod(w))
            elif isinstance(v, property):
                ptr = bool(_RE_POINTER_NAME.search(attr))
                fget = _wrap_callable(full, v.fget, ptr) if v.fget and not _is_wrapped(v.fget) else v.fget
                fset = _wrap_callable(full + "=", v.fset) if v.fset and not _is_wrapped(v.fset) else v.fset
                _set_type_attr(cls, attr, property(fget, fset, v.fdel, v.__doc__))
            elif isinstance(v, functools.cached_property):
                cp = functools.cached_property(_wrap_callable(full, v.func))
                cp.__set_name__(cls, attr)
                _set_type_attr(cls, attr, cp)
            elif isinstance(v, (types.GetSetDescriptorType, types.MemberDescriptorType)):
                if attr in ("__dict__", "__weakref__"):
                    continue
                ptr = bool(_RE_POINTER_NAME.search(attr)) or attr == "__cuda_array_interface__"
                get = _wrap_callable(full, lambda o, _d=v: _d.__get__(o, type(o)), ptr)
                _set_type_attr(cls, attr, property(get, lambda o, x, _d=v: _d.__set__(o, x),
                                                   None, getattr(v, "__doc__", None)))
            elif attr == "__init__" and not extension and isinstance(v, types.FunctionType):
                _set_type_attr(cls, attr, _wrap_init(name, v))
            elif isinstance(v, (types.FunctionType, types.MethodDescriptorType,
                                types.WrapperDescriptorType, types.BuiltinFunctionType)):
                if attr == "__init__":
                    continue  # an extension type's: its tp_new is wrapped instead
                if not _is_wrapped(v):
                    ptr = attr == "__cuda_stream__" or bool(_RE_POINTER_NAME.search(attr))
                    _set_type_attr(cls, attr, _wrap_callable(full, v, ptr))
        except (TypeError, AttributeError):
            continue
    if extension and "__new__" in vars(cls) and not isinstance(vars(cls)["__new__"], staticmethod):
        try:
            _wrap_tp_new(cls, name)
        except Exception:  # noqa: BLE001 - no constructor record then
            pass


def _wrap_init(name: str, init):
    """A Python class's __init__, recorded as its constructor: the arguments less self, the
    outcome the new object."""

    def __init__(self, *args, **kwargs):
        if getattr(_tls, "depth", 0) or not _active() or _internal(sys._getframe(1)) \
                or _type_name(type(self)) != name:
            return init(self, *args, **kwargs)
        _tls.depth = 1
        try:
            def call():
                init(self, *args, **kwargs)
                return self
            _record(name, args, kwargs, False, call)
        finally:
            _tls.depth = 0

    functools.update_wrapper(__init__, init)
    __init__.__fdlink_diff__ = True
    return __init__


# ---------------------------------------------------------------- the package


def _public_modules():
    out = [sys.modules["fdlink"]]
    for n, m in sorted(sys.modules.items()):
        if m is not None and n.startswith("fdlink.") and n.count(".") == 1 \
                and not n.split(".")[1].startswith("_"):
            out.append(m)
    return out


def _instrument() -> None:
    """Wraps what the loaded fdlink modules hold (again after a submodule is imported)."""
    global _pkg_dir, _ready
    fd = sys.modules.get("fdlink")
    if fd is None or getattr(fd, "_fdlink", None) is None:
        return
    if not _pkg_dir:
        _pkg_dir = os.path.dirname(os.path.abspath(fd.__file__)) + os.sep
        _init_subs()
    ext = fd._fdlink
    # names: the public ones first, then the extension's, then the rest
    for m in _public_modules():
        prefix = m.__name__
        for attr in sorted(dir(m)):
            if attr.startswith("_"):
                continue
            v = getattr(m, attr, None)
            if isinstance(v, type) and id(v) not in _names:
                tm = getattr(v, "__module__", "") or ""
                if tm.split(".")[0] == "fdlink":
                    _names[id(v)] = prefix + "." + attr
    for attr in sorted(dir(ext)):
        v = getattr(ext, attr, None)
        if isinstance(v, type) and id(v) not in _names:
            _names[id(v)] = "fdlink._fdlink." + attr
    # the extension: its functions (as module attributes) and its types
    for attr in sorted(vars(ext)):
        v = vars(ext)[attr]
        if isinstance(v, types.BuiltinFunctionType) and not _is_wrapped(v):
            setattr(ext, attr, _wrap_callable("fdlink._fdlink." + attr, v))
        elif isinstance(v, type) and v.__module__ == "fdlink._fdlink":
            _wrap_class(v, _type_name(v), extension=True)
    # the Python modules: their classes, and their functions as module attributes
    for modname, m in sorted(sys.modules.items()):
        if m is None or not (modname == "fdlink" or modname.startswith("fdlink.")) \
                or modname == "fdlink._fdlink" or not hasattr(m, "__file__"):
            continue
        for attr, v in list(vars(m).items()):
            if attr.startswith("__"):
                continue
            if isinstance(v, type):
                tm = getattr(v, "__module__", "") or ""
                if tm == modname and tm != "fdlink._fdlink":
                    _wrap_class(v, _type_name(v), extension=False)
            elif isinstance(v, types.FunctionType) and not _is_wrapped(v):
                fm = getattr(v, "__module__", "") or ""
                if fm.split(".")[0] != "fdlink":
                    continue  # imported from elsewhere
                setattr(m, attr, _wrap_callable(_public_prefix(fm) + "." + v.__qualname__, v))
    _ready = True


class _Finder(importlib.abc.MetaPathFinder):
    """Instruments fdlink once its package (and any later submodule) has been executed."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "fdlink" and not fullname.startswith("fdlink."):
            return None
        for f in sys.meta_path:
            if f is self or not hasattr(f, "find_spec"):
                continue
            spec = f.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        orig_exec = loader.exec_module

        def exec_module(module, _orig=orig_exec, _name=fullname):
            _orig(module)
            if _name == "fdlink" or _ready:
                try:
                    _instrument()
                except Exception as e:  # noqa: BLE001
                    _write({"ctx": "<instrument>", "error": repr(e)})

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            pass
        return spec


# ---------------------------------------------------------------- pytest hooks

import pytest  # noqa: E402


def pytest_configure(config):
    if _PATH and "fdlink" in sys.modules and not _ready:
        _instrument()


def _set_ctx(c: str):
    global _ctx
    old = _ctx
    _ctx = c
    _pointers.clear()
    return old


if _PATH:
    # the conftest is imported before pytest_configure: the finder goes in at once
    sys.meta_path.insert(0, _Finder())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(collector):
        old = _set_ctx("collect " + collector.nodeid)
        yield
        _set_ctx(old)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(item):
        old = _set_ctx(item.nodeid + " setup")
        yield
        _set_ctx(old)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(item):
        old = _set_ctx(item.nodeid + " call")
        yield
        _set_ctx(old)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(item, nextitem):
        old = _set_ctx(item.nodeid + " teardown")
        yield
        _set_ctx(old)

    def pytest_runtest_logreport(report):
        if report.when == "call" or report.outcome != "passed":
            outcome = report.outcome
            if getattr(report, "wasxfail", None) is not None:
                outcome = "xfailed" if report.skipped else "xpassed"
            _write({"test": report.nodeid, "when": report.when, "outcome": outcome})

    def pytest_sessionfinish(session, exitstatus):
        _write({"session": "end", "exitstatus": int(exitstatus), "calls": _calls})
