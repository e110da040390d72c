"""The Python door's type vocabulary: scalar type names (the signature language's and C's) as
array-interface type codes, kernel signatures and argument lists parsed into them, and the records
the extension hands up (a declaration, a kernel parameter). The bottom of the package: it imports
nothing of fdlink's.
"""

from __future__ import annotations

import os
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]
Dim = Union[int, Tuple[int, ...]]

# ---- types -------------------------------------------------------------------------------------

# The signature language's scalar types (abi/ABI.md) as array-interface type codes.
_TYPECODES = {
    "bool": "b1", "boolean": "b1", "bool_": "b1",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "intp": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8", "uintp": "u8",
    "float16": "f2", "float32": "f4", "float64": "f8",
    # C spellings
    "char": "i1", "signed char": "i1", "unsigned char": "u1", "short": "i2",
    "unsigned short": "u2", "int": "i4", "unsigned": "u4", "unsigned int": "u4",
    "long": "i8", "long long": "i8", "unsigned long": "u8", "unsigned long long": "u8",
    "size_t": "u8", "float": "f4", "double": "f8", "__half": "f2", "half": "f2",
    "int8_t": "i1", "int16_t": "i2", "int32_t": "i4", "int64_t": "i8",
    "uint8_t": "u1", "uint16_t": "u2", "uint32_t": "u4", "uint64_t": "u8",
}
_STRUCT = {"b1": "?", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
           "u4": "I", "u8": "Q", "f2": "e", "f4": "f", "f8": "d"}


def _type_code(t: str) -> Optional[str]:
    """'*f4' for an array (pointer) of float32, 'f4' for a float32 scalar, None for void*/unknown."""
    t = " ".join(t.replace("const ", "").split())
    depth = 0
    while True:
        if t.endswith("[:]") or t.endswith("[::1]"):
            t, depth = t[: t.rindex("[")].strip(), depth + 1
        elif t.endswith("*"):
            t, depth = t[:-1].strip(), depth + 1
        elif t.startswith("CPointer(") and t.endswith(")"):
            t, depth = t[len("CPointer("):-1].strip(), depth + 1
        else:
            break
    if t in ("void", "voidptr"):
        return None if depth or t == "voidptr" else None
    code = _TYPECODES.get(t)
    if code is None:
        raise ValueError(f"unknown type {t!r} (use the signature language's names: float32, "
                         "int32, ..., or C's: float, int, ...)")
    if depth > 1:
        return None  # an array of pointers: not checked
    return ("*" + code) if depth else code


def _parse_names(signature: Union[str, Sequence[str], None]) -> Tuple[Optional[str], ...]:
    """Parameter names of a C-style signature ('float *y, int n' -> ('y', 'n')); None where a
    parameter has none (and for the signature language's 'void(float32[:], int32)')."""
    if not isinstance(signature, str):
        return ()
    s = signature.strip()
    if "(" in s and s.endswith(")"):
        s = s[s.index("(") + 1:-1]
    names: List[Optional[str]] = []
    for p in (p.strip() for p in s.split(",") if p.strip()):
        words = p.replace("*", " * ").split()
        last = words[-1] if words else ""
        named = (len(words) > 1 and last.isidentifier() and last not in _TYPECODES and
                 last not in ("const", "unsigned", "signed", "long", "short", "int", "char"))
        names.append(last if named else None)
    return tuple(names)


class Param(NamedTuple):
    """One kernel parameter (``kernel.params``): its position, its name where a signature gave
    one, its class (``'float'``, ``'signed'``, ``'unsigned'``, ``'bits'`` (an integer or a
    pointer), ``'bytes'`` (a struct by value), ``'pointer'`` and ``'bool'`` from a signature, or
    ``'unknown'``), its size in bytes (0: not known), and where the class came from: ``'signature'``,
    ``'code'`` (the PTX fdlink saw), or ``'size'`` (only the size is known: a cubin from
    elsewhere; then ``known`` is False and arguments are packed by their Python type, see
    docs/python.md)."""

    index: int
    name: Optional[str]
    cls: str
    size: int
    source: str

    @property
    def known(self) -> bool:
        return self.source != "size"


_CLASS_NAMES = ("unknown", "float", "signed", "unsigned", "bits", "bytes")
_SIG_CLASS = {"f": "float", "i": "signed", "u": "unsigned", "b": "bool"}


def _parse_types(signature: Union[str, Sequence[str]]) -> Tuple[Optional[str], ...]:
    """Parameter types from 'void(float32[:], float32, int32)', 'float *x, float a' or a list."""
    if isinstance(signature, str):
        s = signature.strip()
        if "(" in s and s.endswith(")"):
            s = s[s.index("(") + 1:-1]
        parts = [p.strip() for p in s.split(",") if p.strip()]
        items = []
        for p in parts:
            # "float *x" / "const float* x" / "float32": drop a trailing parameter name
            words = p.replace("*", " * ").split()
            if len(words) > 1 and words[-1] not in ("*",) and words[-1].isidentifier() and \
                    " ".join(words[:-1]).replace(" *", "*").replace(" * ", "*") and \
                    words[-1] not in _TYPECODES and not words[-1].startswith("CPointer"):
                words = words[:-1]
            items.append(" ".join(words).replace(" *", "*"))
        signature = items
    return tuple(_type_code(t) for t in signature)


def _arg_list_types(arguments: str) -> List[Optional[str]]:
    out: List[Optional[str]] = []
    for p in arguments.split(","):
        p = p.strip()
        if not p:
            continue
        words = p.replace("*", " * ").split()
        typ = " ".join(words[:-1]).replace(" *", "*").replace("* ", "*")
        try:
            out.append(_type_code(typ.replace(" * ", "*")))
        except ValueError:
            out.append(None)
    return out


class Declaration:
    """One declared foreign function."""

    __slots__ = ("name", "signature", "abi", "source", "line", "column", "return_type",
                 "param_types")

    def __init__(self, t: tuple):
        (self.name, self.signature, self.abi, self.source, _unused, self.line, self.column,
         _sigcol, self.return_type, self.param_types) = t

    def __repr__(self) -> str:
        return (f"Declaration({self.name}: {self.signature} abi={self.abi} "
                f"at {self.source}:{self.line}:{self.column})")
