"""Hostile arguments: every one is an exception naming the argument, never a crash or a hang."""

import os
import subprocess
import sys

import pytest

import fdlink
from conftest import MOCK
from fakes import CAI, DL, RaisingCAI, cai_of

pytestmark = pytest.mark.mock


@pytest.fixture(scope="module")
def k(saxpy_module):
    return saxpy_module.kernel("saxpy")


@pytest.fixture()
def xy():
    return fdlink.empty(8, "f4"), fdlink.empty(8, "f4")


HOSTILE = [
    ("not a dict", lambda b: CAI([1, 2]), TypeError, "not a dict"),
    ("no shape", lambda b: cai_of(b, shape=...), ValueError, "lacks"),
    ("no data", lambda b: cai_of(b, data=...), ValueError, "lacks"),
    ("no version", lambda b: cai_of(b, version=...), ValueError, "version"),
    ("version a str", lambda b: cai_of(b, version="3"), ValueError, "version"),
    ("shape a list", lambda b: cai_of(b, shape=[8]), TypeError, "shape"),
    ("negative shape", lambda b: cai_of(b, shape=(-8,)), ValueError, "non-negative"),
    ("shape of floats", lambda b: cai_of(b, shape=(8.0,)), ValueError, "non-negative"),
    ("huge shape", lambda b: cai_of(b, shape=(1 << 62, 1 << 62)), ValueError, "absurd"),
    ("typestr int", lambda b: cai_of(b, typestr=4), ValueError, "type string"),
    ("typestr junk", lambda b: cai_of(b, typestr="<x"), ValueError, "type string"),
    ("typestr size 0", lambda b: cai_of(b, typestr="<f0"), ValueError, "type string"),
    ("data not a tuple", lambda b: cai_of(b, data=b.address), ValueError, "pointer, read_only"),
    ("pointer a str", lambda b: cai_of(b, data=("0x10", False)), ValueError, "pointer"),
    ("negative pointer", lambda b: cai_of(b, data=(-1, False)), ValueError, "pointer"),
    ("NULL pointer", lambda b: cai_of(b, data=(0, False)), ValueError, "NULL"),
    ("strides wrong length", lambda b: cai_of(b, strides=(4, 4)), ValueError, "strides"),
    ("strides not ints", lambda b: cai_of(b, strides=("4",)), ValueError, "strides"),
    ("non-contiguous", lambda b: cai_of(b, shape=(4,), strides=(8,)), ValueError,
     "not C-contiguous"),
    ("absurd strides", lambda b: cai_of(b, strides=(1 << 62,)), ValueError, "not C-contiguous"),
    ("masked", lambda b: cai_of(b, mask=object()), ValueError, "masked"),
    ("stream 0", lambda b: cai_of(b, stream=0), ValueError, "0 is not allowed"),
    ("stream a str", lambda b: cai_of(b, stream="s"), ValueError, "stream"),
]


