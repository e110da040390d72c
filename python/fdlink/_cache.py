"""The link cache (``fdlink.cache``, ``prewarm()``) and what the installation holds:
``doctor()``, ``versions()``, ``include_dir()``, ``cmake_dir()``.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Union

from . import _errors, _fdlink, _libs
from ._types import PathLike

# ---- cache, prewarm, doctor, versions ------------------------------------------------------------

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
