"""fdlink.torch: kernels, maps, elementwise kernels and reductions as torch.library custom
operators. Without a GPU (the mock driver, and any torch, CPU or CUDA build): the operators'
schemas, their fake implementations on meta tensors, their checks, and torch._dynamo tracing
through them with no graph break. With a GPU (marked gpu): eager, torch.compile(fullgraph=True)
and mode="reduce-overhead" (CUDA graphs) against NumPy; torch.cuda.graph capture and replay."""

import numpy as np
import pytest

import fdlink

torch = pytest.importorskip("torch")
import fdlink.torch as ft  # noqa: E402

pytestmark = [pytest.mark.mock, pytest.mark.torch]

GRID = dict(grid=lambda n, **_: (n + 255) // 256, block=256)


@pytest.fixture(scope="module")
def saxpy_ops(saxpy_module):
    k = saxpy_module.kernel("saxpy")
    inplace = ft.kernel_op(k, "float *y, const float *x, float a, int n", writes=["y"], **GRID)
    functional = ft.kernel_op(k, "float *y, const float *x, float a, int n",
                              outputs={"y": "x"}, **GRID)
    return inplace, functional


@pytest.fixture(scope="module")
def mul_ops(mul_lib):
    m = mul_lib.map("mul_f32_f32")
    return ft.map_op(m, "as"), ft.map_op(m, "aa", out=True)


def meta(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta")


def test_schemas(saxpy_ops, mul_ops):
    inplace, functional = saxpy_ops
    s = str(inplace.default._schema)
    assert "Tensor(a0!) y, Tensor x, float a, int n) -> ()" in s
    assert str(functional.default._schema).endswith("(Tensor x, float a, int n) -> Tensor")
    assert str(mul_ops[0].default._schema).endswith("(Tensor x0, float x1) -> Tensor")
    assert "(Tensor(a!) out, Tensor x0, Tensor x1) -> ()" in str(mul_ops[1].default._schema)


def test_fake_implementations_on_meta(saxpy_ops, mul_ops):
    inplace, functional = saxpy_ops
    x = meta(1000)
    assert inplace(meta(1000), x, 2.0, 1000) is None
    y = functional(x, 2.0, 1000)
    assert y.device.type == "meta" and y.shape == (1000,) and y.dtype == torch.float32
    z = mul_ops[0](meta(4, 8), 3.0)
    assert z.shape == (4, 8) and z.dtype == torch.float32
    mul_ops[1](meta(32), meta(32), meta(32))


def test_fake_checks(saxpy_ops, mul_ops):
    with pytest.raises(fdlink.InvalidArgumentError, match="x is torch.float64, but the "
                       "parameter is torch.float32"):
        saxpy_ops[1](meta(10, dtype=torch.float64), 2.0, 10)
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 2 has 5 elements, the "
                       "first array 10"):
        mul_ops[1](meta(10), meta(10), meta(5))
    with pytest.raises(fdlink.InvalidArgumentError, match="out is torch.int32"):
        mul_ops[1](meta(10, dtype=torch.int32), meta(10), meta(10))


def test_definition_errors(saxpy_module, mul_lib):
    k = saxpy_module.kernel("saxpy")
    with pytest.raises(fdlink.InvalidArgumentError, match="'a' is not a pointer parameter"):
        ft.kernel_op(k, "float *y, const float *x, float a, int n", writes=["a"], **GRID)
    with pytest.raises(fdlink.InvalidArgumentError, match="give a type and a name"):
        ft.kernel_op(k, "float *, float *x, float a, int n", **GRID)
    with pytest.raises(fdlink.InvalidArgumentError, match="modes 'a'"):
        ft.map_op(mul_lib.map("mul_f32_f32"), "a")
    with pytest.raises(fdlink.InvalidArgumentError, match="no array parameter"):
        ft.map_op(mul_lib.map("mul_f32_f32"), "ss")


@pytest.mark.gpu  # the mock driver runs no generated elementwise kernel
def test_elementwise_and_reduction_fakes():
    ew = fdlink.kernels.elementwise("float a, const float *x, float *y", "y[i] = a * x[i]")
    op = ft.elementwise_op(ew, outputs={"y": "x"})
    assert str(op.default._schema).endswith("(float a, Tensor x) -> Tensor")
    y = op(2.0, meta(7))
    assert y.shape == (7,) and y.dtype == torch.float32
    op2 = ft.elementwise_op(ew, writes=["y"])
    assert "Tensor(a2!) y" in str(op2.default._schema)
    r = fdlink.kernels.reduction("float64", "const float *x", "x[i] * x[i]", "sum")
    rop = ft.reduction_op(r)
    s = rop(meta(100))
    assert s.shape == () and s.dtype == torch.float64


def test_dynamo_traces_without_graph_break(saxpy_ops, mul_ops):
    inplace, functional = saxpy_ops
    mul = mul_ops[0]

    def f(x):
        y = functional(torch.sin(x), 2.0, x.numel())
        z = mul(y + 1.0, 3.0)
        inplace(z, x, 0.5, x.numel())
        return z.cos()

    ex = torch._dynamo.explain(f)(meta(1000))
    assert ex.graph_break_count == 0, ex.break_reasons
    assert ex.graph_count == 1


# ---- the implementations, over the mock driver -----------------------------------------------


@pytest.fixture
def mock_cuda(monkeypatch):
    """The operators' implementations run without a GPU: ops made under this fixture are
    registered for the CPU dispatch key too, CPU tensors over the mock driver's device memory
    (host memory) pass for CUDA tensors of device 0 (the extension reads is_cuda and
    get_device()), and PyTorch's current stream is an fdlink stream. Returns a maker of such
    tensors."""
    from conftest import MOCK
    if not MOCK:
        pytest.skip("the implementations run on the mock driver here (with a GPU: the gpu tests)")
    import ctypes
    define = ft._define

    def define_cpu_too(qual, schema, impl, fake):
        op = define(qual, schema, impl, fake)
        ft._libs[qual[0]].impl(qual[1], impl, "CPU")
        return op

    s = fdlink.stream()
    monkeypatch.setattr(ft, "_define", define_cpu_too)
    monkeypatch.setattr(ft, "_raw_stream", lambda index: s.handle)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True), raising=False)
    monkeypatch.setattr(torch.Tensor, "get_device", lambda self: 0, raising=False)
    keep = []

    def tensor(values, dtype="f4"):
        b = fdlink.empty(len(values), dtype)
        keep.append(b)
        c = {"f4": ctypes.c_float, "f8": ctypes.c_double}[dtype]
        t = torch.frombuffer((c * len(values)).from_address(b.__cuda_array_interface__["data"][0]),
                             dtype=torch_dtype(dtype))
        t.copy_(torch.as_tensor(values, dtype=t.dtype))
        return t

    yield tensor
    s.synchronize()