@pytest.mark.parametrize("name,make,exc,match", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_cai(k, xy, name, make, exc, match):
    x, y = xy
    with pytest.raises(exc, match=match) as e:
        k[1, 8](y, make(x), 2.0, 8)
    assert "argument 2 of kernel 'saxpy'" in str(e.value)


def test_raising_property(k, xy):
    x, y = xy
    with pytest.raises(RuntimeError, match="the producer refuses"):
        k[1, 8](y, RaisingCAI(), 2.0, 8)

    class Grad(RaisingCAI):  # what PyTorch does for a tensor that requires grad
        requires_grad = True

    with pytest.raises(ValueError, match="argument 1 of kernel 'saxpy' is a tensor that "
                                         "requires grad; pass tensor.detach()"):
        k[1, 8](Grad(), x, 2.0, 8)


def test_unknown_pointer_is_an_error_not_a_crash():
    # memory the driver does not know: the kernel faults, which poisons the context for the
    # rest of the process (as on a GPU), so this runs in a process of its own
    code = """
import fdlink, conftest
from fakes import cai_of
lib = fdlink.Library(conftest.MUL_DECL, [conftest.MUL_CU], arch=fdlink.device().arch)
k = lib.link(conftest.SAXPY_CU).kernel("saxpy")
x, y = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
try:
    k.launch(1, 8, y, cai_of(x, data=(0xDEAD0000, False)), 2.0, 8, sync=True)
except fdlink.CudaError as e:
    print("CudaError", e.status, e.backend_code)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(__file__)] + sys.path))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(__file__), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("CudaError FDL_ECUDA"), out.stdout + out.stderr


def test_dlpack_wrong_device(k, xy):
    x, y = xy
    with pytest.raises(TypeError, match="host memory"):
        k[1, 8](y, DL(x, device=(1, 0)), 2.0, 8)
    with pytest.raises(ValueError, match="is on device 3"):
        k[1, 8](y, DL(x, device=(2, 3)), 2.0, 8)
    with pytest.raises(ValueError, match=r"__dlpack_device__\(\) gave"):
        k[1, 8](y, DL(x, device="cuda"), 2.0, 8)
    with pytest.raises(ValueError, match="not an unconsumed"):
        k[1, 8](y, DL(x, capsule=object()), 2.0, 8)


def test_dlpack_device_mismatch_inside_capsule(k, xy):
    x, y = xy
    cap = x.__dlpack__()

    class Liar(DL):
        def __dlpack_device__(self):
            return (13, 0)  # managed memory, but the tensor says CUDA

    with pytest.raises(ValueError, match="not the one __dlpack_device__ named"):
        k[1, 8](y, Liar(x, capsule=cap), 2.0, 8)
    assert "used_dltensor" in repr(cap)  # consumed, and its deleter called once


def test_numpy_host_array_refused(k, xy):
    np = pytest.importorskip("numpy")
    x, y = xy
    with pytest.raises(TypeError, match="argument 2 of kernel 'saxpy' is (a host array|in host memory)"):
        k[1, 8](y, np.zeros(8, np.float32), 2.0, 8)
    k[1, 8](y, x, np.float32(2.0), np.int32(8))  # NumPy scalars are converted when exact
    k[1, 8](y, x, 2.0, np.int64(8))
    with pytest.raises(ValueError, match="does not fit the parameter's 4 bytes"):
        k[1, 8](y, x, 2.0, np.int64(1 << 40))


def test_scalar_sizes(k, xy):
    x, y = xy
    with pytest.raises(ValueError, match="does not fit the parameter's 4 bytes"):
        k[1, 8](y, x, 2.0, 1 << 33)
    with pytest.raises(ValueError, match="does not fit"):
        k[1, 8](y, x, 2.0, -(1 << 40))
    with pytest.raises(ValueError, match="does not fit"):
        k[1, 8](y, 1 << 70, 2.0, 8)
    with pytest.raises(ValueError, match=r"is 3 bytes \(bytes\), but the parameter takes 4"):
        k[1, 8](y, x, b"abc", 8)
    with pytest.raises(TypeError, match="argument 3 of kernel 'saxpy' is a object"):
        k[1, 8](y, x, object(), 8)


def test_bad_geometry_and_streams(k, xy):
    x, y = xy
    with pytest.raises(TypeError, match="grid"):
        k["1", 8](y, x, 2.0, 8)
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        k[(1, 1, 1, 1), 8](y, x, 2.0, 8)
    with pytest.raises(ValueError, match="grid"):
        k[-1, 8](y, x, 2.0, 8)
    with pytest.raises(TypeError):
        k[1](y, x, 2.0, 8)
    if MOCK:  # a real driver may crash on a handle it cannot tell from a stream (its rule)
        with pytest.raises(fdlink.CudaError):
            fdlink.stream(0xBAD0)
    with pytest.raises(TypeError, match="bool"):
        fdlink.stream(True)


def test_freed_buffer(k, xy):
    x, y = xy
    x.free()
    with pytest.raises(ValueError, match="freed"):
        k[1, 8](y, x, 2.0, 8)
    with pytest.raises(ValueError, match="freed"):
        x.read()


def test_buffer_bounds():
    b = fdlink.empty(4, "f4")
    with pytest.raises(fdlink.InvalidArgumentError, match="exceeds buffer of 16 bytes"):
        b.write(b"\0" * 32)
    with pytest.raises(TypeError):
        b.write("text")
    with pytest.raises(ValueError):
        fdlink.empty(-1)
    with pytest.raises(ValueError):
        fdlink.device().alloc(7, "<f4")


def test_torch_and_cupy_fast_paths(saxpy_module, xy):
    from fakes import OldTensor, Tensor, floats, ndarray, put

    k = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, int n")
    x, y = xy
    put(x, list(range(8)))
    for T, legacy in ((Tensor, False), (OldTensor, True)):  # fast attributes, then the fallbacks
        put(y, [0.0] * 8)
        k[1, 8](T(y), ndarray(x, legacy=legacy), 2.0, 8)
        assert floats(y) == [2.0 * i for i in range(8)]
    put(y, [1.0] * 8)
    k[1, 8](ndarray(y, legacy=True), Tensor(x), 1.0, 8)
    assert floats(y) == [1.0 + i for i in range(8)]

    class NullTensor(Tensor):
        def data_ptr(self):
            return 0

    with pytest.raises(ValueError, match="saxpy' is a NULL pointer"):
        k[1, 8](y, NullTensor(x), 2.0, 8)
    for bad, exc, match in (
            (Tensor(x, is_cuda=False), TypeError, "host \\(CPU\\) memory"),
            (Tensor(x, requires_grad=True), ValueError, "requires grad"),
            (Tensor(x, contiguous=False), ValueError, "tensor.contiguous\\(\\)"),
            (Tensor(x, device=3), ValueError, "is on device 3"),
            (Tensor(x, dtype="float64", itemsize=8), TypeError, "type f8, but f4"),
            (OldTensor(x, dtype="float64", itemsize=8), TypeError, "type f8, but f4"),
            (ndarray(x, contiguous=False), ValueError, "ascontiguousarray"),
            (ndarray(x, contiguous=False, legacy=True), ValueError, "ascontiguousarray"),
            (ndarray(x, device=2), ValueError, "is on device 2"),
            (ndarray(x, device=2, legacy=True), ValueError, "is on device 2"),
            (ndarray(x, typestr="<i4"), TypeError, "type i4, but f4"),
            (ndarray(x, typestr="<f8"), TypeError, "type f8, but f4")):
        with pytest.raises(exc, match=match) as e:
            k[1, 8](y, bad, 2.0, 8)
        assert "argument 2 of kernel 'saxpy'" in str(e.value)

    class Raising(Tensor):
        def data_ptr(self):
            raise RuntimeError("no pointer today")

    with pytest.raises(RuntimeError, match="no pointer today"):
        k[1, 8](y, Raising(x), 2.0, 8)


def test_rebinding_keeps_only_the_current_arrays(saxpy_module):
    import gc
    import weakref

    k = saxpy_module.kernel("saxpy")
    x, y = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    p = k.prepare(1, 8, (y, x, 1.0, 8))
    refs = []
    for _ in range(50):
        b = fdlink.empty(8, "f4")
        refs.append(weakref.ref(b))
        p.set_arg(1, b)
        p()
        del b
    gc.collect()
    assert sum(r() is not None for r in refs) == 1  # only the one bound now is kept


def test_alloc_shape_must_fit():
    with pytest.raises(ValueError, match="does not fit"):
        fdlink.device().alloc(16, "<f4", (8,))
    with pytest.raises(ValueError, match="does not fit"):
        fdlink.device().alloc(16, "<f4", (-1,))
    with pytest.raises(TypeError, match="list or tuple"):
        fdlink.link('extern "C" __global__ void k() {}', arch="sm_90",
                    extra=(o for o in ["-O3"]))
