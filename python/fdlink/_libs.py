"""Where libfdlink finds nvJitLink and NVRTC when no CUDA toolkit is installed.

libfdlink opens them at run time (dlopen) the first time a link or a compile needs them, trying
FDLINK_NVJITLINK / FDLINK_NVRTC first, then the usual names and the toolkit's folders. With the
``cu13`` extra (NVIDIA's nvJitLink and NVRTC wheels and cuda-pathfinder), :func:`ensure` asks
cuda.pathfinder for a library that libfdlink's own search would not find, before the first link,
and hands its path to libfdlink through the variable. A library that libfdlink finds itself is
left to it: cuda.pathfinder loads what it finds, and a process whose link is a cache hit never
needs nvJitLink or NVRTC in memory. A library found nowhere is a LibraryNotFoundError naming it,
at the first link that needs it.
"""

from __future__ import annotations

import os
import threading
from typing import Dict, Optional, Sequence

_done = False
_lock = threading.Lock()
#: what ensure() found: {"nvJitLink": path or None, "nvrtc": ...}
found: Dict[str, Optional[str]] = {}

#: (pathfinder's name, libfdlink's variable, the names libfdlink gives dlopen)
_LIBS = (
    ("nvJitLink", "FDLINK_NVJITLINK", ("libnvJitLink.so.13", "libnvJitLink.so")),
    ("nvrtc", "FDLINK_NVRTC", ("libnvrtc.so.13", "libnvrtc.so")),
)


def _toolkit_dirs() -> Sequence[str]:
    dirs = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            dirs.append(os.path.join(root, "lib64"))
    dirs.append("/usr/local/cuda/lib64")
    return dirs


def _findable(sonames: Sequence[str]) -> bool:
    """Would dlopen find one of @p sonames without help? Stats and one read of ld.so.cache:
    the folders of LD_LIBRARY_PATH, the toolkit's, and the dynamic linker's cache."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for d in dirs + list(_toolkit_dirs()):
        if any(os.path.exists(os.path.join(d, n)) for n in sonames):
            return True
    try:
        with open("/etc/ld.so.cache", "rb") as f:
            cache = f.read(64 << 20)
    except OSError:
        return False
    return any(n.encode() + b"\0" in cache for n in sonames)


def _pair() -> None:
    """NVRTC and nvJitLink of one release (issue 40): when one variable names a library and the
    other is unset, the other comes from the same folder when it is there (a wheel's lib folder),
    as the CLI does: an NVRTC newer than nvJitLink writes LTO-IR and PTX it cannot link."""
    names = {"FDLINK_NVJITLINK": "libnvJitLink.so.13", "FDLINK_NVRTC": "libnvrtc.so.13"}
    for var, other in (("FDLINK_NVJITLINK", "FDLINK_NVRTC"), ("FDLINK_NVRTC", "FDLINK_NVJITLINK")):
        path = os.environ.get(var)
        if path and "/" in path and not os.environ.get(other):
            sibling = os.path.join(os.path.dirname(path), names[other])
            if os.path.exists(sibling):
                os.environ[other] = sibling
                found[{"FDLINK_NVJITLINK": "nvJitLink", "FDLINK_NVRTC": "nvrtc"}[other]] = sibling
            return


def ensure() -> None:
    """Locate, once per process, through cuda.pathfinder (if installed), the libraries that
    libfdlink's own search would miss."""
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        _done = True
        _pair()
        missing = []
        for libname, var, sonames in _LIBS:
            if os.environ.get(var):
                found[libname] = os.environ[var]
            elif _findable(sonames):
                found[libname] = None  # libfdlink's own search, when a link needs it
            else:
                missing.append((libname, var))
        if not missing:
            return
        try:
            from cuda import pathfinder  # type: ignore[import-not-found]
        except ImportError:
            for libname, _ in missing:
                found[libname] = None
            return
        for libname, var in missing:
            if os.environ.get(var):  # set by _pair from its partner's folder
                continue
            try:
                loaded = pathfinder.load_nvidia_dynamic_lib(libname)
            except Exception:  # not found: libfdlink searches itself, and names what is missing
                found[libname] = None
                continue
            path = getattr(loaded, "abs_path", None)
            found[libname] = path
            if path:
                os.environ[var] = path
                _pair()
