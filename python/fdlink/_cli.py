"""The ``fdlink`` command: the CLI binary installed in the package, run as it is."""

from __future__ import annotations

import os
import sys
from typing import List, Optional


def executable() -> str:
    """The path of the fdlink CLI (FDLINK_CLI overrides it)."""
    override = os.environ.get("FDLINK_CLI")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "fdlink")


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point: exec the CLI with the same arguments."""
    from . import _libs

    _libs.ensure()  # the cu13 extra's nvJitLink and NVRTC, for the CLI too
    exe = executable()
    args = sys.argv[1:] if argv is None else argv
    try:
        os.execv(exe, [exe] + list(args))
    except OSError as e:
        sys.stderr.write(f"fdlink: cannot run {exe}: {e.strerror}\n")
        sys.exit(1)
