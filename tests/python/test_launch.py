"""Devices, buffers, launches, prepared launches, streams and device statuses, through a driver:
the mock driver of tests/gpu/mock on a machine without a GPU (FDLINK_PYTEST_MOCK), a real one on
a GPU host. The mock runs host versions of the kernels of tests/gpu/src by name (saxpy,
sqrt_all, ...), so results are checked here too."""

import pickle
import struct

import pytest

import fdlink
from conftest import DATA
from fakes import DL, cai_of, floats, put

pytestmark = pytest.mark.mock


def test_devices_listed():
    ds = fdlink.devices()
    assert ds and ds[0]["ordinal"] == 0 and ds[0]["arch"].startswith("sm_")
    assert fdlink.device().info["max_threads_per_block"] >= 1024


def test_buffer_protocols():
    b = fdlink.empty((2, 3), "float32")
    cai = b.__cuda_array_interface__
    assert cai["shape"] == (2, 3) and cai["typestr"] == "<f4" and cai["version"] == 3
    assert cai["data"][0] == b.address != 0
    assert b.__dlpack_device__() == (2, fdlink.device().ordinal)
    cap = b.__dlpack__()
    assert "dltensor" in repr(cap)
    del cap  # an unconsumed capsule frees its tensor (and its reference to b)
    b.write(struct.pack("6f", *range(6)))
    assert floats(b) == [0, 1, 2, 3, 4, 5]


def _xy(n=8):
    x, y = fdlink.empty(n, "f4"), fdlink.empty(n, "f4")
    put(x, list(range(n)))
    put(y, [1.0] * n)
    return x, y


