"""fdlink kernels, maps, elementwise kernels and reductions as PyTorch custom operators
(``torch.library``), so that they run inside ``torch.compile(fullgraph=True)`` without a graph
break, and inside CUDA graphs (``mode="reduce-overhead"``, ``torch.cuda.graph``).

    import fdlink, fdlink.torch
    op = fdlink.torch.kernel_op(mod.kernel("saxpy"), "float *y, const float *x, float a, int n",
                                writes=["y"], grid=lambda n, **_: (n + 255) // 256, block=256)
    op(y, x, 2.0, y.numel())             # torch.ops.fdlink.saxpy_0: y is declared mutated
    mul = fdlink.torch.map_op(lib.map("mul_f32_f32"), "as")
    z = mul(x, 3.0)                      # functional: z is allocated (float32, x's shape)

Every operator has a fake implementation (shapes and dtypes from the declarations), so that
FakeTensor tracing, meta tensors and torch.compile see through it, and launches on PyTorch's
current stream of the tensors' device, never waiting: failed FDL_CALL / FDL_MAP_CALL statuses
are reported by :func:`check` (or the map's/module's own ``check``), after the graph has run.
The operators are not differentiable; register a backward with
``torch.library.register_autograd(op, backward, setup_context=...)`` (docs/python.md).

This is the only module of fdlink that imports torch.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from . import _fdlink, _gen, _kernel, _ops
from ._ops import dims as _dims, out_spec as _out_spec, parse_params as _params

__all__ = ["kernel_op", "map_op", "elementwise_op", "reduction_op", "check", "torch_dtype"]

_DTYPES: Dict[str, "torch.dtype"] = {
    "f2": torch.float16, "f4": torch.float32, "f8": torch.float64, "i1": torch.int8,
    "i2": torch.int16, "i4": torch.int32, "i8": torch.int64, "u1": torch.uint8, "b1": torch.bool,
}
for _c, _n in (("u2", "uint16"), ("u4", "uint32"), ("u8", "uint64")):
    if hasattr(torch, _n):  # torch 2.3 and later
        _DTYPES[_c] = getattr(torch, _n)

_libs: Dict[str, "torch.library.Library"] = {}
_counter = itertools.count()
_lock = threading.Lock()
_checks: List[Callable[[], None]] = []
_streams: Dict[Tuple[int, int], "_fdlink.Stream"] = {}



def _result(outs: List[Any]) -> Any:
    """An operator's outputs as torch.library returns them: None, one tensor, or a tuple."""
    return None if not outs else (outs[0] if len(outs) == 1 else tuple(outs))

def torch_dtype(code: Optional[str]) -> "torch.dtype":
    """The torch dtype of an fdlink type code ('f4', '*f4')."""
    c = (code or "").lstrip("*")
    if c not in _DTYPES:
        raise _fail(f"type {code!r} has no torch dtype")
    return _DTYPES[c]


_fail = _ops.fail


# PyTorch's current stream of a device, as the raw CUstream: what Inductor's generated code reads
# for its own launches (torch._C._cuda_getCurrentRawStream); torch.cuda.current_stream(i) makes a
# Stream object at every call (microseconds of the operator's per-call cost), and is the fallback
# where the former is missing (a PyTorch without CUDA, where no operator launches anyway).
_raw_stream: Callable[[int], int] = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
    (lambda index: torch.cuda.current_stream(index).cuda_stream)


def _stream(dev: "_fdlink.Device", index: int) -> Optional["_fdlink.Stream"]:
    """fdlink's wrapper of PyTorch's current stream on device @index (None: the legacy default
    stream), one per CUstream (the wrapper is made once: nothing is allocated at later launches,
    which may be captured into a CUDA graph)."""
    h = _raw_stream(index)
    if h == 0:
        return None
    s = _streams.get((index, h))
    if s is None:
        with _lock:
            if len(_streams) > 256:
                _streams.clear()
            s = _streams[(index, h)] = dev.wrap_stream(h)
    return s


def _scalar_schema(code: Optional[str], what: str) -> str:
    if code is None:
        raise _fail(f"{what}: the type is unknown (void* or a pointer to pointers), so it "
                    "cannot be an operator's argument")
    if code[0] == "f":
        return "float"
    if code == "b1":
        return "bool"
    return "int"


def _name(name: Optional[str], default: str) -> Tuple[str, str]:
    """(namespace, operator name): 'ns::op', 'op' (namespace fdlink), or @default + a number."""
    if name is None:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in default) or "op"
        return "fdlink", f"{base}_{next(_counter)}"
    if "::" in name:
        ns, op = name.split("::", 1)
        return ns, op
    return "fdlink", name


