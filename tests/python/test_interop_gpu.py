"""Interop on a GPU host (issue 31): the same kernel fed CuPy arrays, PyTorch tensors, Numba device
arrays and JAX arrays (through DLPack), every result compared with NumPy's exactly; launches
ordered after a long kernel already queued on the other library's stream (a kernel that is slow
on purpose writes the input the fdlink kernel reads, so a launch that is not ordered after it
reads stale zeros and fails); host arrays refused.

The ordering tests do not depend on speed for their verdict: a correct ordering passes however
long the first kernel takes; only a broken one can read the input before it is written.
"""

import pytest

import fdlink
from conftest import MUL_CU, MUL_DECL

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.gpu

N = 300_007
SCALE_CU = r'''
extern "C" __global__ void scale3(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n && mul_f32_f32(&r, x[i], 3.0f) == 0)
        y[i] = r;
}
'''
# a kernel that spins for `cycles` clock ticks, then writes x[i] = (i % 1000) - 500
SLOW_WRITE_CU = r'''
extern "C" __global__ void slow_write(float *x, int n, long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = (float)(i % 1000) - 500.0f;
}
'''
SPIN_CYCLES = 400_000_000  # about 0.2 s at 2 GHz: a long kernel, whatever the verdict


def _grid(n=N, block=256):
    return ((n + block - 1) // block, block)


def _input(n=N):
    return (np.arange(n) % 1000).astype(np.float32) - np.float32(500.0)


def _expected(x):
    return x * np.float32(3.0)


@pytest.fixture(scope="module")
def lib():
    return fdlink.Library(MUL_DECL, [MUL_CU])


@pytest.fixture(scope="module")
def mod(lib):
    return lib.link(SCALE_CU, SLOW_WRITE_CU)


@pytest.fixture(scope="module")
def scale3(mod):
    return mod.kernel("scale3", "float *y, const float *x, int n")


@pytest.fixture(scope="module")
def slow_write(mod):
    return mod.kernel("slow_write", "float *x, int n, int64 cycles")


@pytest.mark.cupy
def test_cupy_arrays(scale3, lib):
    import cupy as cp

    x = _input()
    cx, cy = cp.asarray(x), cp.zeros(N, dtype=cp.float32)
    scale3[_grid()](cy, cx, N)
    np.testing.assert_array_equal(cp.asnumpy(cy), _expected(x))
    out = cp.zeros(N, dtype=cp.float32)
    lib.map("mul_f32_f32")(out, cx, 3.0)
    np.testing.assert_array_equal(cp.asnumpy(out), _expected(x))


@pytest.mark.cupy
def test_cupy_stream_ordered_after_a_long_kernel(scale3, slow_write):
    """x written by a slow kernel on CuPy stream s; scale3 launched on s reads the written x."""
    import cupy as cp

    s = cp.cuda.Stream(non_blocking=True)
    cx, cy = cp.zeros(N, dtype=cp.float32), cp.zeros(N, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    g, b = _grid()
    slow_write[g, b, s](cx, N, SPIN_CYCLES)
    scale3[g, b, s](cy, cx, N)
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(cy), _expected(_input()))


class _CAIOnly:
    """An array that offers only a __cuda_array_interface__ dict (taken once, as a producer
    exports it), holding the object that owns the memory."""

    def __init__(self, owner, cai):
        self._owner = owner
        self.__cuda_array_interface__ = cai


@pytest.mark.cupy
def test_array_interface_stream_honoured(scale3):
    """A generic CAI v3 producer whose work (a slow CuPy kernel on stream s, writing the array)
    is still queued names s in its interface; a launch on fdlink's own stream must wait for it.
    (CuPy arrays themselves are read directly, ordered by the stream they are launched on:
    docs/python.md.)"""
    import cupy as cp

    slow = cp.RawKernel(SLOW_WRITE_CU, "slow_write")
    s = cp.cuda.Stream(non_blocking=True)
    mine = fdlink.stream()
    cx, cy = cp.zeros(N, dtype=cp.float32), cp.zeros(N, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    g, b = _grid()
    with s:
        slow((g,), (b,), (cx, np.int32(N), np.int64(SPIN_CYCLES)))
        cai = dict(cx.__cuda_array_interface__)
    if cai.get("stream") != s.ptr:
        s.synchronize()
        pytest.skip("this CuPy does not export its current stream in the interface")
    scale3[g, b, mine](cy, _CAIOnly(cx, cai), N)
    mine.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(cy), _expected(_input()))


@pytest.mark.torch
def test_torch_current_stream_ordered_after_a_long_kernel(scale3, slow_write, lib):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # not the default stream, so ordering is fdlink's doing
        cur = torch.cuda.current_stream()
        assert cur.cuda_stream == side.cuda_stream
        tx = torch.zeros(N, dtype=torch.float32, device="cuda")
        ty = torch.zeros(N, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        # the long kernel queued first on the current stream, writing the input ...
        g, b = _grid()
        slow_write[g, b, cur](tx, N, SPIN_CYCLES)
        # ... and a PyTorch op after it (also on the current stream), then fdlink's kernel
        tx.add_(0.0)
        scale3[g, b, torch.cuda.current_stream()](ty, tx, N)
        out = torch.zeros(N, dtype=torch.float32, device="cuda")
        lib.map("mul_f32_f32")(out, tx, 3.0, stream=torch.cuda.current_stream(), sync=False)
        cur.synchronize()
    np.testing.assert_array_equal(ty.cpu().numpy(), _expected(_input()))
    np.testing.assert_array_equal(out.cpu().numpy(), _expected(_input()))


@pytest.mark.torch
def test_torch_tensors_and_host_tensor_refused(scale3):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    x = _input()
    tx = torch.from_numpy(x).cuda()
    ty = torch.zeros(N, dtype=torch.float32, device="cuda")
    scale3[_grid()](ty, tx, N)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(ty.cpu().numpy(), _expected(x))
    with pytest.raises(TypeError, match="host"):
        scale3[_grid()](ty, torch.from_numpy(x), N)


@pytest.mark.numba
def test_numba_device_arrays_on_a_numba_stream(scale3, slow_write):
    from numba import cuda

    s = cuda.stream()
    nx = cuda.device_array(N, dtype=np.float32)
    ny = cuda.device_array(N, dtype=np.float32)
    cuda.synchronize()
    g, b = _grid()
    slow_write[g, b, s](nx, N, SPIN_CYCLES)
    scale3[g, b, s](ny, nx, N)
    s.synchronize()
    np.testing.assert_array_equal(ny.copy_to_host(), _expected(_input()))
    x = _input()
    nx2 = cuda.to_device(x)
    scale3[_grid()](ny, nx2, N)
    cuda.synchronize()
    np.testing.assert_array_equal(ny.copy_to_host(), _expected(x))


class _DLPackOnly:
    """An array that offers DLPack and nothing else (no __cuda_array_interface__)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pytest.mark.jax
def test_jax_arrays_through_dlpack(scale3):
    import jax
    import jax.numpy as jnp

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX without a GPU")
    x = _input()
    jx = jnp.asarray(x)
    jx.block_until_ready()
    by = fdlink.empty(N, "float32")
    scale3[_grid()](by, _DLPackOnly(jx), N)
    fdlink.device().synchronize()
    np.testing.assert_array_equal(fdlink.to_host(by), _expected(x))
    # the JAX array itself (it offers both protocols)
    by2 = fdlink.empty(N, "float32")
    scale3[_grid()](by2, jx, N)
    fdlink.device().synchronize()
    np.testing.assert_array_equal(fdlink.to_host(by2), _expected(x))
    # the result back into JAX through fdlink's own DLPack export
    jy = jnp.from_dlpack(by2)
    np.testing.assert_array_equal(np.asarray(jy), _expected(x))


def test_host_arrays_refused(scale3):
    x = _input()
    y = fdlink.empty(N, "float32")
    with pytest.raises(TypeError, match="host"):
        scale3[_grid()](y, x, N)
    with pytest.raises(TypeError, match="host"):
        scale3[_grid()](x, fdlink.to_device(x), N)