def test_launch_numba_and_pycuda_styles(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    k[1, 8](y, x, 2.0, 8)
    assert floats(y) == [1 + 2 * i for i in range(8)]
    k(y, x, 1.0, 8, grid=(1,), block=(8, 1, 1))
    assert floats(y) == [1 + 3 * i for i in range(8)]
    k.launch(1, 8, y, x, 1.0, 8, sync=True)
    assert floats(y) == [1 + 4 * i for i in range(8)]


def test_array_protocols_as_arguments(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    k[1, 8](cai_of(y), DL(x), 2.0, 8)          # CAI v3 and DLPack
    k[1, 8](cai_of(y, version=2, stream=...), x.address, 2.0, 8)  # CAI v2, a raw pointer
    assert floats(y) == [1 + 4 * i for i in range(8)]


def test_dlpack_capsule_consumed_and_freed(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    d = DL(x)
    k[1, 8](y, d, 2.0, 8)
    assert d.calls == [1]  # the consumer asked for the legacy default stream's order
    cap = x.__dlpack__()
    k[1, 8](y, DL(x, capsule=cap), 2.0, 8)
    assert "used_dltensor" in repr(cap)
    with pytest.raises(ValueError, match="unconsumed 'dltensor'"):
        k[1, 8](y, DL(x, capsule=cap), 2.0, 8)


def test_prepared_launch(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    p = k.prepare(1, 8, (y, x, 2.0, 8))
    assert isinstance(p, fdlink.PreparedLaunch)
    p()
    p()
    assert floats(y) == [1 + 4 * i for i in range(8)]
    p.set_arg(2, 0.5)
    p()
    assert floats(y) == [1 + 4.5 * i for i in range(8)]
    with pytest.raises(TypeError):
        p(1)
    with pytest.raises(ValueError, match="parameter"):
        p.set_arg(3, 1 << 40)
    with pytest.raises(IndexError):
        p.set_arg(9, 1)
    # a new geometry (checked as at preparation) and a new stream for the next runs
    put(y, [1.0] * 8)
    p.set_arg(2, 1.0)
    p.set_geometry(1, 4)
    p()
    assert floats(y) == [1 + i if i < 4 else 1.0 for i in range(8)]
    with pytest.raises(fdlink.InvalidArgumentError, match="grid.x is 0"):
        p.set_geometry(0, 4)
    s = fdlink.stream()
    p.set_stream(s)
    p.set_geometry((1, 1, 1), (8, 1, 1), 0)
    p()
    s.synchronize()
    p.set_stream(s.handle)  # a raw handle, wrapped
    p()
    p.set_stream(None)
    p()
    assert floats(y) == [1 + 4 * i if i < 4 else 1.0 + 3 * i for i in range(8)]
    with pytest.raises(TypeError, match="not a stream"):
        p.set_stream("s")


def test_declared_types_checked(saxpy_module):
    k = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, int n")
    assert k.types == ("*f4", "*f4", "f4", "i4")
    x, y = _xy()
    k[1, 8](y, x, 2, 8)  # an int where float was declared is packed as float32
    assert floats(y) == [1 + 2 * i for i in range(8)]
    wrong = fdlink.empty(8, "i4")
    with pytest.raises(TypeError, match="argument 2 of kernel 'saxpy' has elements of type i4, "
                                        "but f4 was declared"):
        k[1, 8](y, wrong, 2.0, 8)
    with pytest.raises(TypeError, match="a float where i4 was declared"):
        k[1, 8](y, x, 2.0, 8.0)


def test_streams(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    s = fdlink.stream()
    assert s.owned and s.handle != 0 and s.__cuda_stream__() == (0, s.handle)
    k[1, 8, s](y, x, 2.0, 8)
    s.synchronize()
    w = fdlink.stream(s.handle)     # another library's stream, by handle
    assert not w.owned and w.handle == s.handle
    k[1, 8](y, x, 2.0, 8, stream=w)
    class Foreign:                  # cuda.core's protocol
        def __cuda_stream__(self):
            return (0, s.handle)
    p = k.prepare(1, 8, (y, x, 2.0, 8), stream=Foreign())
    p()
    s.synchronize()
    k[1, 8, 1](y, x, 2.0, 8)        # 1: the legacy default stream
    assert floats(y) == [1 + 8 * i for i in range(8)]
    with pytest.raises(TypeError, match="not a stream"):
        fdlink.stream(object())

    class NumbaLike:  # Numba's Stream: .handle a ctypes-like object, or an int()-able CUstream
        class _H:
            def __init__(self, v):
                self.value = v
        def __init__(self, v):
            self.handle = self._H(v)
    assert fdlink.stream(NumbaLike(s.handle)).handle == s.handle
    k[1, 8](y, x, 0.0, 8, stream=NumbaLike(None))  # the default stream


def test_cai_stream_honoured(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    s = fdlink.stream()
    k[1, 8](cai_of(y, stream=s.handle), cai_of(x, stream=1), 2.0, 8)
    assert floats(y) == [1 + 2 * i for i in range(8)]
    with pytest.raises(ValueError, match="0 is not allowed"):
        k[1, 8](cai_of(y, stream=0), x, 2.0, 8)


def test_launch_checks_are_the_c_librarys(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    with pytest.raises(fdlink.InvalidArgumentError) as e:
        k[(1, 0), 8](y, x, 2.0, 8)
    assert str(e.value).endswith("grid.y is 0 in the launch of kernel 'saxpy' (every dimension "
                                 "must be at least 1)")
    assert e.value.symbol == "saxpy"
    with pytest.raises(fdlink.InvalidArgumentError, match="exceeds"):
        k[1, 2048](y, x, 2.0, 8)
    with pytest.raises(TypeError, match="kernel saxpy takes 4 parameters, but 3 arguments"):
        k[1, 8](y, x, 2.0)


def test_kernel_not_found(saxpy_module):
    with pytest.raises(fdlink.NotFoundError) as e:
        saxpy_module.kernel("nope")
    assert "saxpy" in str(e.value) and isinstance(e.value, LookupError)


def test_device_status_error(arch):
    inc = fdlink.include_dir() or str(DATA.parent.parent / "device" / "include")
    lib = fdlink.Library(DATA / "run" / "safe_sqrt.decl", [DATA / "run" / "safe_sqrt.cu"],
                         arch=arch, include_dirs=[inc])
    mod = lib.link(r"""
#include <fdlink/device.h>
extern "C" __global__ void sqrt_all(float *out, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n && FDL_CALL(safe_sqrt, &r, in[i]) == 0) out[i] = r;
}""")
    k = mod.kernel("sqrt_all")
    inp, out = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    put(inp, [4.0, 9.0, -1.0, 16.0, -4.0, 0.0, 1.0, 25.0])
    out.zero()
    k[1, 8](out, inp, 8)
    with pytest.raises(fdlink.DeviceStatusError) as e:
        mod.check_status()
    err = e.value
    assert err.function == "safe_sqrt" and err.device_status == 1 == err.backend_code
    assert err.block == (0, 0, 0) and err.thread in ((2, 0, 0), (4, 0, 0))
    assert err.count == 2
    assert floats(out) == [2.0, 3.0, 0.0, 4.0, 0.0, 0.0, 1.0, 5.0]
    mod.check_status()  # the record was read and cleared
    with pytest.raises(fdlink.DeviceStatusError):
        k[1, 8](out, inp, 8, sync=True)  # a synchronous launch reports it itself
    # the place and the count are fields of the C record (not read out of the message), and
    # travel in a pickle
    inp, out = fdlink.empty(256, "f4"), fdlink.empty(256, "f4")
    vals = [float(i) for i in range(256)]
    vals[3 * 64 + 17] = -1.0  # block (3,0,0) thread (17,0,0) of 64-thread blocks
    put(inp, vals)
    with pytest.raises(fdlink.DeviceStatusError) as e:
        k[4, 64](out, inp, 256, sync=True)
    err = e.value
    assert (err.block, err.thread, err.count, err.index) == ((3, 0, 0), (17, 0, 0), 1, None)
    assert (err.record["block"], err.record["thread"], err.record["count"]) == \
        ((3, 0, 0), (17, 0, 0), 1)
    assert "index" not in err.record and "at block (3,0,0) thread (17,0,0)" in err.message
    err2 = pickle.loads(pickle.dumps(err))
    assert (err2.block, err2.thread, err2.count, err2.device_status) == ((3, 0, 0), (17, 0, 0), 1, 1)


def test_cooperative_flag(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    k[1, 8](y, x, 2.0, 8, cooperative=True)
    k[1, 8](y, x, 2.0, 8, cooperative=False)
    assert floats(y) == [1 + 4 * i for i in range(8)]


def test_reprs_and_context_manager():
    d = fdlink.device()
    assert repr(d).startswith(f"<fdlink.Device {d.ordinal}: ") and d.arch in repr(d)
    with fdlink.empty((2, 3), "f4") as b:
        assert repr(b).startswith("<fdlink.Buffer <f4 (2, 3), 24 bytes at 0x")
    assert repr(b) == "<fdlink.Buffer (freed)>"
    assert "owned" in repr(fdlink.stream())


def test_threads_share_a_device(saxpy_module, mul_lib):
    # launches from several threads on one device family, and links meanwhile (which release
    # the GIL): every result right, no error
    import threading

    k = saxpy_module.kernel("saxpy")
    errors = []

    def launcher(seed):
        try:
            x, y = _xy()
            for _ in range(200):
                k[1, 8](y, x, 1.0, 8)
            fdlink.device().synchronize()
            assert floats(y) == [1 + 200 * i for i in range(8)]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def linker():
        try:
            for i in range(3):
                mul_lib.link(f"// {i}\n" + 'extern "C" __global__ void k%d(float *y) {}' % i)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=launcher, args=(i,)) for i in range(4)]
    ts.append(threading.Thread(target=linker))
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_modules_are_freed(mul_lib):
    # a module used with kernel[grid, block] is freed when the program lets go of it
    import gc
    import weakref

    mod = mul_lib.link('extern "C" __global__ void saxpy(float *y, const float *x, float a, '
                       'int n) {}\n// freed')
    k = mod.kernel("saxpy")
    x, y = _xy()
    k[1, 8](y, x, 1.0, 8)
    k[1, 8](y, x, 1.0, 8, stream=fdlink.stream())
    ref = weakref.ref(mod)
    del mod, k
    gc.collect()
    assert ref() is None