def torch_dtype(code):
    return ft.torch_dtype(code)


def test_implementations_launch_on_the_mock(mock_cuda, saxpy_module, mul_lib):
    m = mul_lib.map("mul_f32_f32")
    mul_out = ft.map_op(m, "as", out=True)
    saxpy = ft.kernel_op(saxpy_module.kernel("saxpy"), "float *y, const float *x, float a, int n",
                         writes=["y"], **GRID)
    saxpy_fixed = ft.kernel_op(saxpy_module.kernel("saxpy"),
                               "float *y, const float *x, float a, int n", writes=["y"],
                               grid=1, block=64)
    x = mock_cuda([float(i) for i in range(40)])
    out = mock_cuda([0.0] * 40)
    mul_out(out, x, 3.0)
    assert out.tolist() == [3.0 * i for i in range(40)]
    y = mock_cuda([1.0] * 40)
    saxpy(y, x, 2.0, 40)           # geometry from the arguments (by name)
    saxpy_fixed(y, x, 1.0, 40)     # fixed geometry: the arguments as they come
    assert y.tolist() == [1.0 + 3.0 * i for i in range(40)]
    # inside torch.compile: the compiled graph calls the same implementation
    f = torch.compile(lambda o, x: mul_out(o, x, 0.5), fullgraph=True)
    f(out, x)
    assert out.tolist() == [0.5 * i for i in range(40)]
    ft.check()


def test_implementations_check_their_arguments(mock_cuda, mul_lib):
    mul2 = ft.map_op(mul_lib.map("mul_f32_f32"), "aa", out=True)
    x, out = mock_cuda([1.0] * 8), mock_cuda([0.0] * 8)
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 2 is torch.float64, but "
                       "parameter 2 is torch.float32"):
        mul2(out, x, mock_cuda([1.0] * 8, "f8"))
    with pytest.raises(fdlink.InvalidArgumentError, match="argument 2 has 4 elements, the first "
                       "array 8"):
        mul2(out, x, mock_cuda([1.0] * 4))
    assert out.tolist() == [0.0] * 8  # nothing was launched


# ---- on a GPU --------------------------------------------------------------------------------


def _cuda(a):
    return torch.as_tensor(a, device="cuda")


