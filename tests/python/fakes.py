"""Array-like objects for the CPU tests: CUDA array interface dicts of any shape (hostile ones
included) and DLPack producers, over fdlink Buffers (the mock driver's memory)."""

import struct


class CAI:
    """An object with the given __cuda_array_interface__ (a dict, or anything)."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def cai_of(buf, **over):
    """The interface of @buf (a 1-d fdlink Buffer), with keys replaced or removed (None)."""
    d = dict(buf.__cuda_array_interface__)
    for k, v in over.items():
        if v is ...:
            d.pop(k, None)
        else:
            d[k] = v
    return CAI(d)


class RaisingCAI:
    """An object whose __cuda_array_interface__ property raises."""

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("the producer refuses")


class DL:
    """A DLPack producer over @buf, with a device and a capsule that can be made wrong."""

    def __init__(self, buf, device=None, capsule=None):
        self.buf = buf
        self.device = device if device is not None else buf.__dlpack_device__()
        self.capsule = capsule
        self.calls = []

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append(stream)
        if self.capsule is not None:
            return self.capsule
        return self.buf.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.device


def floats(buf):
    n = buf.nbytes // 4
    return list(struct.unpack(f"{n}f", buf.read()))


def put(buf, values):
    buf.write(struct.pack(f"{len(values)}f", *values))


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class Tensor:
    """PyTorch's tensor as fdlink's fast path reads it (data_ptr(), is_contiguous(), ...), over
    an fdlink Buffer; any property can be made wrong."""

    __module__ = "torch"

    def __init__(self, buf, dtype="float32", is_cuda=True, requires_grad=False, contiguous=True,
                 device=0, itemsize=4):
        self.buf, self.is_cuda, self.requires_grad = buf, is_cuda, requires_grad
        self.dtype, self._contiguous, self._device = _Dtype(dtype), contiguous, device
        self._itemsize = itemsize

    def is_contiguous(self):
        return self._contiguous

    def get_device(self):
        return self._device

    def numel(self):
        return self.buf.nbytes // self._itemsize

    def element_size(self):
        return self._itemsize

    def data_ptr(self):
        return self.buf.address

    @property
    def nbytes(self):
        return self.numel() * self._itemsize


class OldTensor(Tensor):
    """A PyTorch before Tensor.nbytes (numel() * element_size() is read instead)."""

    nbytes = property(lambda self: (_ for _ in ()).throw(AttributeError("nbytes")))


class _Flags:
    def __init__(self, c):
        self.c_contiguous = c


class _Mem:
    def __init__(self, ptr, device_id=None):
        self.ptr = ptr
        if device_id is not None:
            self.device_id = device_id


class _Dev:
    def __init__(self, i):
        self.id = i


class _NpDtype:
    def __init__(self, s):
        self.str, self.itemsize = s, int(s[2:])


class ndarray:  # noqa: N801 (CuPy's name)
    """CuPy's array as fdlink's fast path reads it, over an fdlink Buffer."""

    __module__ = "cupy"

    def __init__(self, buf, typestr="<f4", contiguous=True, device=0, legacy=False):
        self.flags, self.device = _Flags(contiguous), _Dev(device)
        self.dtype, self.nbytes = _NpDtype(typestr), buf.nbytes
        self.size = buf.nbytes // self.dtype.itemsize
        # what fdlink reads first (CuPy's cdef attributes); legacy: only the public flags and
        # device, as in a CuPy without them
        self.data = _Mem(buf.address, None if legacy else device)
        if not legacy:
            self._c_contiguous = contiguous
