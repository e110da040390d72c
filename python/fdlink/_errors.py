"""The exception hierarchy: one class per fdlink status (FDL_E*), all under :class:`Error`.

Every exception raised for a failure of libfdlink carries the C library's error record, word for
word: ``code`` (the FDL_E* value), ``status`` (its name), ``backend_code`` (the raw CUresult,
nvJitLinkResult or nvrtcResult), ``source``, ``line``, ``column``, ``symbol``, ``message``, the
backend's whole ``log`` where there is one, and for links the ``diagnostics`` records (the same
records as ``fdlink link --diagnostics-format=json``). ``str(e)`` is the one line the CLI prints
(``source:line:col: symbol: message``).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

__all__ = [
    "Error", "InvalidArgumentError", "ArgumentTypeError", "OutOfMemoryError", "FileError", "ParseError", "ABIError",
    "LinkError", "NotFoundError", "NoDeviceError", "LibraryNotFoundError", "CudaError",
    "LimitError", "KindError", "VerifyError", "DeviceStatusError",
]


class Error(Exception):
    """Root of fdlink's exceptions: a failure reported by libfdlink, with its error record."""

    code: int
    status: str
    backend_code: int
    source: str
    line: int
    column: int
    symbol: str
    message: str
    log: Optional[str]
    diagnostics: Optional[List[Dict[str, Any]]]

    def __init__(self, record: Dict[str, Any]):
        super().__init__(record.get("formatted") or record.get("message", ""))
        self.record = record
        self.code = record.get("code", 0)
        self.status = record.get("status", "")
        self.backend_code = record.get("backend_code", 0)
        self.source = record.get("source", "")
        self.line = record.get("line", 0)
        self.column = record.get("column", 0)
        self.symbol = record.get("symbol", "")
        self.message = record.get("message", "")
        self.log = record.get("log")
        self.diagnostics = record.get("diagnostics")


class InvalidArgumentError(Error, ValueError):
    """FDL_EINVAL: an argument or option the library refused (also a ValueError)."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """A kernel or map argument of a type its parameter does not take (a float for an ``int``
    parameter, a number for a struct): an :class:`InvalidArgumentError` that is also a
    ``TypeError``. ``argument`` is its 1-based position (0: the argument count)."""


class OutOfMemoryError(Error, MemoryError):
    """FDL_ENOMEM."""


class FileError(Error):
    """FDL_EIO: a file could not be read or written."""


class ParseError(Error):
    """FDL_EPARSE: malformed declarations, PTX, or CUDA C that does not compile (``log``: NVRTC's)."""


class ABIError(Error):
    """FDL_EABI: compiled code disagrees with its declaration.

    ``rule`` is the ABI rule cited (``"ABI-5"``) and ``declaration`` the declaration's location
    (``"lib.decl:3:1"``) where the library names them.
    """

    rule: Optional[str]
    declaration: Optional[str]

    def __init__(self, record: Dict[str, Any]):
        super().__init__(record)
        self.rule = None
        for d in self.diagnostics or ():
            if d.get("tool") == "fdlink" and d.get("code", "").startswith("ABI-"):
                self.rule = d["code"]
                break
        if self.rule is None:
            m = re.search(r"\b(ABI-\d+)\b", self.message)
            self.rule = m.group(1) if m else None
        m = re.search(r"declared (?:at|in) ([^\s,;()]+:\d+(?::\d+)?)", self.message)
        self.declaration = m.group(1) if m else None


class LinkError(Error):
    """FDL_ELINK: the device linker failed (``log`` holds its log, ``diagnostics`` its records)."""


class NotFoundError(Error, LookupError):
    """FDL_ENOTFOUND: a named kernel, symbol or file does not exist."""


class NoDeviceError(Error):
    """FDL_ENODEVICE: no CUDA driver or no CUDA device."""


class LibraryNotFoundError(Error, ImportError):
    """FDL_ENOLIB: a CUDA library (driver, nvJitLink, NVRTC) could not be loaded; ``library``
    names it."""

    library: str

    def __init__(self, record: Dict[str, Any]):
        Error.__init__(self, record)
        m = re.search(r"cannot (?:load|find) (\S+)", self.message)
        self.library = self.symbol or (m.group(1) if m else "")


class CudaError(Error):
    """FDL_ECUDA: a CUDA driver call failed (``backend_code`` is the CUresult)."""


class LimitError(Error):
    """FDL_ELIMIT: input beyond a documented limit."""


class KindError(Error):
    """FDL_EKIND: input of an unknown or unusable kind."""


class VerifyError(Error):
    """FDL_EVERIFY: a device result differs from its reference."""


class DeviceStatusError(Error):
    """FDL_EDEVICE: a device function returned a non-zero status.

    ``function`` is the device function, ``status`` its status (also ``backend_code``), ``index``
    the lowest failing index of a map (or None), ``block``/``thread`` where a kernel's FDL_CALL
    failed (or None), ``count`` the number of failures (1 when the library says no more).
    """

    function: str
    index: Optional[int]
    count: int

    def __init__(self, record: Dict[str, Any]):
        super().__init__(record)
        self.function = self.symbol
        self.device_status = self.backend_code
        m = re.search(r" at index (\d+)", self.message)
        self.index = int(m.group(1)) if m else None
        m = re.search(r" at block \((\d+),(\d+),(\d+)\) thread \((\d+),(\d+),(\d+)\)", self.message)
        self.block = tuple(int(x) for x in m.groups()[:3]) if m else None
        self.thread = tuple(int(x) for x in m.groups()[3:]) if m else None
        m = re.search(r"\(first of (\d+) failures\)", self.message)
        self.count = int(m.group(1)) if m else 1


_BY_CODE = {
    -1: InvalidArgumentError, -2: OutOfMemoryError, -3: FileError, -4: ParseError, -5: ABIError,
    -6: LinkError, -7: NotFoundError, -8: NoDeviceError, -9: LibraryNotFoundError, -10: CudaError,
    -11: LimitError, -12: KindError, -13: VerifyError, -14: DeviceStatusError,
}


def from_record(record: Dict[str, Any]) -> Error:
    """The exception for a C error record (called by the extension)."""
    if record.get("python") == "TypeError":  # an argument refused for its type
        e: Error = ArgumentTypeError(record)
    else:
        e = _BY_CODE.get(record.get("code", 0), Error)(record)
    if "argument" in record:
        e.argument = record["argument"]  # type: ignore[attr-defined]
    return e
