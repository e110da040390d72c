"""Parameter types from the code and arguments converted as C converts them to a prototype
(issue 38): kernel.params, ints for float parameters, floats refused for integer and pointer
ones, NumPy scalars converted when exact, structs of any size as their bytes, the argument count
always checked, and every refused argument an fdlink error naming it. The mock driver records
the parameter bytes of the last launch (mock_cuda_last_params), so the exact bytes packed are
checked, not only the kernels' results."""

import ctypes
import os
import struct
import subprocess
import sys

import pytest

import fdlink
from conftest import MOCK, SAXPY_CU
from fakes import cai_of, floats, put

pytestmark = pytest.mark.mock

FILL_CU = r'''
extern "C" __global__ void fill(unsigned *out, unsigned v, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = v;
}
'''

MIXED_CU = r'''
struct s24 { int a; int b; double c; long long d; };
extern "C" __global__ void params_mixed(unsigned long long *out, signed char a, double b,
                                        const void *p, s24 s, short h) {
    out[0] = (unsigned long long)(long long)a + (unsigned long long)b + (unsigned long long)p +
             (unsigned long long)s.a + (unsigned long long)h;
}
'''


class S24(ctypes.Structure):
    _fields_ = [("a", ctypes.c_int32), ("b", ctypes.c_int32), ("c", ctypes.c_double),
                ("d", ctypes.c_int64)]


def last_params():
    """The parameter bytes of the last launch, as the mock's kernel read them."""
    if not MOCK:
        pytest.skip("needs the mock driver's record of launches")
    lib = ctypes.CDLL(MOCK)
    lib.mock_cuda_last_params.restype = ctypes.c_size_t
    lib.mock_cuda_last_params.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(4096)
    n = lib.mock_cuda_last_params(buf, 4096)
    return buf.raw[:n]


@pytest.fixture(scope="module")
def saxpy(saxpy_module):
    return saxpy_module.kernel("saxpy")


@pytest.fixture(scope="module")
def fill(mul_lib):
    return mul_lib.link(FILL_CU).kernel("fill")


@pytest.fixture(scope="module")
def mixed(mul_lib):
    return mul_lib.link(MIXED_CU).kernel("params_mixed")


def _xy(n=4):
    x, y = fdlink.empty(n, "f4"), fdlink.empty(n, "f4")
    put(x, list(range(n)))
    put(y, [1.0] * n)
    return x, y


def test_params_from_the_code(saxpy, fill, mixed):
    ps = saxpy.params
    assert [(p.cls, p.size, p.source) for p in ps] == [
        ("unsigned", 8, "code"), ("unsigned", 8, "code"), ("float", 4, "code"),
        ("unsigned", 4, "code")]
    assert all(p.known for p in ps) and [p.index for p in ps] == [0, 1, 2, 3]
    assert [p.cls for p in fill.params] == ["unsigned"] * 3
    assert [(p.cls, p.size) for p in mixed.params] == [
        ("unsigned", 8), ("unsigned", 1), ("float", 8), ("unsigned", 8), ("bytes", 24),
        ("unsigned", 2)]  # nvcc writes .u8 and .u16 for signed char and short too


def test_params_from_a_signature(saxpy_module):
    k = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, int n")
    assert [(p.name, p.cls, p.size, p.source) for p in k.params] == [
        ("y", "pointer", 8, "signature"), ("x", "pointer", 8, "signature"),
        ("a", "float", 4, "signature"), ("n", "signed", 4, "signature")]


