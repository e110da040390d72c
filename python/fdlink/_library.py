"""Inputs, declarations and libraries: Source, Library, ``compile()`` and ``link()`` (one
architecture, or several into a fatbin), and ``fdlink.kernels``.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _errors, _fdlink, _libs
from ._device import device
from ._gen import Elementwise, Map, Reduction
from ._kernel import FatModule, Module
from ._types import Declaration, PathLike

#: Kinds of inputs, as libfdlink names them.
KINDS = ("auto", "ptx", "cubin", "fatbin", "ltoir", "object", "library", "cuda", "bitcode")

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


# The library's option table (fdl_link_option_next, _fdlink.LINK_OPTIONS): the keyword options a
# link takes are its rows (arch is the functions' own parameter), and an enum's numbers are its
# words' places; docs/python.md and _fdlink.pyi list the same (tests/python/test_options.py).
_OPTIONS = {row["name"]: row for row in _fdlink.LINK_OPTIONS}
_KNOWN = frozenset(_OPTIONS) - {"arch"}
_LISTS = frozenset(name for name, row in _OPTIONS.items() if row["kind"] == "list")


def _enum_numbers(name: str) -> Dict[Any, int]:
    """An enum option's words -> its numbers, with Python's spellings: True for "on", False for
    "off", and None for the default (not for backend, which has never taken None)."""
    row = _OPTIONS[name]
    table: Dict[Any, int] = {}
    for number, word in enumerate(row["words"]):
        if word in ("on", "off"):
            table[word == "on"] = number
        table[word] = number
    if name != "backend":
        table[None] = row["default"]
    return table


_BACKENDS = _enum_numbers("backend")
_LTO = _enum_numbers("lto")
_CACHE = _enum_numbers("cache")
_OUTPUT = _enum_numbers("cuda_output")


def _options(arch: Optional[str], options: Mapping[str, Any]) -> Dict[str, Any]:
    """Keyword options -> the extension's dict (C names; enums as numbers)."""
    bad = set(options) - _KNOWN
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
    for key in _LISTS - {"defines", "include_dirs"}:  # those two made lists above
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