@pytest.mark.gpu
def test_eager_compiled_and_cudagraphs_equal_numpy(saxpy_ops, mul_ops):
    inplace, functional = saxpy_ops
    mul = mul_ops[0]
    rng = np.random.default_rng(1)
    xh = rng.standard_normal(5000).astype(np.float32)

    def g(x):
        y = torch.zeros_like(x)
        inplace(y, torch.sin(x), 2.0, x.numel())
        z = mul(y + 1.0, 3.0)
        inplace(z, x, 0.5, x.numel())
        return z * 2.0

    want = ((2.0 * np.sin(xh) + 1.0) * 3.0 + 0.5 * xh) * 2.0
    x = _cuda(xh)
    eager = g(x)
    np.testing.assert_allclose(eager.cpu().numpy(), want, rtol=1e-5, atol=1e-5)
    compiled = torch.compile(g, fullgraph=True)
    np.testing.assert_allclose(compiled(x).cpu().numpy(), want, rtol=1e-5, atol=1e-5)
    assert torch._dynamo.explain(g)(x).graph_break_count == 0
    ro = torch.compile(g, mode="reduce-overhead", fullgraph=True)
    for i in range(4):  # warm-up, recording, then replays of the CUDA graph
        xi = _cuda((xh + i).astype(np.float32))
        wi = ((2.0 * np.sin(xh + i) + 1.0) * 3.0 + 0.5 * (xh + i)) * 2.0
        np.testing.assert_allclose(ro(xi).cpu().numpy(), wi, rtol=1e-4, atol=1e-4)
    ft.check()


@pytest.mark.gpu
def test_functional_ops_and_reduction_on_current_stream(mul_ops):
    ew = fdlink.kernels.elementwise("float a, const float *x, float *y", "y[i] = a * x[i]")
    scale = ft.elementwise_op(ew, outputs={"y": "x"})
    r = fdlink.kernels.reduction("float32", "const float *x", "x[i] * x[i]", "sum")
    sumsq = ft.reduction_op(r)
    xh = np.arange(1, 1001, dtype=np.float32) / 100
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = _cuda(xh)
        y = scale(2.0, x)
        total = sumsq(y)
        z = mul_ops[0](y, 0.5)
    s.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), 2 * xh, rtol=1e-6)
    np.testing.assert_allclose(z.cpu().numpy(), xh, rtol=1e-6)
    assert total.item() == pytest.approx(float(np.sum((2 * xh.astype(np.float64)) ** 2)),
                                         rel=1e-4)
    f = torch.compile(lambda x: sumsq(scale(2.0, x)) + 1.0, fullgraph=True)
    assert f(x).item() == pytest.approx(float(np.sum((2 * xh.astype(np.float64)) ** 2)) + 1,
                                        rel=1e-4)
    ft.check()


def test_not_differentiable_until_a_backward_is_registered(mul_lib):
    import warnings
    op = ft.map_op(mul_lib.map("mul_f32_f32"), "aa")
    a = meta(8).requires_grad_()
    b = meta(8)
    with warnings.catch_warnings(record=True) as w:  # PyTorch's autograd fallback: a warning,
        warnings.simplefilter("always")              # and no gradient
        op(a, b).sum().backward()
    assert a.grad is None
    assert any("autograd kernel was not registered" in str(x.message) for x in w)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return op(grad.contiguous(), y), op(grad.contiguous(), x)

    torch.library.register_autograd(op.default._name, backward, setup_context=setup_context)
    op(a, b).sum().backward()
    assert a.grad is not None and a.grad.shape == (8,) and a.grad.dtype == torch.float32


@pytest.mark.gpu
@pytest.mark.graph
def test_torch_cuda_graph_capture_and_replay(saxpy_module, mul_lib):
    k = saxpy_module.kernel("saxpy")
    m = mul_lib.map("mul_f32_f32")
    n = 4096
    x = _cuda(np.arange(n, dtype=np.float32))
    y = torch.zeros(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    r = fdlink.kernels.reduction("float32", "const float *x", "x[i]", "sum")
    total = torch.zeros((), device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):  # warm-up: load, allocate the maps' status records
        k[(n + 255) // 256, 256](y, x, 1.0, n, stream=s)
        m(out, y, 2.0, stream=s, sync=False)
        r(out, stream=s, out=total)
    s.synchronize()
    y.zero_()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        cs = torch.cuda.current_stream()
        k[(n + 255) // 256, 256](y, x, 1.0, n, stream=cs)
        m(out, y, 2.0, stream=cs, sync=False)
        r(out, stream=cs, out=total)
    for rep in range(1, 4):
        g.replay()
        torch.cuda.synchronize()
        np.testing.assert_allclose(y.cpu().numpy(), rep * np.arange(n))
        np.testing.assert_allclose(out.cpu().numpy(), 2 * rep * np.arange(n))
        assert total.item() == pytest.approx(2 * rep * n * (n - 1) / 2, rel=1e-5)
    m.check()
    r.check()
    saxpy_module.check_status()
