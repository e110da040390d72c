"""fdlink and Numba-CUDA: checked, cached foreign functions inside ``@cuda.jit`` kernels, and
Numba device functions checked and used in fdlink's maps (docs/python.md, "The Numba bridge").

    from numba import cuda
    import fdlink.numba

    fns = fdlink.numba.declare_device("funcs.decl", ["funcs.cu"])   # checked now, cached
    mul = fns.mul_f32_f32                               # a cuda.declare_device descriptor

    @cuda.jit
    def scale(y, x):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = mul(x[i], 2.0)

Every descriptor links the same code object: the LTO-IR of the checked sources as fdlink's link
cache holds it (so Numba's link-time optimisation inlines the call), or PTX where asked. A
declaration that the code disagrees with (a wrong width, a missing definition) is refused by
:func:`declare_device` with the ``.decl`` file's line, before Numba links anything.

The reverse direction, :func:`compile_ltoir`: a Numba device function compiled to LTO-IR with the
C ABI, as an input of an :class:`fdlink.Library` whose ``abi=c`` declaration it is checked
against; ``lib.map(name)`` then runs it.

Only Numba's public API is used (``numba.cuda.declare_device``, the ``LinkableCode`` classes,
``numba.cuda.compile``), and Numba is imported only by this module.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _fdlink, _kernel, _libs, _library

__all__ = ["Declared", "declare_device", "compile_ltoir", "compile_kernel", "link_kernel",
           "linkable_code", "numba_arch"]


#: The Numba CUDA targets fdlink.numba works with, by their ``cuda`` modules.
_TARGETS = {"numba-cuda": "numba.cuda", "numba-cuda-mlir": "numba_cuda_mlir.cuda"}


def _cuda() -> Any:
    """Numba's ``cuda`` module: numba-cuda's (``numba.cuda``) where it is installed, else
    numba-cuda-mlir's (``numba_cuda_mlir.cuda``, the same public API); FDLINK_NUMBA=numba-cuda or
    numba-cuda-mlir chooses where both are."""
    import importlib  # noqa: PLC0415

    want = os.environ.get("FDLINK_NUMBA")
    if want and want not in _TARGETS:
        raise ValueError(f"FDLINK_NUMBA={want!r}: expected one of {', '.join(_TARGETS)}")
    errors = []
    for name in ([want] if want else list(_TARGETS)):
        try:
            return importlib.import_module(_TARGETS[name])
        except ImportError as e:
            errors.append(f"{name}: {e}")
    raise ImportError("fdlink.numba needs numba-cuda or numba-cuda-mlir (pip install numba-cuda, "
                      "or numba-cuda-mlir): " + "; ".join(errors))


def _types() -> Any:
    """Numba's types module, from the package _cuda() uses."""
    if _cuda().__name__.startswith("numba_cuda_mlir"):
        from numba_cuda_mlir.numba_cuda import types  # noqa: PLC0415
    else:
        from numba import types  # noqa: PLC0415
    return types


def _sigutils() -> Any:
    """Numba's signature parser, from the package _cuda() uses."""
    if _cuda().__name__.startswith("numba_cuda_mlir"):
        from numba_cuda_mlir.numba_cuda.core import sigutils  # noqa: PLC0415
    else:
        from numba.core import sigutils  # noqa: PLC0415
    return sigutils


def numba_arch() -> Optional[str]:
    """The architecture of Numba's current device ('sm_90'), or None without a usable GPU."""
    cuda = _cuda()
    try:
        if not cuda.is_available():
            return None
        cc = cuda.get_current_device().compute_capability
    except Exception:  # Numba raises CudaSupportError and others without a driver
        return None
    return f"sm_{cc[0]}{cc[1]}"


def _arch(arch: Optional[str], lib: Optional[_library.Library]) -> str:
    if arch:
        return arch
    if lib is not None and lib.arch:
        return lib.arch
    a = numba_arch()
    if a:
        return a
    raise ValueError("arch is needed without a GPU (e.g. arch='sm_90')")


# fdlink's input kinds -> the LinkableCode class names of numba.cuda
_LINKABLE = {"ltoir": "LTOIR", "ptx": "PTXSource", "cubin": "Cubin", "fatbin": "Fatbin",
             "object": "Object", "library": "Archive"}
_EXT = {"ltoir": ".ltoir", "ptx": ".ptx", "cubin": ".cubin", "fatbin": ".fatbin",
        "object": ".o", "library": ".a"}


def linkable_code(kind: str, data: bytes, name: str) -> Any:
    """One fdlink input as a ``numba.cuda`` LinkableCode object (LTOIR, PTXSource, Cubin, ...)."""
    cls = _LINKABLE.get(kind)
    if cls is None:
        raise ValueError(f"{name}: Numba cannot link an input of kind {kind!r}")
    base = os.path.basename(name)
    if not base.endswith(_EXT[kind]):
        base = os.path.splitext(base)[0] + _EXT[kind]
    return getattr(_cuda(), cls)(data, name=base)


