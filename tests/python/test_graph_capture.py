"""CUDA graph capture (docs/python.md "CUDA graphs"): what would wait for the device while a
stream is being captured is refused with a clear error before anything is queued (the capture
stays valid); launches, maps with sync=False and prepared launches are queued as usual. Through
the mock driver (MOCK_CUDA_CAPTURING: every stream of fdlink.stream() is "capturing", and a wait
in it fails as the driver's does); with a GPU, CuPy's and cuda.core's captures replay right
(test_torch_ops.py has PyTorch's)."""

import numpy as np
import pytest

import fdlink
from fakes import floats, put

pytestmark = [pytest.mark.mock, pytest.mark.graph]


def test_waiting_in_a_capturing_stream_is_refused_before_it_is_queued(mul_lib, saxpy_module):
    from conftest import MOCK
    if not MOCK:
        pytest.skip("the capture refusals are driven by the mock driver")
    m = mul_lib.map("mul_f32_f32")
    k = saxpy_module.kernel("saxpy")
    a, out = fdlink.empty(8, "f4"), fdlink.empty(8, "f4")
    put(a, list(range(8)))
    put(out, [0.0] * 8)
    s = fdlink.stream()
    m(out, a, 1.0, stream=s)  # loads and warms up before the "capture"
    put(out, [0.0] * 8)
    import os
    os.environ["MOCK_CUDA_CAPTURING"] = "1"
    try:
        with pytest.raises(fdlink.InvalidArgumentError,
                           match=r"map 'fdl_map_mul_f32_f32' waits for its result, but its stream "
                                 r"is being captured into a CUDA graph"):
            m(out, a, 3.0, stream=s)
        with pytest.raises(fdlink.InvalidArgumentError,
                           match=r"a synchronous launch of kernel 'saxpy' in stream 0x[0-9a-f]+, "
                                 r"which is being captured into a CUDA graph: waiting would "
                                 r"invalidate the capture"):
            k[1, 32](out, a, 2.0, 8, stream=s, sync=True)
        with pytest.raises(fdlink.InvalidArgumentError, match="fdl_stream_synchronize in stream"):
            s.synchronize()
        m(out, a, 3.0, stream=s, sync=False)   # queued: what a capture records
    finally:
        del os.environ["MOCK_CUDA_CAPTURING"]
    m.check()
    assert floats(out) == [3.0 * i for i in range(8)]


def test_a_buffer_freed_during_a_capture_is_released_after_it():
    """Freeing a Buffer while a stream is being captured neither waits nor frees (either would
    invalidate the capture: the mock refuses both and counts them); the memory goes at the next
    point outside the capture. An allocation during the capture is allowed (relaxed mode)."""
    from conftest import MOCK
    if not MOCK:
        pytest.skip("the capture is driven by the mock driver")
    import ctypes
    import os
    mock = ctypes.CDLL(MOCK)
    mock.mock_cuda_live.restype = ctypes.c_long
    dev = fdlink.device()
    s = fdlink.stream()   # a stream of the device's: its capture is seen
    a, b = fdlink.empty(64, "f4"), fdlink.empty(64, "f4")
    dev.synchronize()     # nothing deferred from earlier tests
    base, refused = mock.mock_cuda_live(0), mock.mock_cuda_live(-3)
    os.environ["MOCK_CUDA_CAPTURING"] = "1"
    try:
        a.free()
        del b
        assert mock.mock_cuda_live(0) == base, "kept during the capture"
        with pytest.raises(fdlink.InvalidArgumentError, match=r"fdl_device_synchronize: stream "
                           r"0x[0-9a-f]+ of device 0 is being captured into a CUDA graph: "
                           r"waiting would invalidate the capture"):
            dev.synchronize()
        c = fdlink.empty(16, "f4")   # allocated in the capture
        assert mock.mock_cuda_live(0) == base + 1
    finally:
        del os.environ["MOCK_CUDA_CAPTURING"]
    assert mock.mock_cuda_live(-3) == refused, "nothing that would invalidate a capture"
    dev.synchronize()
    assert mock.mock_cuda_live(0) == base - 1, "both freed after the capture"
    del c, s