def _define(qual: Tuple[str, str], schema: str, impl: Callable[..., Any],
            fake: Callable[..., Any]) -> Any:
    ns, op = qual
    with _lock:
        lib = _libs.get(ns)
        if lib is None:
            lib = _libs[ns] = torch.library.Library(ns, "FRAGMENT")
        lib.define(op + schema)
        lib.impl(op, impl, "CUDA")
        torch.library.register_fake(f"{ns}::{op}", fake, lib=lib)
    return getattr(getattr(torch.ops, ns), op)


def _first_tensor(args: Sequence[Any]) -> Optional["torch.Tensor"]:
    return next((a for a in args if isinstance(a, torch.Tensor)), None)


def _first_pointer(params: Sequence[Tuple[str, Optional[str]]]) -> Optional[int]:
    """The index of the first pointer (tensor) parameter in @params, None if there is none."""
    return next((i for i, (_, c) in enumerate(params) if (c or "").startswith("*")), None)


def kernel_op(kernel: "_kernel.Kernel", params: Union[str, Sequence[Tuple[str, str]]], *,
              grid: Any, block: Any, writes: Sequence[str] = (),
              outputs: Optional[Mapping[str, Any]] = None, shared_mem: int = 0,
              name: Optional[str] = None) -> Any:
    """A custom operator launching @kernel.

    @params: the kernel's parameters with names, 'float *y, const float *x, float a, int n' (or
    [(name, type)]): pointers are tensors (their dtypes checked), scalars float/int/bool.
    @writes: the pointer parameters the kernel writes in place (declared mutated: ``Tensor(a!)``).
    @outputs: {parameter: shape} for pointer parameters the operator allocates and returns
    instead (functional form; the shape an input's name, an int, a tuple or a callable over the
    arguments by name); the dtype is the declared one; the memory is not initialised.
    @grid, @block: dims, or callables over the arguments by name (``lambda n, **_: ...``).
    Returns the operator (``torch.ops.<ns>.<name>``).
    """
    ps = _params(params)
    codes = dict(ps)
    outputs = dict(outputs or {})
    what = f"kernel_op '{kernel.name}'"
    for w in list(writes) + list(outputs):
        if w not in codes or not (codes[w] or "").startswith("*"):
            raise _fail(f"{what}: {w!r} is not a pointer parameter of {[p for p, _ in ps]}")
    shapes = {o: _out_spec(s, codes, f"{what}: output {o!r}") for o, s in outputs.items()}
    k = kernel.module.kernel(kernel.name, [_ops.type_name(c) for _, c in ps])
    ins = [(n, c) for n, c in ps if n not in outputs]
    args = []
    for n, c in ins:
        if (c or "").startswith("*"):
            args.append(f"Tensor{'(a' + str(len(args)) + '!)' if n in writes else ''} {n}")
        elif c is None:
            raise _fail(f"{what}: parameter {n!r} has no checked type (void*): not allowed")
        else:
            args.append(f"{_scalar_schema(c, what)} {n}")
    rets = ", ".join("Tensor" for _ in outputs)
    schema = f"({', '.join(args)}) -> " + ("()" if not outputs else
                                            ("Tensor" if len(outputs) == 1 else f"({rets})"))
    mod = kernel.module
    dev = mod.device
    # what every call needs, worked out once: the launch itself (the extension's kernel, as
    # Kernel.launch calls it), the device, where the first tensor is, whether the arguments are
    # needed by name (callable geometry, allocated outputs)
    launch = k._k.launch
    ordinal = dev.ordinal
    in_names = tuple(n for n, _ in ins)
    all_names = tuple(n for n, _ in ps)
    first = _first_pointer(ins)
    by_name = bool(outputs) or callable(grid) or callable(block)

    def alloc(named: Dict[str, Any], like: "torch.Tensor", empty: Callable[..., Any]) -> List[Any]:
        return [empty(tuple(shapes[o](**named)), dtype=torch_dtype(codes[o]), device=like.device)
                for o in outputs]

    def impl(*a: Any) -> Any:
        if first is None:
            raise _fail(f"{what}: no tensor argument")
        t = a[first]
        if t.get_device() != ordinal:
            raise _fail(f"{what}: the tensors are on {t.device}, the kernel's module on "
                        f"device {ordinal}")
        if not by_name:
            launch(grid, block, shared_mem, _stream(dev, ordinal), 0, *a)
            return None
        named = dict(zip(in_names, a))
        if outputs:
            outs = alloc(named, t, torch.empty)
            named.update(zip(outputs, outs))
            args: Sequence[Any] = [named[n] for n in all_names]
        else:
            outs, args = [], a
        launch(_dims(grid, named), _dims(block, named), shared_mem, _stream(dev, ordinal), 0,
               *args)
        return _result(outs)

    def fake(*a: Any) -> Any:
        named = dict(zip((n for n, _ in ins), a))
        t = _first_tensor(a)
        for n, c in ins:
            if (c or "").startswith("*") and named[n].dtype != torch_dtype(c):
                raise _fail(f"{what}: {n} is {named[n].dtype}, but the parameter is "
                            f"{torch_dtype(c)}")
        return _result(alloc(named, t, torch.empty) if t is not None else [])

    op = _define(_name(name, kernel.name), schema, impl, fake)
    _checks.append(mod.check_status)
    return op