def test_params_from_ptx_and_from_a_cubin(saxpy_module):
    # a PTX image loaded as it is: classes from its .entry; the cubin alone: sizes only
    ptx = fdlink.link(SAXPY_CU.replace("mul_f32_f32(&r, a, x[i]) == 0", "(r = a * x[i], 1)"),
                      cuda_output="ptx", lto=False)
    src = ptx._link.input_data(0)
    assert src[1] == "ptx"
    m = fdlink.Module.load(src[0])
    assert [p.cls for p in m.kernel("saxpy").params] == ["unsigned", "unsigned", "float",
                                                        "unsigned"]
    c = fdlink.Module.load(saxpy_module.cubin)
    ps = c.kernel("saxpy").params
    assert [(p.cls, p.size, p.known) for p in ps] == [("unknown", 8, False), ("unknown", 8, False),
                                                      ("unknown", 4, False), ("unknown", 4, False)]


def test_an_int_for_a_float_parameter_is_that_float(saxpy):
    x, y = _xy()
    saxpy[1, 4](y, x, 2, 4)  # PyCUDA's pitfall: the int's bits as a float (2.8e-45)
    assert floats(y) == [1 + 2 * i for i in range(4)]
    assert last_params() == struct.pack("<QQfI", y.address, x.address, 2.0, 4)


def test_a_float_for_an_integer_parameter_is_refused(fill):
    out = fdlink.empty(4, "u4")
    with pytest.raises(TypeError, match="argument 2 of kernel 'fill' is a float, but the "
                                        "parameter is an integer or pointer of 4 bytes") as e:
        fill[1, 4](out, 7.0, 4)
    assert isinstance(e.value, fdlink.Error) and isinstance(e.value, fdlink.ArgumentTypeError)
    assert e.value.argument == 2 and e.value.symbol == "fill"
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 1 of kernel 'fill' is a float"):
        fill[1, 4](2.5, 7, 4)  # a pointer parameter (.u64)
    fill[1, 4](out, 7, 4)
    assert struct.unpack("4I", out.read()) == (7,) * 4
    fill[1, 4](out, -1, 4)  # .u32 is C's int and unsigned alike: -1 converts, as in C
    assert struct.unpack("4I", out.read()) == (0xFFFFFFFF,) * 4


def test_a_float_for_a_declared_pointer_is_refused(saxpy_module):
    k = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, int n")
    x, y = _xy()
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 1 of kernel 'saxpy' is a "
                                                       "float, but a pointer \\*f4 was declared"):
        k[1, 4](2.5, x, 2.0, 4)


def test_out_of_range_is_an_fdlink_value_error(saxpy_module, fill):
    out = fdlink.empty(4, "u4")
    for bad in (1 << 32, -(1 << 31) - 1, 1 << 70):
        with pytest.raises(fdlink.InvalidArgumentError, match="argument 3 of kernel 'fill'"):
            fill[1, 4](out, 7, bad)
    sk = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, unsigned n")
    x, y = _xy()
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 4 of kernel 'saxpy'") as e:
        sk[1, 4](y, x, 2.0, -1)  # declared unsigned: refused, never a bare OverflowError
    assert not isinstance(e.value, OverflowError)
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 3 of kernel 'saxpy'"):
        sk[1, 4](y, x, 1 << 2000, 4)  # too large for any float


def test_bool_only_where_an_integer_is(saxpy_module, saxpy, fill):
    x, y = _xy()
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 3 of kernel 'saxpy' is a bool"):
        saxpy[1, 4](y, x, True, 4)
    sk = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, int n")
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 1 of kernel 'saxpy' is a bool"):
        sk.prepare(1, 4, (True, x, 2.0, 4))  # a declared pointer (PTX's .u64 may be a size_t)
    out = fdlink.empty(4, "u4")
    fill[1, 4](out, True, 4)
    assert struct.unpack("4I", out.read()) == (1,) * 4