def _numba_signature(decl: _library.Declaration) -> Any:
    """The declaration's signature as Numba's types: the signature language is Numba's, so the
    canonical text is parsed by Numba itself."""
    try:
        _sigutils().normalize_signature(decl.signature)
    except Exception as e:
        raise ValueError(f"{decl.source}:{decl.line}:{decl.column}: '{decl.name}': Numba "
                         f"cannot read the signature {decl.signature!r}: {e}") from None
    return decl.signature


class Declared(Mapping[str, Any]):
    """The descriptors of :func:`declare_device`: ``d.name`` or ``d["name"]`` is what
    ``numba.cuda.declare_device(name, sig, link=d.link, abi=...)`` returned for that declaration.

    ``link`` is the list of LinkableCode objects every descriptor links (the checked code);
    ``library`` the :class:`fdlink.Library`; ``check`` what the check reported (``arch``,
    ``nvrtc_cache_hits`` and ``nvrtc_compiled``: the CUDA C compiles taken from fdlink's cache
    and made, ...).
    """

    def __init__(self, library: _library.Library, descriptors: Dict[str, Any], link: List[Any],
                 check: Dict[str, Any], declarations: Dict[str, _library.Declaration]):
        self.library = library
        self.link = link
        self.check = check
        self.declarations = declarations
        self._d = descriptors
        for k, v in descriptors.items():
            if k.isidentifier() and not hasattr(type(self), k):
                self.__dict__[k] = v

    def __getitem__(self, name: str) -> Any:
        return self._d[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __repr__(self) -> str:
        kinds = ", ".join(type(x).__name__ for x in self.link)
        return f"<fdlink.numba.Declared {', '.join(self._d)} linking [{kinds}]>"


def _checked_inputs(lib: _library.Library, arch: str, output: str,
                    options: Mapping[str, Any]) -> Tuple[List[tuple], Dict[str, Any]]:
    """Compile (CUDA C -> @output) and check the library's sources against its declarations
    through fdlink's cache; the inputs as the linker got them, and the link's report."""
    opts = {**lib.options, **options, "cudadevrt": 0, "cuda_output": output}
    # fdl_link_check: the checks of a link, without the link (a declared function that no
    # source defines is an error, as at a link)
    link = _fdlink.Link(_library._options(arch, opts), [lib._decls], lib._inputs(), True)
    inputs = []
    for i, src in enumerate(lib.sources):
        data, kind = link.input_data(i)
        inputs.append((src.name, kind, data))
    return inputs, dict(link.info)


def declare_device(decls: Union[_library.Library, _library.PathLike, bytes, str],
                   sources: Iterable[_library.SourceLike] = (), *, arch: Optional[str] = None,
                   output: str = "ltoir", names: Optional[Sequence[str]] = None,
                   use_cooperative: bool = False, **options: Any) -> Declared:
    """One ``numba.cuda.declare_device`` descriptor per declaration, each linking the checked code.

    @decls: an :class:`fdlink.Library` (its sources and options are used), or a ``.decl`` file
    (path) or its text, with @sources (CUDA C, PTX, LTO-IR, cubin, fatbin, objects, archives, as
    for :class:`fdlink.Library`). @arch: the kernels' architecture (default: Numba's current
    device). @output: what CUDA C sources become for Numba, ``"ltoir"`` (the default: Numba's
    LTO inlines the call) or ``"ptx"``; other inputs are handed over in their own kind. @names:
    only these declarations. Keyword options are fdlink's link options (``defines``,
    ``include_dirs``, ``opt_level``, ...).

    Raises :class:`fdlink.ABIError` (file, line and column of the ``.decl`` line, symbol and
    rule) when the code disagrees with a declaration or does not define one, and
    :class:`fdlink.LinkError`/:class:`fdlink.ParseError` for code that does not compile or a
    declaration file that does not parse, all before Numba sees any of it.
    """
    if output not in ("ltoir", "ptx"):
        raise ValueError(f"output={output!r}: expected 'ltoir' or 'ptx'")
    cuda = _cuda()
    _libs.ensure()
    if isinstance(decls, _library.Library):
        if sources:
            raise TypeError("declare_device: sources come from the Library; pass none")
        lib = decls
    else:
        lib = _library.Library(decls, sources, arch=arch, check=False, **options)
        options = {}
    if not lib.sources:
        raise ValueError("declare_device: no sources to link (give the functions' code)")
    arch = _arch(arch, lib)
    inputs, info = _checked_inputs(lib, arch, output, options)
    link = [linkable_code(kind, data, name) for name, kind, data in inputs]
    wanted = None if names is None else set(names)
    decl_map: Dict[str, _library.Declaration] = {}
    descriptors: Dict[str, Any] = {}
    for d in lib.declarations:
        if wanted is not None and d.name not in wanted:
            continue
        sig = _numba_signature(d)
        descriptors[d.name] = cuda.declare_device(d.name, sig, link=link,
                                                  use_cooperative=use_cooperative,
                                                  abi="c" if d.abi == "c" else "numba")
        decl_map[d.name] = d
    if wanted is not None:
        missing = sorted(wanted - set(descriptors))
        if missing:
            raise KeyError(f"not declared in {lib._decls.source}: {', '.join(missing)}")
    return Declared(lib, descriptors, link, info, decl_map)


def _cc(arch: str) -> Tuple[int, int]:
    """'sm_90' / 'sm_90a' -> (9, 0)"""
    digits = arch.split("_", 1)[1].rstrip("afAF")
    return (int(digits[:-1]), int(digits[-1]))


def compile_ltoir(pyfunc: Any, sig: Any, *, name: Optional[str] = None,
                  arch: Optional[str] = None, **numba_options: Any) -> _library.Source:
    """A Numba device function as C-ABI LTO-IR, an input for :class:`fdlink.Library`.

    ``numba.cuda.compile(pyfunc, sig, device=True, abi="c", abi_info={"abi_name": name},
    output="ltoir", cc=...)``; the result is checked like any input against the library's
    declarations, where it needs an ``abi=c`` declaration (``name: float32(float32, float32)
    abi=c``). @name: the symbol (default: the function's ``__name__``). @arch: as for
    :func:`declare_device`. Other keywords go to ``numba.cuda.compile`` (``fastmath``, ``opt``,
    ``lineinfo``, ...).
    """
    cuda = _cuda()
    name = name or pyfunc.__name__
    cc = _cc(_arch(arch, None))
    ltoir, _restype = cuda.compile(pyfunc, sig, device=True, abi="c",
                                   abi_info={"abi_name": name}, output="ltoir", cc=cc,
                                   **numba_options)
    return _library.Source(bytes(ltoir), name=f"{name}.ltoir", kind="ltoir")



def compile_kernel(pyfunc: Any, sig: Any, *, arch: Optional[str] = None,
                   **numba_options: Any) -> _library.Source:
    """A Numba kernel as LTO-IR for fdlink's link: fdlink's cached path for a ``@cuda.jit``-style
    kernel whose array parameters are plain pointers (``types.CPointer(types.float32)``).

    ``numba.cuda.compile(pyfunc, sig, device=False, output="ltoir", cc=...)``. Foreign functions
    it calls through ``numba.cuda.declare_device`` descriptors (no ``link=`` needed) are left
    unresolved, to be linked by :meth:`fdlink.Library.link` with the library's checked code;
    that link is cached across processes, which Numba refuses for any kernel that links
    (docs/python.md). Numba's own compile still runs in each process: keep ``.data`` (e.g. in a
    file) to skip it. Numba's array parameters (``float32[:]``) are Numba's array structures,
    which only Numba's launcher fills: give pointers and sizes instead.
    """
    cuda = _cuda()
    ltoir, _restype = cuda.compile(pyfunc, sig, device=False, abi="numba", output="ltoir",
                                   cc=_cc(_arch(arch, None)), **numba_options)
    return _library.Source(bytes(ltoir), name=f"{pyfunc.__name__}.ltoir", kind="ltoir")


def _pick_entry(names: Sequence[str], pyname: str) -> str:
    """The kernel of a module made from one Numba kernel: Numba mangles the Python name into the
    entry's (``_ZN8__main__5scaleB2v2...``)."""
    tag = f"{len(pyname)}{pyname}"
    hits = [n for n in names if n == pyname or (n.startswith("_ZN") and tag in n)]
    if len(hits) != 1:
        raise LookupError(f"no single kernel for '{pyname}' among {', '.join(names) or 'none'}")
    return hits[0]


def link_kernel(lib: _library.Library, pyfunc: Any, sig: Any, *, arch: Optional[str] = None,
                device: Any = None, signature: Any = None,
                **numba_options: Any) -> _kernel.Kernel:
    """:func:`compile_kernel`, linked with @lib's checked functions (through fdlink's cache) and
    loaded: an :class:`fdlink.Kernel` launched as any other (``k[grid, block](y, x, n)`` with
    CuPy, PyTorch, Numba or JAX arrays). @signature: as for :meth:`fdlink.Module.kernel`."""
    src = compile_kernel(pyfunc, sig, arch=arch or lib.arch, **numba_options)
    mod = lib.link(src, arch=arch, device=device)
    return mod.kernel(_pick_entry(mod.kernel_names(), pyfunc.__name__), signature)