def map_op(m: "_gen.Map", modes: str, *, out: bool = False, name: Optional[str] = None) -> Any:
    """A custom operator over a map (``lib.map(name)``): @modes one character per parameter, 'a'
    a tensor (every tensor of as many elements), 's' a scalar broadcast to every index.

    Functional (the default): ``op(a, b) -> Tensor`` (the declared return dtype, the first
    tensor's shape). With @out: ``op(out, a, b) -> ()``, out declared mutated.
    """
    what = f"map_op '{m.name}'"
    if len(modes) != len(m._params) or set(modes) - {"a", "s"}:
        raise _fail(f"{what}: modes {modes!r}: one 'a' or 's' per parameter "
                    f"({len(m._params)}) expected")
    if "a" not in modes:
        raise _fail(f"{what}: no array parameter (modes {modes!r}): the output's shape is "
                    "unknown")
    names = [f"x{i}" for i in range(len(modes))]
    args = [f"Tensor {n}" if mo == "a" else f"{_scalar_schema(c, what)} {n}"
            for n, mo, c in zip(names, modes, m._params)]
    rdt = torch_dtype(m._ret)
    if out:
        schema = f"(Tensor(a!) out, {', '.join(args)}) -> ()"
    else:
        schema = f"({', '.join(args)}) -> Tensor"
    dev = m.device

    def check_inputs(a: Sequence[Any]) -> "torch.Tensor":
        first = None
        for i, (x, mo, c) in enumerate(zip(a, modes, m._params)):
            if mo == "a":
                if x.dtype != torch_dtype(c):
                    raise _fail(f"{what}: argument {i + 1} is {x.dtype}, but parameter "
                                f"{i + 1} is {torch_dtype(c)}")
                if first is None:
                    first = x
                elif x.numel() != first.numel():
                    raise _fail(f"{what}: argument {i + 1} has {x.numel()} elements, the first "
                                f"array {first.numel()}")
        assert first is not None
        return first

    # what every call needs, worked out once: the arrays' places and dtypes; the generated map
    # (the extension's, for these modes) is made at the first launch, then kept
    ordinal = dev.ordinal
    arrays = tuple((i, torch_dtype(c)) for i, (mo, c) in enumerate(zip(modes, m._params))
                   if mo == "a")
    first = arrays[0][0]
    launches: List[Callable[..., Any]] = []

    def first_array(a: Sequence[Any]) -> "torch.Tensor":
        """The first array, after the checks of check_inputs (its errors where one fails)."""
        t = a[first]
        n = t.numel()
        for i, want in arrays:
            if a[i].dtype is not want or a[i].numel() != n:
                return check_inputs(a)
        return t

    def launcher() -> Callable[..., Any]:
        if not launches:
            launches.append(m._map(modes).launch)
        return launches[0]

    if out:
        def impl(o: Any, *a: Any) -> None:
            first_array(a)
            (launches[0] if launches else launcher())(o.numel(), False, _stream(dev, ordinal),
                                                      o, *a)

        def fake(o: Any, *a: Any) -> None:
            check_inputs(a)
            if o.dtype != rdt:
                raise _fail(f"{what}: out is {o.dtype}, but the function returns {rdt}")
    else:
        def impl(*a: Any) -> Any:  # type: ignore[misc]
            t = first_array(a)
            o = t.new_empty(t.shape, dtype=rdt)
            (launches[0] if launches else launcher())(o.numel(), False, _stream(dev, ordinal),
                                                      o, *a)
            return o

        def fake(*a: Any) -> Any:  # type: ignore[misc]
            t = check_inputs(a)
            return torch.empty(t.shape, dtype=rdt, device=t.device)

    op = _define(_name(name, m.name), schema, impl, fake)
    _checks.append(m.check)
    return op


