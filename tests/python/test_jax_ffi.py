"""fdlink.jax: the XLA FFI handler (python/fdlink/_xla_ffi.c) and the functions over it.

Without a GPU (the mock driver, a CPU jaxlib for its headers, and a C compiler): the handler is
built as fdlink.jax builds it, and called through ctypes with hand-built XLA_FFI_CallFrame
structs and a stand-in XLA_FFI_Api: its metadata answer, its decoding of buffers and attributes
(every refusal a one-line error naming the attribute or argument), and a map it launches over
the mock driver's memory. With a GPU (marked gpu): inside jax.jit against NumPy, jax.vmap, a
device status surfacing as an error, reductions and kernels."""

import ctypes as C
import os
import pathlib
import shutil
import struct

import numpy as np
import pytest

import fdlink

jax = pytest.importorskip("jax")
import fdlink.jax as fj  # noqa: E402
from fakes import floats, put  # noqa: E402

pytestmark = [pytest.mark.mock, pytest.mark.jax]

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def handler():
    if fdlink.include_dir() is None and not os.environ.get("FDLINK_INCLUDE_DIRS"):
        os.environ["FDLINK_INCLUDE_DIRS"] = os.pathsep.join(
            str(ROOT / d / "include") for d in ("base", "abi", "host", "gen", "link", "device"))
    cc = (os.environ.get("CC") or "cc").split()[0]
    if not shutil.which(cc) and not os.environ.get("FDLINK_XLA_FFI_LIB"):
        pytest.skip("no C compiler to build the XLA FFI handler")
    return fj.handler_library()


# ---- the C API's structs (xla/ffi/api/c_api.h), as ctypes mirrors -------------------------

class ByteSpan(C.Structure):
    _fields_ = [("ptr", C.c_char_p), ("len", C.c_size_t)]


class Scalar(C.Structure):
    _fields_ = [("dtype", C.c_int), ("value", C.c_void_p)]


class Array(C.Structure):
    _fields_ = [("dtype", C.c_int), ("size", C.c_size_t), ("data", C.c_void_p)]


class Buffer(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("dtype", C.c_int),
                ("data", C.c_void_p), ("rank", C.c_int64), ("dims", C.POINTER(C.c_int64))]


class Args(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("size", C.c_int64),
                ("types", C.POINTER(C.c_int)), ("args", C.POINTER(C.c_void_p))]


class Attrs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("size", C.c_int64),
                ("types", C.POINTER(C.c_int)), ("names", C.POINTER(C.POINTER(ByteSpan))),
                ("attrs", C.POINTER(C.c_void_p))]


class ApiVersion(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("major", C.c_int),
                ("minor", C.c_int)]


class ErrorCreateArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("message", C.c_char_p),
                ("errc", C.c_int)]


class StreamGetArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("ctx", C.c_void_p),
                ("stream", C.c_void_p)]


ERROR_CREATE = C.CFUNCTYPE(C.c_void_p, C.POINTER(ErrorCreateArgs))
STREAM_GET = C.CFUNCTYPE(C.c_void_p, C.POINTER(StreamGetArgs))


class Api(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("version", ApiVersion),
                ("internal", C.c_void_p), ("error_create", ERROR_CREATE),
                ("error_get_message", C.c_void_p), ("error_destroy", C.c_void_p),
                ("handler_register", C.c_void_p), ("stream_get", STREAM_GET)] + \
               [(f"f{i}", C.c_void_p) for i in range(13)]


class ExtBase(C.Structure):
    pass


ExtBase._fields_ = [("struct_size", C.c_size_t), ("type", C.c_int),
                    ("next", C.POINTER(ExtBase))]


class Metadata(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("version", ApiVersion), ("traits", C.c_uint32),
                ("state_type_id", C.c_int64)]


class MetadataExt(C.Structure):
    _fields_ = [("base", ExtBase), ("metadata", C.POINTER(Metadata))]


class CallFrame(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("ext", C.c_void_p), ("api", C.POINTER(Api)),
                ("ctx", C.c_void_p), ("stage", C.c_int), ("args", Args), ("rets", Args),
                ("attrs", Attrs), ("future", C.c_void_p)]


F32, S32, S64, U8, U64 = 11, 4, 5, 6, 9
SCALAR, ARRAY = 3, 1