def test_numpy_scalars_convert_when_exact(saxpy, fill):
    np = pytest.importorskip("numpy")
    x, y = _xy()
    saxpy[1, 4](y, x, np.int32(2), np.int64(4))
    assert last_params() == struct.pack("<QQfI", y.address, x.address, 2.0, 4)
    saxpy[1, 4](y, x, np.float64(0.5), np.uint8(4))
    assert last_params()[16:] == struct.pack("<fI", 0.5, 4)
    with pytest.raises(fdlink.InvalidArgumentError, match="not exactly a float of 4 bytes"):
        saxpy[1, 4](y, x, np.float64(0.1), 4)
    with pytest.raises(fdlink.InvalidArgumentError, match="not exactly a float"):
        saxpy[1, 4](y, x, np.int64((1 << 24) + 1), 4)
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 4 of kernel 'saxpy' is a float"):
        saxpy[1, 4](y, x, 2.0, np.float32(4.0))
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 2 of kernel 'fill'"):
        fill[1, 4](fdlink.empty(4, "u4"), np.int64(1 << 40), 4)


def test_any_struct_as_its_bytes(mixed):
    np = pytest.importorskip("numpy")
    out = fdlink.empty(8, "u8")
    s = S24(-3, 4, 2.5, 1 << 40)
    raw = bytes(s)
    assert len(raw) == 24
    expect = struct.pack("<QbdQ", out.address, -2, 1.5, 0) + raw + struct.pack("<h", 7)
    dt = np.dtype([("a", "<i4"), ("b", "<i4"), ("c", "<f8"), ("d", "<i8")])
    rec = np.array([(-3, 4, 2.5, 1 << 40)], dtype=dt)
    for arg in (raw, bytearray(raw), memoryview(raw), s, rec[0], rec):
        mixed[1, 1](out, -2, 1.5, 0, arg, 7)
        assert last_params() == expect, type(arg)
    # a number for a struct: refused, naming it (it once copied 24 bytes from an 8-byte local)
    for bad in (5, True, 2.5):
        with pytest.raises(fdlink.ArgumentTypeError,
                           match="argument 5 of kernel 'params_mixed' is .*struct of 24 bytes"):
            mixed[1, 1](out, -2, 1.5, 0, bad, 7)
    with pytest.raises(fdlink.InvalidArgumentError,
                       match=r"argument 5 of kernel 'params_mixed' is 23 bytes \(bytes\), but "
                             "the parameter takes 24"):
        mixed[1, 1](out, -2, 1.5, 0, raw[:23], 7)
    with pytest.raises(fdlink.InvalidArgumentError, match="is 8 bytes"):
        mixed[1, 1](out, -2, 1.5, 0, bytes(8), 7)


def test_argument_count_is_always_checked(saxpy):
    x, y = _xy()
    with pytest.raises(fdlink.ArgumentTypeError, match="kernel saxpy takes 4 parameters, but 3"):
        saxpy[1, 4](y, x, 2.0)


def test_argument_count_without_the_drivers_parameter_info(tmp_path):
    # a driver older than CUDA 12.4 reports no parameters: the image's count is used
    if not MOCK:
        pytest.skip("needs the mock driver")
    code = (
        "import fdlink, conftest\n"
        "lib = fdlink.Library(conftest.MUL_DECL, [conftest.MUL_CU], arch='sm_90')\n"
        "k = lib.link(conftest.SAXPY_CU).kernel('saxpy')\n"
        "assert not k.attributes['params_known']\n"
        "x, y = fdlink.empty(4, 'f4'), fdlink.empty(4, 'f4')\n"
        "try:\n"
        "    k[1, 4](y, x, 2.0)\n"
        "except fdlink.ArgumentTypeError as e:\n"
        "    print('refused:', e)\n"
        "k[1, 4](y, x, 2, 4)\n"
        "print(k.params[2].cls)\n")
    env = dict(os.environ, MOCK_CUDA_DRIVER_VERSION="12030", FDLINK_LIBCUDA=MOCK,
               PYTHONPATH=os.pathsep.join([os.path.dirname(__file__)] + sys.path))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "refused: kernel saxpy takes 4 parameters, but 3 arguments were given" in r.stdout
    assert r.stdout.rstrip().endswith("float")


