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
