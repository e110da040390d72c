"""On a GPU host: kernels, maps, elementwise kernels and reductions called with CuPy, PyTorch,
Numba and JAX arrays and on their streams; every result checked against NumPy."""

import pytest

import fdlink
from conftest import MUL_CU, MUL_DECL, SAXPY_CU

np = pytest.importorskip("numpy")
pytestmark = pytest.mark.gpu

N = 100_003  # not a multiple of any block or vector width


def _grid(n, block=256):
    return ((n + block - 1) // block, block)


@pytest.fixture(scope="module")
def lib():
    return fdlink.Library(MUL_DECL, [MUL_CU])


@pytest.fixture(scope="module")
def saxpy(lib):
    return lib.link(SAXPY_CU).kernel("saxpy", "float *y, const float *x, float a, int n")


def _ref(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32))


def _check_saxpy(actual, y, x, coeffs):
    """actual == y + sum(coeffs) * x, after len(coeffs) float32 saxpy launches y += a * x.

    The reference is float64. The GPU may fuse a * x + y into one FMA (one rounding) where NumPy
    rounds twice, so a relative tolerance fails near zero (one float32 ulp of a large operand is
    a large fraction of a tiny result). The bound is scaled to the operands instead: each launch
    rounds at most twice, each rounding within one float32 epsilon of |y| + sum|a| * |x|. A
    kernel that did not run, ran twice, or used another coefficient is off by |a * x|, far
    beyond it for all but a few elements (those are checked too: every element must pass).
    """
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    ref = y64 + float(sum(coeffs)) * x64
    eps = float(np.finfo(np.float32).eps)
    bound = 2 * len(coeffs) * eps * (np.abs(y64) + sum(abs(a) for a in coeffs) * np.abs(x64))
    err = np.abs(np.asarray(actual, dtype=np.float64) - ref)
    bad = np.flatnonzero(err > bound)
    assert bad.size == 0, (f"{bad.size} of {err.size} elements off, first at {bad[0]}: "
                           f"{actual[bad[0]]!r} vs {ref[bad[0]]!r} (bound {bound[bad[0]]:.3g})")


def test_check_saxpy_can_fail():
    x, y = _ref(1000)
    _check_saxpy(y + np.float32(2.5) * x, y, x, [2.5])
    for wrong in (y, y + np.float32(2.0) * x, y + np.float32(5.0) * x):
        with pytest.raises(AssertionError):
            _check_saxpy(wrong, y, x, [2.5])


def test_buffers(saxpy):
    x, y = _ref()
    bx, by = fdlink.to_device(x), fdlink.to_device(y)
    g, b = _grid(N)
    saxpy[g, b](by, bx, np.float32(2.5), np.int32(N))  # NumPy scalars, packed by value
    _check_saxpy(fdlink.to_host(by), y, x, [2.5])
    p = saxpy.prepare(g, b, (by, bx, 1.0, N))
    p()
    p()
    _check_saxpy(fdlink.to_host(by), y, x, [2.5, 1.0, 1.0])


def test_cubin_for_cuda_core(lib):
    core = pytest.importorskip("cuda.core")
    mod = lib.link(SAXPY_CU)
    obj = core.ObjectCode.from_cubin(mod.cubin)
    assert obj is not None


def test_elementwise_and_reduction(lib):
    x, y = _ref()
    bx, by = fdlink.to_device(x), fdlink.to_device(y)
    k = lib.elementwise("float a, const float *x, float *y",
                        "float r; FDL_MAP_CALL(mul_f32_f32, &r, a, x[i]); y[i] = r + y[i]")
    k(np.float32(2.0), bx, by)
    np.testing.assert_allclose(fdlink.to_host(by), y + 2 * x, rtol=1e-6)
    r = lib.reduction("float64", "const float *x", "(double)x[i] * x[i]", "sum")
    assert r(bx) == pytest.approx(float(np.sum(x.astype(np.float64) ** 2)), rel=1e-9)
    mx = lib.reduction("float32", "const float *x", "x[i]", "max")
    assert mx(bx) == float(x.max())
    res = fdlink.empty(1, "f4")
    s = fdlink.stream()
    assert mx(bx, out=res, stream=s) is res  # into device memory, in the stream, no wait
    s.synchronize()
    mx.check()
    assert fdlink.to_host(res)[0] == x.max()
    with pytest.raises(ValueError, match="at least 4 bytes"):
        mx(bx, out=fdlink.empty(1, "u1"))
    out = fdlink.empty(N, "f4")
    lib.map("mul_f32_f32")(out, bx, 3.0)
    np.testing.assert_allclose(fdlink.to_host(out), x * np.float32(3.0), rtol=1e-6)


