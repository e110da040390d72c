"""The exception hierarchy: one class per fdlink status (FDL_E*), all under :class:`Error`.

Every exception raised for a failure of libfdlink carries the C library's error record, word for
word: ``code`` (the FDL_E* value), ``status`` (its name), ``backend_code`` (the raw CUresult,
nvJitLinkResult or nvrtcResult), ``source``, ``line``, ``column``, ``symbol``, ``message``, the
backend's whole ``log`` where there is one, and for links the ``diagnostics`` records (the same
records as ``fdlink link --diagnostics-format=json``). ``str(e)`` is the one line the CLI prints
(``source:line:col: symbol: message``). The structure a message names is carried by the record
as fields, never read back out of its words (fdl_error's details, error.h's FDL_ERROR_HAS_*):
the ABI rule and the declaration's place (:class:`ABIError`), the library
(:class:`LibraryNotFoundError`), a map's index, a kernel's block and thread and the failure count
(:class:`DeviceStatusError`). The class is chosen by the status name (``FDL_EABI``).

Every exception pickles with its whole record (``__reduce__``), so that ``multiprocessing`` and
``concurrent.futures`` hand a worker's exception to the parent with its fields.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

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

    def __init__(self, record: Union[Dict[str, Any], str]):
        if not isinstance(record, dict):  # Error("message"), as for any exception
            record = {"message": str(record), "formatted": str(record)}
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

    def __reduce__(self) -> Tuple[Any, ...]:
        # rebuilt from the record (what __init__ takes), then any attribute set since
        return (type(self), (self.record,), dict(self.__dict__))


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
    (``"lib.decl:3:1"``) where the library names them (else None); ``declaration_source``,
    ``declaration_line`` and ``declaration_column`` are its parts (None, 0, 0 when there is none).
    """

    rule: Optional[str]
    declaration: Optional[str]
    declaration_source: Optional[str]
    declaration_line: int
    declaration_column: int

    def __init__(self, record: Union[Dict[str, Any], str]):
        super().__init__(record)
        rule = self.record.get("rule")
        self.rule = None if rule is None else f"ABI-{rule}"
        self.declaration_source = self.record.get("decl_source")
        self.declaration_line = self.record.get("decl_line", 0)
        self.declaration_column = self.record.get("decl_column", 0)
        self.declaration = (None if self.declaration_source is None else
                            f"{self.declaration_source}:{self.declaration_line}:"
                            f"{self.declaration_column}")


class LinkError(Error):
    """FDL_ELINK: the device linker failed (``log`` holds its log, ``diagnostics`` its records)."""


class NotFoundError(Error, LookupError):
    """FDL_ENOTFOUND: a named kernel, symbol or file does not exist."""


class NoDeviceError(Error):
    """FDL_ENODEVICE: no CUDA driver or no CUDA device."""


class LibraryNotFoundError(Error, ImportError):
    """FDL_ENOLIB: a CUDA library (driver, nvJitLink, NVRTC) could not be loaded, or lacks what
    fdlink needs; ``library`` names it (its file, ``"libcuda.so.1"``, or what it is,
    ``"nvJitLink"``; ``""`` where the library names none)."""

    library: str

    def __init__(self, record: Union[Dict[str, Any], str]):
        Error.__init__(self, record)
        self.library = self.record.get("library", "")


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
    block: Optional[Tuple[int, int, int]]
    thread: Optional[Tuple[int, int, int]]
    count: int

    def __init__(self, record: Union[Dict[str, Any], str]):
        super().__init__(record)
        self.function = self.symbol
        self.device_status = self.backend_code
        self.index = self.record.get("index")
        block, thread = self.record.get("block"), self.record.get("thread")
        self.block = None if block is None else tuple(block)
        self.thread = None if thread is None else tuple(thread)
        self.count = self.record.get("count", 1)


# the class of each status, by the name the C library gives it (fdl_status_name)
_BY_STATUS = {
    "FDL_EINVAL": InvalidArgumentError, "FDL_ENOMEM": OutOfMemoryError, "FDL_EIO": FileError,
    "FDL_EPARSE": ParseError, "FDL_EABI": ABIError, "FDL_ELINK": LinkError,
    "FDL_ENOTFOUND": NotFoundError, "FDL_ENODEVICE": NoDeviceError,
    "FDL_ENOLIB": LibraryNotFoundError, "FDL_ECUDA": CudaError, "FDL_ELIMIT": LimitError,
    "FDL_EKIND": KindError, "FDL_EVERIFY": VerifyError, "FDL_EDEVICE": DeviceStatusError,
}


def from_record(record: Dict[str, Any]) -> Error:
    """The exception for a C error record (called by the extension)."""
    if record.get("python") == "TypeError":  # an argument refused for its type
        e: Error = ArgumentTypeError(record)
    else:
        e = _BY_STATUS.get(record.get("status", ""), Error)(record)
    if "argument" in record:
        e.argument = record["argument"]  # type: ignore[attr-defined]
    return e


def bad_argument(argument: str, message: str, type_error: bool = False) -> Error:
    """The exception for a bad argument of the package's API (not a kernel's): an
    InvalidArgumentError (a ValueError), or an ArgumentTypeError (also a TypeError) when
    @type_error; ``symbol`` the argument, ``str()`` one line naming it (``argument: message``)."""
    line = f"{argument}: {message}"
    record = {"code": -1, "status": "FDL_EINVAL", "symbol": argument, "message": message,
              "formatted": line, "log": None, "diagnostics": None}
    if type_error:
        record["python"] = "TypeError"
    return from_record(record)
