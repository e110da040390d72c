"""What fdlink.torch and fdlink.jax share: parameter lists with names, and output shapes."""

from __future__ import annotations

from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _errors, _types


def fail(msg: str) -> "_errors.Error":
    """An InvalidArgumentError with @msg."""
    return _errors.InvalidArgumentError({"code": -2, "status": "FDL_EINVAL", "message": msg,
                                         "formatted": msg})


def parse_params(params: Union[str, Sequence[Tuple[str, str]]]) -> List[Tuple[str, Optional[str]]]:
    """'float *y, const float *x, float a, int n' -> [('y', '*f4'), ('x', '*f4'), ('a', 'f4'),
    ('n', 'i4')]; a list of (name, type) pairs is taken as it is."""
    if not isinstance(params, str):
        return [(n, _types._type_code(t)) for n, t in params]
    out = []
    for i, p in enumerate(x.strip() for x in params.split(",")):
        if not p:
            continue
        words = p.replace("*", " * ").split()
        if len(words) < 2 or not words[-1].isidentifier() or words[-1] == "*":
            raise fail(f"parameter {i + 1} ({p!r}): give a type and a name, e.g. 'float *x'")
        typ = " ".join(words[:-1]).replace(" *", "*").replace("* ", "*")
        try:
            code = _types._type_code(typ.replace(" * ", "*"))
        except ValueError as e:
            raise fail(f"parameter {i + 1} ({p!r}): {e}") from None
        out.append((words[-1], code))
    return out


def out_spec(spec: Any, params: Mapping[str, Optional[str]], what: str) -> Callable[..., Any]:
    """An output's shape: an input's name (its shape), an int, a tuple, or a callable over the
    operator's arguments by name."""
    if isinstance(spec, str):
        if spec not in params or not (params[spec] or "").startswith("*"):
            raise fail(f"{what}: {spec!r} is not an array parameter")
        return lambda **a: tuple(a[spec].shape)
    if isinstance(spec, int):
        return lambda **a: (spec,)
    if isinstance(spec, tuple):
        return lambda **a: spec
    if callable(spec):
        return spec
    raise fail(f"{what}: the shape must be an input's name, an int, a tuple or a callable")


def dims(d: Any, named: Mapping[str, Any]) -> Any:
    """A geometry: as given, or a callable over the arguments by name."""
    return d(**named) if callable(d) else d


def type_name(code: Optional[str]) -> str:
    """'*f4' -> 'float32*' (what Module.kernel's signature parser takes); None -> 'void*'."""
    if code is None:
        return "void*"
    names = {"b1": "bool", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
             "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "f2": "float16",
             "f4": "float32", "f8": "float64"}
    return names[code.lstrip("*")] + ("*" if code.startswith("*") else "")
