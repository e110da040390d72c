"""Linked programs and their kernels: Module, FatModule, Kernel and the launch forms
(``kernel[grid, block](*args)``, ``kernel(*args, grid=, block=)``, ``kernel.prepare``).
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _errors, _fdlink
from ._device import _launch_stream, device
from ._types import _CLASS_NAMES, _SIG_CLASS, Dim, Param, _parse_names, _parse_types

fdlink_device = device

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
