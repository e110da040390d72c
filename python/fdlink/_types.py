"""The Python door's type vocabulary: scalar types as array-interface type codes, kernel
signatures and argument lists parsed into them, and the records the extension hands up (a
declaration, a kernel parameter). The spellings are the C library's (fdl_gen_parse_type: C's and
the signature language's, one table for every door); this module keeps only the syntax around
them (Numba's ``float32[:]``, parameter names) and imports nothing of fdlink's but the extension
and the errors.
"""

from __future__ import annotations

import functools
import os
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _errors, _fdlink

PathLike = Union[str, "os.PathLike[str]"]
Dim = Union[int, Tuple[int, ...]]

# ---- types -------------------------------------------------------------------------------------

# Array-interface type codes as struct's formats (the scalars' packing, not their spellings).
_STRUCT = {"b1": "?", "i1": "b", "i2": "h", "i4": "i", "i8": "q", "u1": "B", "u2": "H",
           "u4": "I", "u8": "Q", "f2": "e", "f4": "f", "f8": "d"}


@functools.lru_cache(maxsize=1024)
def _c_type(t: str) -> Tuple[Optional[str], int]:
    """(code, pointer depth) of a type as the C library parses it: 'const float *' -> ('f4', 1),
    'unsigned long long' -> ('u8', 0), 'voidptr' -> (None, 1). Raises its error (an fdlink.Error)
    for a type it does not know."""
    return _fdlink.parse_type(t)


def _is_type(t: str) -> bool:
    try:
        _c_type(t)
    except _errors.Error:
        return False
    return True


def _type_code(t: str) -> Optional[str]:
    """'*f4' for an array (pointer) of float32, 'f4' for a float32 scalar, None for void*/unknown."""
    t = " ".join(t.split())
    depth = 0
    while True:  # Numba's array types and trailing stars: one level of pointer each
        if t.endswith("[:]") or t.endswith("[::1]"):
            t, depth = t[: t.rindex("[")].strip(), depth + 1
        elif t.endswith("*"):
            t, depth = t[:-1].strip(), depth + 1
        else:
            break
    try:
        code, more = _c_type(t)
    except _errors.Error as e:
        raise ValueError(f"unknown type {t!r} (use the signature language's names: float32, "
                         "int32, ..., or C's: float, int, ...)") from e
    depth += more
    if code is None:
        return None  # void, void*
    if depth > 1:
        return None  # an array of pointers: not checked
    return ("*" + code) if depth else code


def _split_param(p: str) -> Tuple[str, Optional[str]]:
    """A parameter's type and name: 'const float* x' -> ('const float *', 'x'), 'unsigned int'
    -> ('unsigned int', None): the last word is a name where the whole is not a type."""
    words = p.replace("*", " * ").split()
    if len(words) > 1 and words[-1].isidentifier() and not _is_type(" ".join(words)):
        return " ".join(words[:-1]), words[-1]
    return " ".join(words), None


def _parse_names(signature: Union[str, Sequence[str], None]) -> Tuple[Optional[str], ...]:
    """Parameter names of a C-style signature ('float *y, int n' -> ('y', 'n')); None where a
    parameter has none (and for the signature language's 'void(float32[:], int32)')."""
    if not isinstance(signature, str):
        return ()
    s = signature.strip()
    if "(" in s and s.endswith(")"):
        s = s[s.index("(") + 1:-1]
    names: List[Optional[str]] = [_split_param(p)[1] for p in (p.strip() for p in s.split(","))
                                  if p]
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
        items = [_split_param(p)[0] for p in parts]
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