def test_a_wrapped_stream_holds_its_owner():
    """fdlink asks every stream of the device whether it is being captured (a free, an
    allocation, a synchronisation), wrapped ones too: a wrapper keeps the object it came from, so
    that collecting the owner (a cuda.core or CuPy stream, which destroys its CUstream) never
    leaves fdlink a destroyed stream to ask (an H200 crashed so, 1 run in 3, before)."""
    import gc
    import weakref

    class Owner:
        def __init__(self, handle):
            self.handle = handle

        def __cuda_stream__(self):
            return (0, self.handle)

    own = fdlink.stream()  # a real stream of the device, lent to the owner's handle
    owner = Owner(own.handle)
    gone = weakref.ref(owner)
    s = fdlink.stream(owner)
    assert not s.owned and s.handle == own.handle
    del owner
    gc.collect()
    assert gone() is not None, "the owner was collected while its wrapper lives"
    buf = fdlink.empty(16, "f4")  # asks every stream of the device, the wrapper's among them
    buf.free()
    del s
    gc.collect()
    assert gone() is None, "the wrapper kept its owner after it went"


# ---- on a GPU: captures by CuPy and cuda.core, replayed --------------------------------------


@pytest.mark.gpu
@pytest.mark.cupy
def test_cupy_graph_capture_replays(mul_lib, saxpy_module):
    import cupy as cp
    m = mul_lib.map("mul_f32_f32")
    k = saxpy_module.kernel("saxpy")
    r = fdlink.kernels.reduction("float32", "const float *x", "x[i]", "sum")
    n = 4096
    s = cp.cuda.Stream(non_blocking=True)
    with s:  # the arrays' interface names s: no ordering event is recorded elsewhere
        x = cp.arange(n, dtype=cp.float32)
        y = cp.zeros(n, dtype=cp.float32)
        out = cp.zeros(n, dtype=cp.float32)
        total = cp.zeros(1, dtype=cp.float32)
        p = k.prepare((n + 255) // 256, 256, [y, x, 1.0, n], stream=s)
        p()  # warm-up: loads, status records
        m(out, y, 2.0, stream=s, sync=False)
        r(out, stream=s, out=total)
        s.synchronize()
        y.fill(0)
        s.synchronize()
        s.begin_capture()
        p()
        m(out, y, 2.0, stream=s, sync=False)
        r(out, stream=s, out=total)
        with pytest.raises(fdlink.InvalidArgumentError, match="being captured into a CUDA graph"):
            m(out, y, 2.0, stream=s)  # waits: refused, and the capture goes on
        g = s.end_capture()
        for rep in range(1, 4):
            g.launch(stream=s)
            s.synchronize()
            np.testing.assert_allclose(cp.asnumpy(y), rep * np.arange(n))
            np.testing.assert_allclose(cp.asnumpy(out), 2 * rep * np.arange(n))
            assert float(total[0]) == pytest.approx(2 * rep * n * (n - 1) / 2, rel=1e-5)
    m.check()
    r.check()
    saxpy_module.check_status()


@pytest.mark.gpu
@pytest.mark.torch
def test_torch_capture_with_a_buffer_freed_and_one_allocated_inside(mul_lib, saxpy_module):
    """A Buffer freed inside torch.cuda.graph's capture is kept until it ends (no wait, no
    cuMemFree: the capture stays valid), one allocated inside is the graph's; device
    synchronisation inside is refused and the capture goes on; the graph replays right."""
    import torch
    k = saxpy_module.kernel("saxpy")
    m = mul_lib.map("mul_f32_f32")
    n = 4096
    grid = (n + 255) // 256
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.zeros(n, device="cuda")
    tmp = fdlink.empty(n, "f4")
    s = torch.cuda.Stream()
    fs = fdlink.stream(s)   # kept alive: the device sees the capture of its stream
    k[grid, 256](y, x, 1.0, n, stream=fs)   # warm-up: loads, status records
    m(tmp, x, 2.0, stream=fs, sync=False)
    s.synchronize()
    y.zero_()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        scratch = fdlink.empty(n, "f4")      # allocated in the capture (relaxed mode)
        m(scratch, x, 2.0, stream=fs, sync=False)
        tmp.free()                           # kept until the capture ends
        del tmp
        with pytest.raises(fdlink.InvalidArgumentError, match="being captured into a CUDA graph"):
            fdlink.device().synchronize()
        k[grid, 256](y, scratch, 1.0, n, stream=fs)
    for rep in range(1, 4):
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(y.cpu().numpy(), 2.0 * rep * np.arange(n))
    fdlink.device().synchronize()   # outside the capture: the freed buffer goes now
    m.check()
    saxpy_module.check_status()
    del g, scratch


def _cuda_core():
    """cuda.core's Device (cuda.core 0.4 and later; cuda.core.experimental before), or a skip."""
    try:
        from cuda.core import Device
        return Device
    except ImportError:
        pass
    try:
        from cuda.core.experimental import Device
        return Device
    except ImportError:
        pytest.skip("cuda.core is not installed")


@pytest.mark.gpu
def test_cuda_core_graph_builder_capture_replays(mul_lib, saxpy_module):
    """fdlink's prepared launch, kernel launch, map and reduction with out= captured by a
    cuda.core graph builder (Stream.create_graph_builder, begin_building, end_building,
    complete), replayed with Graph.launch: results checked after each replay, device statuses
    after the replays (check()). A wait in the capture is refused and the capture goes on; a
    Buffer freed in it is kept until it ends."""
    Device = _cuda_core()
    dev = Device(fdlink.device().ordinal)
    dev.set_current()
    cs = dev.create_stream()
    fs = fdlink.stream(cs)
    k = saxpy_module.kernel("saxpy")
    m = mul_lib.map("mul_f32_f32")
    r = fdlink.kernels.reduction("float32", "const float *x", "x[i]", "sum")
    n = 4096
    grid = (n + 255) // 256
    ar = np.arange(n, dtype=np.float32)
    x = fdlink.to_device(ar)
    y, out, z = fdlink.empty(n, "f4"), fdlink.empty(n, "f4"), fdlink.empty(n, "f4")
    total = fdlink.empty(1, "f4")
    tmp = fdlink.empty(n, "f4")
    p = k.prepare(grid, 256, [y, x, 1.0, n], stream=fs)
    p()  # warm-up: loads, status records, the wrappers
    m(out, y, 2.0, stream=fs, sync=False)
    k[grid, 256](z, x, 1.0, n, stream=fs)
    r(out, stream=fs, out=total)
    cs.sync()
    for b in (y, z):
        b.zero()
    gb = cs.create_graph_builder()
    gb.begin_building()
    gs = fdlink.stream(gb)  # the builder's stream (__cuda_stream__)
    p.set_stream(gs)
    p()                                     # y += x
    m(out, y, 2.0, stream=gs, sync=False)   # out = 2 y
    k[grid, 256](z, out, 0.5, n, stream=gs)  # z += out / 2
    r(out, stream=gs, out=total)            # total = sum(out)
    with pytest.raises(fdlink.InvalidArgumentError, match="being captured into a CUDA graph"):
        m(out, y, 2.0, stream=gs)           # waits: refused, and the capture goes on
    tmp.free()                              # kept until the capture ends
    gb.end_building()
    p.set_stream(fs)
    del gs
    g = gb.complete()
    for rep in range(1, 4):
        g.launch(cs)
        cs.sync()
        got = lambda b: np.frombuffer(b.read(), dtype=np.float32)  # noqa: E731
        np.testing.assert_allclose(got(y), rep * ar)
        np.testing.assert_allclose(got(out), 2 * rep * ar)
        np.testing.assert_allclose(got(z), rep * (rep + 1) / 2 * ar)
        assert got(total)[0] == pytest.approx(2 * rep * n * (n - 1) / 2, rel=1e-5)
    m.check()
    r.check()
    saxpy_module.check_status()
    fdlink.device().synchronize()
    g.close()
    gb.close()