class Frame:
    """A call frame over device addresses, with attributes; keeps every ctypes object alive."""

    def __init__(self, operands, results, attrs):
        self.keep = []
        self.errors = []

        def err(a):
            self.errors.append(a.contents.message.decode())
            return 1  # any non-NULL XLA_FFI_Error*

        def stream(a):
            a.contents.stream = None  # the legacy default stream
            return None

        self.api = Api(error_create=ERROR_CREATE(err), stream_get=STREAM_GET(stream))
        self.keep += [self.api.error_create, self.api.stream_get]
        f = CallFrame(struct_size=C.sizeof(CallFrame), api=C.pointer(self.api), stage=3)
        f.args = self._buffers(operands)
        f.rets = self._buffers(results)
        names, types, values = [], [], []
        for name, v in attrs.items():
            bs = ByteSpan(name.encode(), len(name))
            self.keep.append(bs)
            names.append(C.pointer(bs))
            if isinstance(v, np.ndarray):
                a = Array({np.dtype(np.int64): S64, np.dtype(np.uint8): U8}[v.dtype], v.size,
                          v.ctypes.data)
                self.keep += [v, a]
                types.append(ARRAY)
                values.append(C.cast(C.pointer(a), C.c_void_p))
            else:
                dt, ct = {np.int32: (S32, C.c_int32), np.int64: (S64, C.c_int64),
                          np.uint64: (U64, C.c_uint64), float: (F32, C.c_float)}[type(v)]
                cv = ct(v.item() if hasattr(v, "item") else v)
                s = Scalar(dt, C.cast(C.pointer(cv), C.c_void_p))
                self.keep += [cv, s]
                types.append(SCALAR)
                values.append(C.cast(C.pointer(s), C.c_void_p))
        n = len(names)
        f.attrs = Attrs(C.sizeof(Attrs), None, n, (C.c_int * n)(*types),
                        (C.POINTER(ByteSpan) * n)(*names), (C.c_void_p * n)(*values))
        self.keep.append(f.attrs)
        self.frame = f

    def _buffers(self, bufs):
        ptrs = []
        for addr, dtype, shape in bufs:
            dims = (C.c_int64 * max(len(shape), 1))(*shape)
            b = Buffer(C.sizeof(Buffer), None, dtype, addr, len(shape), dims)
            self.keep += [dims, b]
            ptrs.append(C.cast(C.pointer(b), C.c_void_p))
        n = len(ptrs)
        a = Args(C.sizeof(Args), None, n, (C.c_int * n)(*([1] * n)), (C.c_void_p * n)(*ptrs))
        self.keep.append(a)
        return a

    def call(self, lib):
        lib.fdl_xla_handler.restype = C.c_void_p
        lib.fdl_xla_handler.argtypes = [C.POINTER(CallFrame)]
        return lib.fdl_xla_handler(C.byref(self.frame))


def map_attrs(m, modes, n, plan, scalars=b"\0", **over):
    fm = m._map(modes)
    a = dict(fdl_kind=np.int32(1), fdl_target=np.uint64(fm._c_handle),
             fdl_device=np.uint64(m.device._c_handle), fdl_plan=np.array(plan, np.int64),
             fdl_scalars=np.frombuffer(scalars, np.uint8).copy(),
             fdl_geometry=np.array([n], np.int64), fdl_check=np.int32(1))
    a.update(over)
    return {k: v for k, v in a.items() if v is not None}


def test_metadata_answer(handler):
    md = Metadata(struct_size=C.sizeof(Metadata))
    ext = MetadataExt(ExtBase(C.sizeof(MetadataExt), 1, None), C.pointer(md))
    f = CallFrame(struct_size=C.sizeof(CallFrame), ext=C.cast(C.pointer(ext), C.c_void_p))
    handler.fdl_xla_handler.restype = C.c_void_p
    assert handler.fdl_xla_handler(C.byref(f)) is None
    assert (md.version.major, md.version.minor) >= (0, 1) and md.traits == 0


def test_handler_launches_a_map_over_the_call_frames_buffers(handler, mul_lib):
    m = mul_lib.map("mul_f32_f32")
    a, out = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    put(a, list(range(8)))
    put(out, [0.0] * 8)
    fr = Frame([(a.address, F32, (2, 4))], [(out.address, F32, (8,))],
               map_attrs(m, "as", 8, [1, 0, 0, 0, 0, 0, 2, 0, 4], struct.pack("<f", 3.0)))
    assert fr.call(handler) is None, fr.errors
    assert floats(out) == [3.0 * i for i in range(8)]


@pytest.mark.parametrize("change, message", [
    (dict(fdl_kind=None), "attribute fdl_kind is missing"),
    (dict(fdl_kind=np.int32(7)), "attribute fdl_kind is 7, not 0 (kernel), 1 (map) or 2"),
    (dict(fdl_target=np.uint64(0)), "attribute fdl_target is 0"),
    (dict(fdl_kind=1.5), "attribute fdl_kind has data type 11, not an integer"),
    (dict(fdl_plan=np.array([1, 0, 0, 0, 3, 0, 2, 0, 4], np.int64)),
     "argument 2: operand 3, but the call has 1"),
    (dict(fdl_plan=np.array([1, 0, 0, 0, 0, 0, 2, 0, 8], np.int64)),
     "argument 3: scalar bytes 0..8, but fdl_scalars has 4"),
    (dict(fdl_plan=np.array([1, 0, 0, 9, 0, 0], np.int64)),
     "argument 2: kind 9, not 0 (operand), 1 (result) or 2 (scalar)"),
    (dict(fdl_plan=np.array([1, 0], np.int64)), "attribute fdl_plan has 2 values"),
    (dict(fdl_geometry=np.array([8, 1], np.int64)),
     "attribute fdl_geometry has 2 values, but a map takes 1"),
    (dict(fdl_scalars=np.array([1, 2], np.int64)),
     "attribute fdl_scalars is not an array of data type 6"),
    (dict(fdl_geometry=np.array([16], np.int64)), "has 8 elements (32 bytes), but n is 16"),
])
def test_handler_refusals(handler, mul_lib, change, message):
    m = mul_lib.map("mul_f32_f32")
    a, out = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    fr = Frame([(a.address, F32, (8,))], [(out.address, F32, (8,))],
               map_attrs(m, "as", 8, [1, 0, 0, 0, 0, 0, 2, 0, 4], struct.pack("<f", 3.0),
                         **change))
    assert fr.call(handler) is not None
    assert len(fr.errors) == 1 and message in fr.errors[0], fr.errors
    assert "\n" not in fr.errors[0]


