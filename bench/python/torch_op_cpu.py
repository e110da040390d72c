#!/usr/bin/env python3
"""The host-side cost of an fdlink.torch operator, measured without a GPU (issue 39): the mock
driver (tests/gpu/mock) stands for the GPU and its device memory, which is host memory, is viewed
as CPU tensors that the harness presents as CUDA tensors of device 0 (``is_cuda`` and
``get_device`` patched on torch.Tensor: the extension reads both), the operator's implementation
is registered for the CPU dispatch key too, and PyTorch's current-stream lookups (which need a
GPU) are stand-ins returning one fdlink stream's handle. What is measured (best of 5, per call,
microseconds):

  impl        the operator's registered implementation called directly (our Python + launch)
  eager op    torch.ops.<ns>.<op>(...) through PyTorch's dispatcher
  compiled    the op inside torch.compile(fullgraph=True) (Dynamo's guards, AOTAutograd's
              wrapper, the Inductor-generated caller)
  builtin     torch's own compiled ``x * 3`` (the anchor, CPU Inductor here)
  fdlink      the map launched by fdlink directly (Map.__call__, sync=False)

and the dispatch cost of a no-op operator registered with torch.library.Library.impl against
torch.library.custom_op (eager and compiled). The stream lookups are not PyTorch's real ones:
bench_frameworks.py measures those on the GPU host.

usage: FDLINK_LIBCUDA=<build>/tests/gpu/libfdlink_mock_cuda.so \\
       PYTHONPATH=<build>/python/pkg python3 bench/python/torch_op_cpu.py [--quick]
"""

import ctypes
import json
import os
import sys
import time

if os.environ.get("FDLINK_PYTEST_MOCK") and not os.environ.get("FDLINK_LIBCUDA"):
    os.environ["FDLINK_LIBCUDA"] = os.environ["FDLINK_PYTEST_MOCK"]
if "mock" not in os.environ.get("FDLINK_LIBCUDA", ""):
    sys.exit("torch_op_cpu.py: set FDLINK_LIBCUDA to the mock driver (libfdlink_mock_cuda.so)")

import torch  # noqa: E402

torch.set_num_threads(1)  # no OpenMP team spinning beside the measured thread

import fdlink  # noqa: E402
import fdlink.torch as ft  # noqa: E402

QUICK = "--quick" in sys.argv
CALLS = 2000 if QUICK else 20000
MUL_DECL = "mul_f32_f32: float32(float32, float32)\n"
MUL_CU = ('extern "C" __device__ int mul_f32_f32(float *r, float a, float b) '
          '{ *r = a * b; return 0; }\n')


def per_call(fn, calls=CALLS):
    for _ in range(50):
        fn()
    best = float("inf")
    for _ in range(3 if QUICK else 5):
        t = time.process_time()  # this process's CPU time: the machine may be shared
        for _ in range(calls):
            fn()
        best = min(best, (time.process_time() - t) / calls)
    return best * 1e6


# ---- the harness: mock device memory as "CUDA" tensors, the CPU key, the stream stand-ins ----

keep = []


def mock_tensor(n):
    """A float32 CPU tensor over @n floats of mock device memory (seen as cuda:0 below)."""
    b = fdlink.empty(n, "f4")
    keep.append(b)
    ptr = b.__cuda_array_interface__["data"][0]
    return torch.frombuffer((ctypes.c_float * n).from_address(ptr), dtype=torch.float32)


torch.Tensor.is_cuda = property(lambda self: True)
torch.Tensor.get_device = lambda self: 0

impls = {}
_define = ft._define


def define_cpu_too(qual, schema, impl, fake):
    op = _define(qual, schema, impl, fake)
    ft._libs[qual[0]].impl(qual[1], impl, "CPU")
    impls[qual[1]] = impl
    return op


ft._define = define_cpu_too
stream = fdlink.stream()
HANDLE = stream.handle


class _StandIn:
    cuda_stream = HANDLE


# what fdlink.torch may call for the current stream (the real ones need a GPU)
torch.cuda.current_stream = lambda device=None: _StandIn()
torch._C._cuda_getCurrentRawStream = lambda index: HANDLE
ft._raw_stream = torch._C._cuda_getCurrentRawStream


def main():
    lib = fdlink.Library(MUL_DECL, [MUL_CU], arch="sm_90")
    m = lib.map("mul_f32_f32")
    op = ft.map_op(m, "as", out=True, name="cpu_mul_out")
    impl = impls["cpu_mul_out"]
    n = 256
    x, out = mock_tensor(n), mock_tensor(n)
    x.copy_(torch.arange(n, dtype=torch.float32))
    res = {}
    m(out, x, 3.0, stream=stream, sync=False)
    res["fdlink_map_us"] = per_call(lambda: m(out, x, 3.0, stream=stream, sync=False))
    res["impl_us"] = per_call(lambda: impl(out, x, 3.0))
    res["eager_op_us"] = per_call(lambda: op(out, x, 3.0))
    out.zero_()
    c = torch.compile(lambda o, x: op(o, x, 3.0), fullgraph=True)
    c(out, x)
    assert out.tolist() == [3.0 * i for i in range(n)], "wrong result"
    res["compiled_op_us"] = per_call(lambda: c(out, x))
    cb = torch.compile(lambda x: x * 3.0, fullgraph=True)
    cb(x)
    res["compiled_builtin_us"] = per_call(lambda: cb(x))
    res["op_overhead_vs_builtin_us"] = res["compiled_op_us"] - res["compiled_builtin_us"]
    m.check()

    # dispatch: Library.impl against custom_op, a no-op operator on plain CPU tensors
    lib2 = torch.library.Library("fdlink_cpu_bench", "FRAGMENT")
    lib2.define("noop(Tensor(a!) o, Tensor x, float a) -> ()")
    lib2.impl("noop", lambda o, x, a: None, "CPU")
    torch.library.register_fake("fdlink_cpu_bench::noop", lambda o, x, a: None, lib=lib2)
    noop_lib = torch.ops.fdlink_cpu_bench.noop

    @torch.library.custom_op("fdlink_cpu_bench::noop_co", mutates_args=("o",))
    def noop_co(o: torch.Tensor, x: torch.Tensor, a: float) -> None:
        pass

    @noop_co.register_fake
    def _(o, x, a):
        return None

    xs, os_ = torch.zeros(n), torch.zeros(n)
    res["library_impl_eager_us"] = per_call(lambda: noop_lib(os_, xs, 3.0))
    res["custom_op_eager_us"] = per_call(lambda: noop_co(os_, xs, 3.0))
    cl = torch.compile(lambda o, x: noop_lib(o, x, 3.0), fullgraph=True)
    cc = torch.compile(lambda o, x: noop_co(o, x, 3.0), fullgraph=True)
    res["library_impl_compiled_us"] = per_call(lambda: cl(os_, xs))
    res["custom_op_compiled_us"] = per_call(lambda: cc(os_, xs))
    print(json.dumps({k: round(v, 2) for k, v in res.items()}, indent=1))


if __name__ == "__main__":
    main()
