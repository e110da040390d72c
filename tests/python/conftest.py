"""Fixtures of fdlink's pytest suite (tests/python, docs/python.md).

Drivers: with FDLINK_PYTEST_MOCK set to the mock driver (tests/gpu/mock, built as
libfdlink_mock_cuda.so), the whole session runs against it (FDLINK_LIBCUDA), so that devices,
buffers, launches, statuses and errors are tested on a machine without a GPU; tests marked gpu
then skip. Without it, a real driver and GPU are used where present; tests that need one skip
cleanly without. The link cache goes to a temporary directory.
"""

import importlib
import os
import pathlib
import tempfile

import pytest

try:  # before numba is imported (by any test module)
    import numpy

    # numba-cuda 0.30.4 (numba_cuda/np/arrayobj.py) refers to numpy.row_stack, which NumPy 2.5
    # removed (deprecated since 2.0 as an alias of vstack): without it no @cuda.jit kernel
    # compiles. A test-suite shim only; the fdlink package never patches NumPy.
    if not hasattr(numpy, "row_stack"):
        numpy.row_stack = numpy.vstack
except ImportError:
    pass

MOCK = os.environ.get("FDLINK_PYTEST_MOCK")
if MOCK:
    os.environ["FDLINK_LIBCUDA"] = MOCK  # before fdlink loads any driver
os.environ.setdefault("FDLINK_CACHE_DIR", tempfile.mkdtemp(prefix="fdlink-pytest-cache-"))

import fdlink  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parent.parent / "data"


def _have_device() -> bool:
    try:
        return fdlink.device_count() > 0
    except fdlink.Error as e:
        if MOCK:  # the mock was asked for: a driver that does not load is a failure, not a skip
            raise RuntimeError(f"the mock driver {MOCK} does not load: {e}") from e
        return False


HAVE_DEVICE = _have_device()
REAL_GPU = HAVE_DEVICE and not MOCK


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "mock" in item.keywords and not HAVE_DEVICE:
            item.add_marker(pytest.mark.skip(reason="no driver: set FDLINK_PYTEST_MOCK to the "
                                             "mock driver, or run on a GPU host"))
        if "gpu" in item.keywords and not REAL_GPU:
            item.add_marker(pytest.mark.skip(reason="needs a real GPU" +
                                             (" (the mock driver is in use)" if MOCK else "")))
        for lib in ("cupy", "torch", "numba", "jax"):
            if lib in item.keywords:
                try:
                    if lib == "numba":  # numba-cuda, or numba-cuda-mlir (fdlink.numba's choice)
                        import fdlink.numba
                        fdlink.numba._cuda()
                    else:
                        importlib.import_module(lib)
                except Exception:
                    item.add_marker(pytest.mark.skip(reason=f"{lib} is not installed"))


@pytest.fixture(scope="session")
def arch() -> str:
    return fdlink.device().arch if HAVE_DEVICE else "sm_90"


MUL_DECL = "mul_f32_f32: float32(float32, float32)\n"
MUL_CU = ('extern "C" __device__ int mul_f32_f32(float *r, float a, float b) '
          '{ *r = a * b; return 0; }\n')
SAXPY_CU = r'''
extern "C" __global__ void saxpy(float *y, const float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n && mul_f32_f32(&r, a, x[i]) == 0) y[i] = r + y[i];
}
'''


@pytest.fixture(scope="session")
def mul_lib(arch):
    return fdlink.Library(MUL_DECL, [MUL_CU], arch=arch)


@pytest.fixture(scope="session")
def saxpy_module(mul_lib):
    return mul_lib.link(SAXPY_CU)