def test_call_checks_before_tracing(mul_lib):
    m = mul_lib.map("mul_f32_f32")
    with pytest.raises(fdlink.InvalidArgumentError, match="modes 'ss'"):
        fj.map_call(m, "ss")
    f = fj.map_call(m, "as")
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 1 is int32, but parameter 1 "
                       "is float32"):
        f(np.zeros(4, np.int32), 2.0)
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 2: a scalar argument must be "
                       "a Python number"):
        jax.jit(f)(np.zeros(4, np.float32), jax.numpy.float32(2.0))


# ---- on a GPU --------------------------------------------------------------------------------

gpu = pytest.mark.gpu


@pytest.fixture(scope="module")
def jnp():
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("jax has no GPU")
    return jax.numpy


@gpu
def test_map_inside_jit_equals_numpy(jnp, mul_lib):
    mul = fj.map_call(mul_lib.map("mul_f32_f32"), "as")
    mul2 = fj.map_call(mul_lib.map("mul_f32_f32"), "aa")
    f = jax.jit(lambda x, y: jnp.cos(mul2(mul(jnp.sin(x), 3.0), y)) + 1.0)
    xh = np.linspace(-2, 2, 10007, dtype=np.float32)
    yh = np.linspace(1, 3, 10007, dtype=np.float32)
    got = np.asarray(f(jnp.asarray(xh), jnp.asarray(yh)))
    np.testing.assert_allclose(got, np.cos(np.sin(xh) * 3.0 * yh) + 1.0, rtol=1e-5, atol=1e-5)
    # vmap, sequentially
    xb = np.stack([xh, 2 * xh])
    got = np.asarray(jax.jit(jax.vmap(lambda x: mul(x, 3.0)))(jnp.asarray(xb)))
    np.testing.assert_allclose(got, xb * 3.0, rtol=1e-6)
    fj.check()


@gpu
def test_kernel_elementwise_reduction_inside_jit(jnp, saxpy_module):
    saxpy = fj.kernel_call(saxpy_module.kernel("saxpy"), "float *y, const float *x, float a, "
                           "int n", inouts=["y"], grid=lambda x, **_: (x.size + 255) // 256,
                           block=256)
    ew = fdlink.kernels.elementwise("float a, const float *x, float *y", "y[i] = a * x[i]")
    scale = fj.elementwise_call(ew, outputs={"y": "x"})
    r = fdlink.kernels.reduction("float32", "const float *x", "x[i] * x[i]", "sum")
    sumsq = fj.reduction_call(r)
    n = 5000
    xh = np.arange(n, dtype=np.float32) / n

    @jax.jit
    def f(x):
        y = saxpy(jnp.ones_like(x), x * 2.0, 0.5, n)    # y = 1 + x
        z = scale(3.0, y)                              # 3 (1 + x)
        return z, sumsq(z) / n

    z, s = f(jnp.asarray(xh))
    want = 3 * (1 + xh)
    np.testing.assert_allclose(np.asarray(z), want, rtol=1e-6)
    assert float(s) == pytest.approx(float(np.mean(want.astype(np.float64) ** 2)), rel=1e-4)
    fj.check()


@gpu
def test_device_status_surfaces_from_the_handler(jnp, arch):
    lib = fdlink.Library("chk: float32(float32)\n", [
        'extern "C" __device__ int chk(float *r, float a) { if (a == 17.0f) return 3; '
        '*r = a; return 0; }\n'], arch=arch)
    checked = fj.map_call(lib.map("chk"), "a", check=True)
    x = jnp.arange(64, dtype=jnp.float32)
    with pytest.raises(Exception, match=r"chk.*status 3 at index 17"):
        jax.block_until_ready(jax.jit(checked)(x))
    unchecked = fj.map_call(lib.map("chk"), "a")
    jax.block_until_ready(jax.jit(unchecked)(x))
    with pytest.raises(fdlink.DeviceStatusError, match="index 17"):
        fj.check()