def test_map_status_by_index():
    decl = "checked_sqrt: float32(float32)\n"
    src = ('extern "C" __device__ int checked_sqrt(float *r, float x) '
           '{ if (x < 0) return 7; *r = sqrtf(x); return 0; }\n')
    lib = fdlink.Library(decl, [src])
    a = np.abs(_ref()[0])
    a[[12345, 70000, 99999]] = -1.0
    out = fdlink.empty(N, "f4")
    with pytest.raises(fdlink.DeviceStatusError) as e:
        lib.map("checked_sqrt")(out, fdlink.to_device(a))
    assert e.value.index == 12345 and e.value.device_status == 7 and e.value.count == 3
    assert e.value.function == "checked_sqrt"


@pytest.mark.cupy
def test_cupy(saxpy, lib):
    import cupy as cp

    x, y = _ref()
    cx, cy = cp.asarray(x), cp.asarray(y)
    cp.cuda.Device().synchronize()  # the copies above ran on CuPy's default stream
    g, b = _grid(N)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        saxpy[g, b, s](cy, cx, 2.0, N)
    s.synchronize()
    _check_saxpy(cp.asnumpy(cy), y, x, [2.0])
    out = cp.empty_like(cx)
    lib.map("mul_f32_f32")(out, cx, 0.5, stream=s)
    np.testing.assert_allclose(cp.asnumpy(out), x * np.float32(0.5), rtol=1e-6)
    with pytest.raises(ValueError, match="not C-contiguous"):
        saxpy[g, b](cy, cx[::2], 2.0, N // 2)
    with pytest.raises(TypeError, match="has elements of type f8"):
        saxpy[g, b](cy, cx.astype(cp.float64), 2.0, N)


@pytest.mark.torch
def test_torch(saxpy, lib):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    x, y = _ref()
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    g, b = _grid(N)
    saxpy[g, b, torch.cuda.current_stream()](ty, tx, 2.0, N)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        saxpy[g, b](ty, tx, 1.0, N, stream=side)
    torch.cuda.current_stream().wait_stream(side)
    _check_saxpy(ty.cpu().numpy(), y, x, [2.0, 1.0])
    with pytest.raises(ValueError, match="requires grad"):
        saxpy[g, b](ty, tx.clone().requires_grad_(), 2.0, N)
    with pytest.raises(ValueError, match="not C-contiguous"):
        saxpy[g, b](ty, tx[::2], 2.0, N // 2)
    with pytest.raises(TypeError, match="(host|CPU)"):
        saxpy[g, b](ty, torch.from_numpy(x), 2.0, N)
    r = lib.reduction("float64", "const float *x", "(double)x[i]", "sum")
    assert r(tx) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-9, abs=1e-6)


@pytest.mark.numba
def test_numba(saxpy):
    from numba import cuda

    x, y = _ref()
    nx, ny = cuda.to_device(x), cuda.to_device(y)
    s = cuda.stream()
    g, b = _grid(N)
    saxpy[g, b](ny, nx, 2.0, N, stream=s)
    s.synchronize()
    np.testing.assert_allclose(ny.copy_to_host(), y + 2 * x, rtol=1e-6)


@pytest.mark.jax
def test_jax(saxpy):
    import jax
    import jax.numpy as jnp

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX without a GPU")
    x, y = _ref()
    jx = jnp.asarray(x)
    jx.block_until_ready()
    by = fdlink.to_device(y)
    g, b = _grid(N)
    saxpy[g, b](by, jx, 2.0, N)
    np.testing.assert_allclose(fdlink.to_host(by), y + 2 * x, rtol=1e-6)


@pytest.mark.numba
def test_numba_links_fdlink_checked_ltoir(tmp_path):
    # docs/python.md's Numba example: fdlink compiles and checks, Numba links the LTO-IR
    from numba import cuda

    ir = fdlink.compile(MUL_CU, decls=MUL_DECL, output="ltoir")
    path = tmp_path / "mul.ltoir"
    path.write_bytes(ir.data)
    mul = cuda.declare_device("mul_f32_f32", "float32(float32, float32)")

    @cuda.jit(link=[str(path)])
    def scale(y, x, a):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = mul(x[i], a)

    x = np.arange(1000, dtype=np.float32)
    dx, dy = cuda.to_device(x), cuda.device_array(1000, np.float32)
    scale[4, 256](dy, dx, np.float32(2.0))
    np.testing.assert_allclose(dy.copy_to_host(), 2 * x)


def test_an_int_for_a_float_parameter_on_the_gpu(lib):
    """Issue 38: k[1, 4](y, x, 2, 4) with `float a` computes with a = 2.0 (it once packed the
    int's bits, 2.8e-45, and left y unchanged); a float for an unsigned parameter is refused."""
    k = lib.link(SAXPY_CU).kernel("saxpy")  # no signature: the classes come from the code
    assert [p.cls for p in k.params] == ["unsigned", "unsigned", "float", "unsigned"]
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, dtype=np.float32)
    bx, by = fdlink.to_device(x), fdlink.to_device(y)
    k[1, 4](by, bx, 2, 4)
    np.testing.assert_array_equal(fdlink.to_host(by), y + 2.0 * x)
    p = k.prepare(1, 4, (by, bx, 3, 4))
    p()
    np.testing.assert_array_equal(fdlink.to_host(by), y + 5.0 * x)
    fill = lib.link('extern "C" __global__ void fill(unsigned *out, unsigned v, unsigned n) '
                    '{ unsigned i = threadIdx.x; if (i < n) out[i] = v; }').kernel("fill")
    out = fdlink.empty(4, "u4")
    with pytest.raises(fdlink.ArgumentTypeError, match="argument 2 of kernel 'fill' is a float"):
        fill[1, 4](out, 7.0, 4)
    fill[1, 4](out, 7, 4)
    np.testing.assert_array_equal(fdlink.to_host(out), np.full(4, 7, np.uint32))


