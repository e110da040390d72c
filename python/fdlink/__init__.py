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

from . import _fdlink
from ._core import (KINDS, Buffer, Declaration, Device, Elementwise, FatModule, Kernel, Kernels,
                    Library, Map, Module, prewarm, PreparedLaunch, Reduction, Source, Stream, cache, compile, device,
                    device_count, devices, doctor, empty, include_dir, cmake_dir, link, stream, to_device, to_host,
                    versions)
from ._errors import (ABIError, CudaError, DeviceStatusError, Error, FileError,
                      InvalidArgumentError, KindError, LibraryNotFoundError, LimitError,
                      LinkError, NoDeviceError, NotFoundError, OutOfMemoryError, ParseError,
                      VerifyError)

__version__: str = _fdlink.version

#: Generated kernels without a declaration file: ``fdlink.kernels.elementwise(args, op)``.
kernels = Kernels()

__all__ = [
    "ABIError", "Buffer", "CudaError", "Declaration", "Device", "DeviceStatusError",
    "Elementwise", "Error", "FatModule", "FileError", "InvalidArgumentError", "KINDS", "Kernel", "KindError",
    "Library", "LibraryNotFoundError", "LimitError", "LinkError", "Map", "Module", "NoDeviceError",
    "NotFoundError", "OutOfMemoryError", "ParseError", "PreparedLaunch", "Reduction", "Source",
    "Stream", "VerifyError", "cache", "compile", "device", "device_count", "devices", "doctor", "empty",
    "kernels", "include_dir", "cmake_dir", "link", "prewarm", "stream", "to_device", "to_host", "versions", "__version__",
]
