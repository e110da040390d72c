"""Where libfdlink finds nvJitLink and NVRTC when no CUDA toolkit is installed.

libfdlink opens them at run time (dlopen) the first time a link or a compile needs them, trying
FDLINK_NVJITLINK / FDLINK_NVRTC first, then the usual names and the toolkit's folders. With the
``cu13`` extra (NVIDIA's nvJitLink and NVRTC wheels and cuda-pathfinder), :func:`ensure` asks
cuda.pathfinder for them before the first link and hands their paths to libfdlink through those
variables. A library found nowhere is a LibraryNotFoundError naming it, at the first link.
"""

from __future__ import annotations

import os
import threading
from typing import Dict, Optional

_done = False
_lock = threading.Lock()
#: what ensure() found: {"nvJitLink": path or None, "nvrtc": ...}
found: Dict[str, Optional[str]] = {}


def ensure() -> None:
    """Locate nvJitLink and NVRTC through cuda.pathfinder (if installed), once per process."""
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        _done = True
        try:
            from cuda import pathfinder  # type: ignore[import-not-found]
        except ImportError:
            return
        for libname, var in (("nvJitLink", "FDLINK_NVJITLINK"), ("nvrtc", "FDLINK_NVRTC")):
            if os.environ.get(var):
                found[libname] = os.environ[var]
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
