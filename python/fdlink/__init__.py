"""fdlink: foreign device functions for CUDA, declared, checked against compiled code, linked and
launched, from Python (docs/python.md).

    import fdlink
    lib = fdlink.Library("funcs.decl", ["funcs.cu"], arch="sm_90")
    mod = lib.link(r'''
        extern "C" __global__ void scale(float *y, const float *x, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            float r;
            if (i < n && mul_f32_f32(&r, x[i], 2.0f) == 0) y[i] = r;
        }''')
    mod.kernel("scale")[blocks, 256](y, x, n)          # any CUDA array: CuPy, PyTorch, JAX, Numba
    lib.map("mul_f32_f32")(out, a, 3.0)                # out[i] = mul_f32_f32(a[i], 3.0)

Errors are exceptions under :class:`fdlink.Error` carrying the C library's records.
"""

from __future__ import annotations

from . import _errors, _fdlink
from ._cache import cache, cmake_dir, doctor, include_dir, prewarm, versions
from ._device import (Buffer, Device, PreparedLaunch, Stream, device, device_count, devices, empty,
                      stream, to_device, to_host)
from ._errors import (ABIError, ArgumentTypeError, CudaError, DeviceStatusError, Error, FileError,
                      InvalidArgumentError, KindError, LibraryNotFoundError, LimitError,
                      LinkError, NoDeviceError, NotFoundError, OutOfMemoryError, ParseError,
                      VerifyError)
from ._gen import Elementwise, Map, Reduction
from ._kernel import FatModule, Kernel, Module
from ._library import KINDS, Kernels, Library, Source, compile, link
from ._types import Declaration, Param

# the extension's failures raised as fdlink.Error's subclasses, with their records (no call into
# the extension that can fail is made while the modules above are imported)
_fdlink._set_error_factory(_errors.from_record)

__version__: str = _fdlink.version

# The public classes named where users reach them, whichever file defines them: repr, help() and
# pickles (a Source, Declaration or Param sent to a worker process) say fdlink.Source, a name that
# stays when the package's files move.
for _cls in (Declaration, Elementwise, FatModule, Kernel, Kernels, Library, Map, Module, Param,
             Reduction, Source):
    _cls.__module__ = __name__
del _cls

#: Generated kernels without a declaration file: ``fdlink.kernels.elementwise(args, op)``.
kernels = Kernels()

__all__ = [
    "ABIError", "ArgumentTypeError", "Buffer", "CudaError", "Declaration", "Device", "DeviceStatusError",
    "Elementwise", "Error", "FatModule", "FileError", "InvalidArgumentError", "KINDS", "Kernel", "KindError",
    "Library", "LibraryNotFoundError", "LimitError", "LinkError", "Map", "Module", "NoDeviceError",
    "NotFoundError", "OutOfMemoryError", "Param", "ParseError", "PreparedLaunch", "Reduction", "Source",
    "Stream", "VerifyError", "cache", "compile", "device", "device_count", "devices", "doctor", "empty",
    "kernels", "include_dir", "cmake_dir", "link", "prewarm", "stream", "to_device", "to_host", "versions", "__version__",
]