def test_prepared_launch_converts_the_same(saxpy, mixed):
    x, y = _xy()
    p = saxpy.prepare(1, 4, (y, x, 2, 4))
    p()
    assert last_params() == struct.pack("<QQfI", y.address, x.address, 2.0, 4)
    p.set_arg(2, 3)
    p()
    assert last_params()[16:20] == struct.pack("<f", 3.0)
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 4 of kernel 'saxpy' is a float"):
        p.set_arg(3, 2.5)
    out = fdlink.empty(8, "u8")
    raw = bytes(S24(1, 2, 3.0, 4))
    q = mixed.prepare(1, 1, (out, 1, 2.0, 0, raw, 3))
    q.set_arg(4, bytearray(bytes(S24(5, 6, 7.0, 8))))
    q()
    assert last_params()[25:49] == bytes(S24(5, 6, 7.0, 8))
    with pytest.raises(fdlink.ArgumentTypeError, match="struct of 24 bytes"):
        q.set_arg(4, 1)


def test_cache_hit_knows_the_classes(mul_lib):
    src = FILL_CU.replace("fill", "fill_again")
    a = mul_lib.link(src)
    b = mul_lib.link(src)
    assert b.info["cache"] != "miss"
    # the mock defines no kernel fill_again: the links' records are read
    assert b._link.kernel_params("fill_again") == a._link.kernel_params("fill_again") == \
        ((fdlink._fdlink.PARAM_UNSIGNED, 8), (fdlink._fdlink.PARAM_UNSIGNED, 4),
         (fdlink._fdlink.PARAM_UNSIGNED, 4))


@pytest.mark.parametrize("version", [0, 1, 99])
def test_cai_versions_outside_the_protocol(saxpy, version):
    x, y = _xy()
    with pytest.raises(fdlink.InvalidArgumentError, match=f"version {version} is not one"):
        saxpy[1, 4](cai_of(y, version=version), x, 2.0, 4)


@pytest.mark.parametrize("typestr,words", [(">f4", "big-endian"), ("<f4x", "not a type string"),
                                           ("<q4", "not a type string")])
def test_cai_typestrs_outside_the_protocol(saxpy, typestr, words):
    x, y = _xy()
    with pytest.raises(fdlink.InvalidArgumentError, match=words):
        saxpy[1, 4](cai_of(y, typestr=typestr), x, 2.0, 4)


def test_map_scalars_converted_as_declared(mul_lib):
    # mul_f32_f32: float32(float32, float32): an int is that float; a bool or a str is refused
    m = mul_lib.map("mul_f32_f32")
    a, out = fdlink.empty(4, "f4"), fdlink.empty(4, "f4")
    put(a, [0.0, 1.0, 2.0, 3.0])
    m(out, a, 3)
    assert floats(out) == [0.0, 3.0, 6.0, 9.0]
    with pytest.raises(fdlink.ArgumentTypeError, match="is a bool"):
        m(out, a, True)
    with pytest.raises(fdlink.ArgumentTypeError, match="cannot be packed"):
        m(out, a, "three")
    with pytest.raises(fdlink.InvalidArgumentError, match=r"argument 3 of map '\w*mul_f32_f32'"):
        m(out, a, 1 << 2000)


def test_a_link_without_declarations_knows_the_classes():
    # CUDA C compiled to LTO-IR and linked without declarations: the check's post-LTO PTX
    src = SAXPY_CU.replace("mul_f32_f32(&r, a, x[i]) == 0", "(r = a * x[i], 1)")
    m = fdlink.link(src)
    assert m.info["lto"]
    k = m.kernel("saxpy")
    assert [(p.cls, p.source) for p in k.params] == [
        ("unsigned", "code"), ("unsigned", "code"), ("float", "code"), ("unsigned", "code")]
    x, y = _xy()
    k[1, 4](y, x, 2, 4)
    assert floats(y) == [1 + 2 * i for i in range(4)]
