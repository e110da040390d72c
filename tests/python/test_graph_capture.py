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