def elementwise_op(ew: "_gen.Elementwise", *, writes: Sequence[str] = (),
                   outputs: Optional[Mapping[str, Any]] = None,
                   name: Optional[str] = None) -> Any:
    """A custom operator over an elementwise kernel (``lib.elementwise(arguments, op)`` or
    ``fdlink.kernels.elementwise``): its arguments' names and types are the operator's; @writes
    the arrays it writes in place, @outputs {array: shape} those it allocates and returns (as
    kernel_op). n is the first array's element count."""
    ps = _params(ew.arguments)
    codes = dict(ps)
    outputs = dict(outputs or {})
    what = f"elementwise_op '{name or 'elementwise'}'"
    for w in list(writes) + list(outputs):
        if w not in codes or not (codes[w] or "").startswith("*"):
            raise _fail(f"{what}: {w!r} is not an array argument of {[p for p, _ in ps]}")
    shapes = {o: _out_spec(s, codes, f"{what}: output {o!r}") for o, s in outputs.items()}
    ins = [(n, c) for n, c in ps if n not in outputs]
    args = []
    for n, c in ins:
        if (c or "").startswith("*"):
            args.append(f"Tensor{'(a' + str(len(args)) + '!)' if n in writes else ''} {n}")
        else:
            args.append(f"{_scalar_schema(c, what)} {n}")
    schema = f"({', '.join(args)}) -> " + ("()" if not outputs else
                                            ("Tensor" if len(outputs) == 1 else
                                             "(" + ", ".join("Tensor" for _ in outputs) + ")"))
    dev = ew.device
    # worked out once: the launch (the extension's map, as Elementwise calls it), the device,
    # the first tensor among the operator's arguments and among the kernel's (n is its size)
    launch = ew._m.launch
    ordinal = dev.ordinal
    in_names = tuple(n for n, _ in ins)
    all_names = tuple(n for n, _ in ps)
    first, first_all = _first_pointer(ins), _first_pointer(ps)

    def alloc(named: Dict[str, Any], like: "torch.Tensor") -> List[Any]:
        return [torch.empty(tuple(shapes[o](**named)), dtype=torch_dtype(codes[o]),
                            device=like.device) for o in outputs]

    def impl(*a: Any) -> Any:
        if first is None:
            raise _fail(f"{what}: no tensor argument")
        if outputs:
            named = dict(zip(in_names, a))
            outs = alloc(named, a[first])
            named.update(zip(outputs, outs))
            full: Sequence[Any] = [named[n] for n in all_names]
        else:
            outs, full = [], a
        launch(full[first_all].numel(), False, _stream(dev, ordinal), *full)
        return _result(outs)

    def fake(*a: Any) -> Any:
        named = dict(zip((n for n, _ in ins), a))
        for n, c in ins:
            if (c or "").startswith("*") and named[n].dtype != torch_dtype(c):
                raise _fail(f"{what}: {n} is {named[n].dtype}, but the argument is "
                            f"{torch_dtype(c)}")
        t = _first_tensor(a)
        return _result(alloc(named, t) if t is not None else [])

    op = _define(_name(name, "elementwise"), schema, impl, fake)
    _checks.append(ew.check)
    return op


def reduction_op(r: "_gen.Reduction", *, name: Optional[str] = None) -> Any:
    """A custom operator over a reduction (``lib.reduction(...)``): its arguments are the
    operator's; it returns a 0-dimensional tensor of the result type, written on the device
    (``out=``): nothing waits. n is the first array's element count."""
    ps = _params(r.arguments)
    what = f"reduction_op '{name or 'reduction'}'"
    args = [f"Tensor {n}" if (c or "").startswith("*") else f"{_scalar_schema(c, what)} {n}"
            for n, c in ps]
    rdt = torch_dtype(r._code)
    schema = f"({', '.join(args)}) -> Tensor"
    dev = r.device
    run = r._r.run_async  # worked out once, as for the other operators
    ordinal = dev.ordinal
    first = _first_pointer(ps)

    def impl(*a: Any) -> Any:
        if first is None:
            raise _fail(f"{what}: no tensor argument")
        t = a[first]
        o = t.new_empty((), dtype=rdt)
        run(t.numel(), _stream(dev, ordinal), o, *a)
        return o

    def fake(*a: Any) -> Any:
        t = _first_tensor(a)
        for x, (n, c) in zip(a, ps):
            if (c or "").startswith("*") and x.dtype != torch_dtype(c):
                raise _fail(f"{what}: {n} is {x.dtype}, but the argument is {torch_dtype(c)}")
        return torch.empty((), dtype=rdt, device=t.device if t is not None else "meta")

    op = _define(_name(name, "reduction"), schema, impl, fake)
    _checks.append(r.check)
    return op


def check() -> None:
    """Wait, then raise DeviceStatusError for a failed FDL_CALL / FDL_MAP_CALL in any operator
    made here (the lowest failing index of a map), since the last check: the operators never
    wait themselves, so that they can run inside compiled graphs and CUDA graphs."""
    for c in list(_checks):
        c()
