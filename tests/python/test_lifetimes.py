"""Buffers outlive the work that uses them, and DLPack as the standard says (issue 38).

Buffer.free() lets go of the Buffer's hold on its memory; a prepared launch, a launch being made
or an exported DLPack capsule that points into it keeps the memory until it lets go (the mock
driver counts live allocations: mock_cuda_live(0)). DLPack producers and consumers are checked
against dlpack.h 1.0 and the array API standard's __dlpack__(stream, max_version, dl_device,
copy), with producers written with ctypes (their deleters are Python code)."""

import ctypes
import gc
import struct

import pytest

import fdlink
from conftest import MOCK
from fakes import floats, put

pytestmark = pytest.mark.mock


def _live():
    """Device allocations alive in the mock driver (None on a real GPU), garbage collected."""
    gc.collect()
    return ctypes.CDLL(MOCK).mock_cuda_live(0) if MOCK else None


def _xy(n=8):
    x, y = fdlink.empty(n, "f4"), fdlink.empty(n, "f4")
    put(x, list(range(n)))
    put(y, [1.0] * n)
    return x, y


# ---- Buffer.free() ---------------------------------------------------------------------------


def test_free_under_a_prepared_launch_is_deferred(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    p = k.prepare(1, 8, (y, x, 2.0, 8))
    live = _live()
    x.free()  # the launch still points into x's memory: it stays
    assert _live() == live
    with pytest.raises(ValueError, match="freed"):
        x.read()
    with pytest.raises(ValueError, match="freed buffer"):
        k[1, 8](y, x, 2.0, 8)  # a new launch on the freed Buffer is refused
    p()  # runs on x's memory, still there
    assert floats(y) == [1 + 2 * i for i in range(8)]
    del p
    gc.collect()
    if live is not None:
        assert _live() == live - 1  # released with its last holder


def test_free_as_a_context_manager_is_deferred_too(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    _, y = _xy()
    with fdlink.empty(8, "f4") as x:
        put(x, [1.0] * 8)
        p = k.prepare(1, 8, (y, x, 1.0, 8))
    p()
    assert floats(y) == [2.0] * 8


def test_set_arg_on_a_freed_buffer(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    p = k.prepare(1, 8, (y, x, 2.0, 8))
    live = _live()
    x.free()
    z = fdlink.empty(8, "f4")
    put(z, [0.0] * 8)
    with pytest.raises(ValueError, match="freed buffer"):
        p.set_arg(1, x)
    p.set_arg(1, z)
    p()
    assert floats(y) == [1.0] * 8
    del p
    gc.collect()
    if live is not None:
        assert _live() == live  # x's memory went with the preparation; z's is z's


@pytest.mark.gpu
def test_free_with_work_queued_and_a_prepared_launch_on_a_real_gpu(saxpy_module):
    """On the GPU: a buffer freed while launches that read it are queued on a stream, and while a
    prepared launch holds it: the queued work and the next run compute on its memory."""
    k = saxpy_module.kernel("saxpy")
    n = 1 << 20
    x, y = fdlink.empty(n, "f4"), fdlink.empty(n, "f4")
    x.write(struct.pack("f", 1.0) * n)
    y.zero()
    s = fdlink.stream()
    p = k.prepare((n + 255) // 256, 256, (y, x, 2.0, n), stream=s)
    for _ in range(50):
        p()
    x.free()  # 50 launches reading x are queued, and p holds x
    p()
    s.synchronize()
    assert set(struct.unpack(f"{n}f", y.read())) == {102.0}
    del p
    gc.collect()  # x's memory released now, after the device's work
    z = fdlink.empty(n, "f4")
    z.write(struct.pack("f", 3.0) * n)
    k[(n + 255) // 256, 256](y, z, 1.0, n)
    fdlink.device().synchronize()
    assert set(struct.unpack(f"{n}f", y.read())) == {105.0}


def test_free_under_an_exported_capsule_is_deferred():
    b = fdlink.empty(4, "f4")
    live = _live()
    cap = b.__dlpack__()
    b.free()
    assert _live() == live
    del cap  # never consumed: the capsule's destructor runs the deleter
    gc.collect()
    if live is not None:
        assert _live() == live - 1


def test_free_twice_and_repr():
    b = fdlink.empty(4, "f4")
    b.free()
    b.free()
    assert "freed" in repr(b)
    with pytest.raises(BufferError, match="freed"):
        b.__dlpack__()


# ---- DLPack producers written with ctypes -----------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# prototypes of our own: ctypes.pythonapi's function objects are shared, and other modules set
# their argtypes
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))
_capsule_ptr = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object,
                                 ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
_NAMES = {True: b"dltensor_versioned", False: b"dltensor"}


class Producer:
    """A DLPack producer over an fdlink Buffer whose deleter is Python code (counted in
    .deleted). @versioned: answers max_version=(1, x) with a versioned capsule; @old: its
    __dlpack__ has no max_version parameter (a producer from before DLPack 1.0)."""

    def __init__(self, buf, *, versioned=True, flags=0, byte_offset=0, code=2, bits=32,
                 major=1, old=False):
        self.buf, self.versioned, self.flags, self.byte_offset = buf, versioned, flags, byte_offset
        self.code, self.bits, self.major = code, bits, major
        self.shape = (buf.nbytes * 8 // bits,)
        self.asked = []
        self.deleted = 0
        self._keep = []
        self._deleter = DELETER(self._delete)  # kept alive with the producer
        if old:
            self.__dlpack__ = self._old_dlpack

    def _delete(self, _ptr):
        self.deleted += 1

    def _tensor(self, t):
        shape = (ctypes.c_int64 * 1)(self.buf.nbytes * 8 // self.bits)
        self._keep.append(shape)
        t.data = self.buf.address
        t.device = DLDevice(2, fdlink.device().ordinal)
        t.ndim = 1
        t.dtype = DLDataType(self.code, self.bits, 1)
        t.shape = shape
        t.strides = None
        t.byte_offset = self.byte_offset

    def _capsule(self, versioned):
        if versioned:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(self.major, 0)
            m.flags = self.flags
        else:
            m = DLManagedTensor()
        m.deleter = self._deleter
        self._tensor(m.dl_tensor)
        self._keep.append(m)
        return _capsule_new(ctypes.addressof(m), _NAMES[versioned], None)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked.append(max_version)
        return self._capsule(self.versioned and max_version is not None and max_version[0] >= 1)

    def _old_dlpack(self, stream=None):
        self.asked.append("old")
        return self._capsule(False)

    def __dlpack_device__(self):
        return (2, fdlink.device().ordinal)


def test_versioned_capsules_asked_for_and_read(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    px = Producer(x)
    k[1, 8](y, px, 2.0, 8)
    assert px.asked == [(1, 0)]
    assert floats(y) == [1 + 2 * i for i in range(8)]
    gc.collect()
    assert px.deleted == 1  # once, when the launch let go


def test_old_producers_asked_again_without_max_version(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    px = Producer(x, old=True)
    k[1, 8](y, px, 2.0, 8)
    assert px.asked == ["old"]
    assert floats(y) == [1 + 2 * i for i in range(8)]
    gc.collect()
    assert px.deleted == 1


@pytest.mark.parametrize("versioned", [True, False])
def test_an_error_after_consumption_reaches_the_caller(saxpy_module, versioned):
    """The deleter (Python code) runs once, and the caller gets the real error, not
    SystemError."""
    k = saxpy_module.kernel("saxpy", "float *y, const float *x, float a, int n")
    x, y = _xy()
    px = Producer(x, versioned=versioned, code=0)  # int32 where float32 was declared
    with pytest.raises(TypeError, match="argument 2 of kernel 'saxpy'"):
        k[1, 8](y, px, 2.0, 8)
    gc.collect()
    assert px.deleted == 1
    p2 = Producer(x, versioned=versioned)  # the same in a preparation that fails later
    with pytest.raises(TypeError, match="argument 3"):
        k.prepare(1, 8, (y, p2, "two", 8))
    gc.collect()
    assert p2.deleted == 1


def test_a_version_2_capsule_is_refused_and_deleted(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    px = Producer(x, major=2)
    with pytest.raises(BufferError, match="version 2.0"):
        k[1, 8](y, px, 2.0, 8)
    gc.collect()
    assert px.deleted == 1


@pytest.mark.parametrize("offset", [2**64 - 4, 2**64 - 1])
def test_byte_offset_past_the_address_space_refused(saxpy_module, offset):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()
    px = Producer(x, byte_offset=offset)
    with pytest.raises(ValueError, match="byte_offset .* past the end of the address space"):
        k[1, 8](y, px, 2.0, 8)
    gc.collect()
    assert px.deleted == 1


def test_byte_offset_honoured(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy(16)
    px = Producer(x, byte_offset=16)  # x[4:], 12 elements
    k[1, 8](y, px, 1.0, 8)
    assert floats(y)[:8] == [1 + 4 + i for i in range(8)]


def test_read_only_output_refused_where_fdlink_writes(mul_lib):
    """A map writes its output: a read-only tensor there is refused; as an input it is read."""
    m = mul_lib.map("mul_f32_f32")
    a = fdlink.empty(4, "f4")
    put(a, [1.0, 2.0, 3.0, 4.0])
    out = fdlink.empty(4, "f4")
    ro = Producer(out, flags=1)
    with pytest.raises(BufferError, match="read-only"):
        m(ro, a, 2.0)
    gc.collect()
    assert ro.deleted == 1
    m(out, Producer(a, flags=1), 2.0)  # a read-only input
    assert floats(out) == [2.0, 4.0, 6.0, 8.0]


# ---- Buffer.__dlpack__ ------------------------------------------------------------------------


def _read_capsule(cap, versioned):
    p = _capsule_ptr(cap, _NAMES[versioned])
    return (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(p)


def test_buffer_exports_versioned_capsules_when_asked():
    b = fdlink.empty(6, "f4")
    cap = b.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    m = _read_capsule(cap, True)
    assert (m.version.major, m.version.minor) == (1, 0) and m.flags == 0
    assert m.dl_tensor.data == b.address and m.dl_tensor.shape[0] == 6
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits) == (2, 32)
    assert "dltensor_versioned" in repr(b.__dlpack__(max_version=(1, 3)))
    assert '"dltensor"' in repr(b.__dlpack__(max_version=(0, 8)))  # an older consumer
    assert '"dltensor"' in repr(b.__dlpack__())
    with pytest.raises(TypeError, match="max_version"):
        b.__dlpack__(max_version="1.0")


def test_buffer_dlpack_device_and_copy_per_the_standard():
    b = fdlink.empty(4, "f4")
    put(b, [1.0, 2.0, 3.0, 4.0])
    dev = fdlink.device().ordinal
    with pytest.raises(BufferError, match=r"dl_device \(1, 0\)"):
        b.__dlpack__(dl_device=(1, 0))  # host memory asked for
    with pytest.raises(BufferError):
        b.__dlpack__(dl_device=(2, dev + 1))
    assert "dltensor" in repr(b.__dlpack__(dl_device=(2, dev), copy=False))
    with pytest.raises(ValueError, match="stream"):
        b.__dlpack__(stream=0)
    for ok in (None, -1, 1, 2):
        assert "dltensor" in repr(b.__dlpack__(stream=ok))
    live = _live()
    cap = b.__dlpack__(max_version=(1, 0), copy=True)
    m = _read_capsule(cap, True)
    assert m.flags & 2  # IS_COPIED
    assert m.dl_tensor.data != b.address
    if live is not None:
        assert _live() == live + 1
    raw = (ctypes.c_float * 4).from_address(m.dl_tensor.data) if MOCK else None
    if raw is not None:  # the mock's device memory is host memory
        assert list(raw) == [1.0, 2.0, 3.0, 4.0]
    del cap, m, raw
    if live is not None:
        assert _live() == live


def test_versioned_export_consumed_by_fdlink(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    x, y = _xy()

    class Wrap:
        def __init__(self, b):
            self.b, self.asked = b, []

        def __dlpack__(self, **kw):
            self.asked.append(kw.get("max_version"))
            return self.b.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.b.__dlpack_device__()

    w = Wrap(x)
    k[1, 8](y, w, 2.0, 8)
    assert w.asked == [(1, 0)]
    assert floats(y) == [1 + 2 * i for i in range(8)]