def test_a_struct_by_value_on_the_gpu(lib):
    """Issue 38: a 24-byte struct parameter given as bytes, a ctypes.Structure or a NumPy
    structured scalar reaches the kernel whole."""
    import ctypes

    class S24(ctypes.Structure):
        _fields_ = [("a", ctypes.c_int32), ("b", ctypes.c_int32), ("c", ctypes.c_double),
                    ("d", ctypes.c_int64)]

    k = lib.link(r'''
        struct s24 { int a; int b; double c; long long d; };
        extern "C" __global__ void take(long long *out, s24 s) {
            out[0] = s.a; out[1] = s.b; out[2] = (long long)(s.c * 4); out[3] = s.d;
        }''').kernel("take")
    assert [(p.cls, p.size) for p in k.params] == [("unsigned", 8), ("bytes", 24)]
    out = fdlink.empty(4, "i8")
    s = S24(-3, 4, 2.5, 1 << 40)
    dt = np.dtype([("a", "<i4"), ("b", "<i4"), ("c", "<f8"), ("d", "<i8")])
    for arg in (bytes(s), s, np.array([(-3, 4, 2.5, 1 << 40)], dtype=dt)[0]):
        out.zero()
        k[1, 1](out, arg)
        assert fdlink.to_host(out).tolist() == [-3, 4, 10, 1 << 40], type(arg)
    with pytest.raises(fdlink.ArgumentTypeError, match="struct of 24 bytes"):
        k[1, 1](out, 5)
