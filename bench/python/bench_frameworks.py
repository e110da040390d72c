#!/usr/bin/env python3
"""fdlink inside torch.compile, jax.jit and CUDA graphs, in one run on one GPU (issue 39,
docs/benchmarks.md). Every figure is a ratio against an anchor measured in the same process, and
every result is verified against NumPy (a wrong result: exit 1):

 1. torch.compile: the per-call cost (host clock over back-to-back calls, one synchronisation)
    of a tiny-input (256 float32) fdlink map operator (fdlink.torch.map_op, out= form) inside a
    torch.compile(fullgraph=True) function, against the same map launched eagerly by fdlink
    (goal <= 1.1x); the functional form, the eager operator and torch's own x * 3 compiled beside,
    and the operator's own overhead: the compiled operator less torch's compiled x * 3 and less a
    compiled no-op operator (torch.library.Library, as fdlink.torch defines its operators, and
    torch.library.custom_op), with PyTorch's two current-stream lookups timed;
 2. jax.jit: an fdlink map over 2^24 float32 (fdlink.jax.map_call) against jnp's x * 3 in jit
    (bandwidth, goal >= 0.95x), and the per-call cost of a tiny (256) call of each (goal <= 1.5x);
 3. CUDA graphs: 100 launches of a small kernel replayed as one torch.cuda graph against 100
    eager fdlink launches (reported).

usage: python3 bench/python/bench_frameworks.py [--quick]; writes bench-frameworks.json into $OUT
(or the current directory). Exit 77 without a GPU.
"""

import json
import os
import sys
import time

import numpy as np

QUICK = "--quick" in sys.argv
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
results = {}
failures = []


def per_call(fn, calls, sync):
    fn()
    sync()
    best = float("inf")
    for _ in range(3 if QUICK else 5):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / calls)
    return best


def verify(name, got, want, rtol=1e-5):
    if not np.allclose(got, want, rtol=rtol, atol=1e-5):
        failures.append(name)
        print(f"WRONG RESULT: {name}", flush=True)


def bench_torch(lib, mod):
    import torch

    import fdlink.torch as ft
    n = 256
    calls = 2000 if QUICK else 10000
    m = lib.map("mul_f32_f32")
    op_out = ft.map_op(m, "as", out=True)
    op = ft.map_op(m, "as")
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    out = torch.empty_like(x)
    s = torch.cuda.current_stream()
    fs = ft._stream(m.device, x.device.index)
    sync = torch.cuda.synchronize
    eager = per_call(lambda: m(out, x, 3.0, stream=fs, sync=False), calls, sync)
    verify("torch eager fdlink map", out.cpu().numpy(), 3 * np.arange(n))
    c_out = torch.compile(lambda o, x: op_out(o, x, 3.0), fullgraph=True)
    compiled_out = per_call(lambda: c_out(out, x), calls, sync)
    out.zero_()
    c_out(out, x)
    verify("torch.compile map_op out=", out.cpu().numpy(), 3 * np.arange(n))
    c_fun = torch.compile(lambda x: op(x, 3.0), fullgraph=True)
    compiled_fun = per_call(lambda: c_fun(x), calls, sync)
    verify("torch.compile map_op", c_fun(x).cpu().numpy(), 3 * np.arange(n))
    eager_op = per_call(lambda: op_out(out, x, 3.0), calls, sync)
    c_torch = torch.compile(lambda x: x * 3.0, fullgraph=True)
    torch_mul = per_call(lambda: c_torch(x), calls, sync)
    verify("torch.compile x*3", c_torch(x).cpu().numpy(), 3 * np.arange(n))
    del s
    # where the compiled operator's time goes: a no-op operator of the same schema defined the
    # way fdlink.torch defines its own (torch.library.Library, one Python kernel) and one made by
    # torch.library.custom_op (its Python autograd and ADInplaceOrView kernels), eager and
    # compiled; and the two current-stream lookups
    lib_noop = torch.library.Library("fdlink_bench", "FRAGMENT")
    lib_noop.define("noop(Tensor(a!) o, Tensor x, float a) -> ()")
    lib_noop.impl("noop", lambda o, x, a: None, "CUDA")
    torch.library.register_fake("fdlink_bench::noop", lambda o, x, a: None, lib=lib_noop)
    noop = torch.ops.fdlink_bench.noop.default

    @torch.library.custom_op("fdlink_bench::noop_co", mutates_args=("o",))
    def noop_co(o: torch.Tensor, x: torch.Tensor, a: float) -> None:
        pass

    noop_co.register_fake(lambda o, x, a: None)
    eager_noop = per_call(lambda: noop(out, x, 3.0), calls, sync)
    eager_noop_co = per_call(lambda: noop_co(out, x, 3.0), calls, sync)
    c_noop = torch.compile(lambda o, x: noop(o, x, 3.0), fullgraph=True)
    compiled_noop = per_call(lambda: c_noop(out, x), calls, sync)
    c_noop_co = torch.compile(lambda o, x: noop_co(o, x, 3.0), fullgraph=True)
    compiled_noop_co = per_call(lambda: c_noop_co(out, x), calls, sync)
    dev = x.device.index
    raw = torch._C._cuda_getCurrentRawStream
    lookup_obj = per_call(lambda: torch.cuda.current_stream(dev).cuda_stream, calls, lambda: None)
    lookup_raw = per_call(lambda: raw(dev), calls, lambda: None)
    results["torch"] = {
        "eager_fdlink_map_us": eager * 1e6, "compiled_op_out_us": compiled_out * 1e6,
        "compiled_op_functional_us": compiled_fun * 1e6, "eager_op_us": eager_op * 1e6,
        "compiled_torch_mul_us": torch_mul * 1e6,
        "ratio_compiled_op_vs_eager_fdlink": compiled_out / eager,
        "ratio_compiled_functional_vs_eager_fdlink": compiled_fun / eager,
        "ratio_compiled_op_vs_compiled_torch_mul": compiled_out / torch_mul,
        # the operator's own overhead: the compiled operator less torch's compiled built-in, and
        # less a compiled no-op operator (torch's floor for any Python-implemented operator)
        "op_overhead_vs_compiled_torch_mul_us": (compiled_out - torch_mul) * 1e6,
        "op_overhead_vs_compiled_noop_us": (compiled_out - compiled_noop) * 1e6,
        "eager_op_overhead_vs_eager_fdlink_us": (eager_op - eager) * 1e6,
        "eager_noop_library_us": eager_noop * 1e6, "eager_noop_custom_op_us": eager_noop_co * 1e6,
        "compiled_noop_library_us": compiled_noop * 1e6,
        "compiled_noop_custom_op_us": compiled_noop_co * 1e6,
        "stream_lookup_current_stream_us": lookup_obj * 1e6,
        "stream_lookup_raw_us": lookup_raw * 1e6}
    # CUDA graph: 100 launches of saxpy
    k = mod.kernel("saxpy")
    big = 1 << 12
    xb = torch.ones(big, device="cuda")
    yb = torch.zeros(big, device="cuda")
    grid = (big + 255) // 256
    cs = torch.cuda.Stream()
    with torch.cuda.stream(cs):
        k[grid, 256](yb, xb, 1.0, big, stream=cs)
    cs.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        h = torch.cuda.current_stream()
        for _ in range(100):
            k[grid, 256](yb, xb, 1.0, big, stream=h)
    yb.zero_()
    torch.cuda.synchronize()
    reps = 20 if QUICK else 100

    def eager100():
        for _ in range(100):
            k[grid, 256](yb, xb, 1.0, big, stream=fs)

    t_eager = per_call(eager100, reps, sync)
    t_graph = per_call(g.replay, reps, sync)
    yb.zero_()
    g.replay()
    torch.cuda.synchronize()
    verify("cuda graph replay of 100 saxpy", yb.cpu().numpy(), np.full(big, 100.0))
    results["cuda_graph"] = {"eager_100_launches_us": t_eager * 1e6,
                             "graph_replay_100_us": t_graph * 1e6,
                             "ratio_graph_vs_eager": t_graph / t_eager}


def bench_jax(lib):
    import jax
    import jax.numpy as jnp

    import fdlink.jax as fj
    mul = fj.map_call(lib.map("mul_f32_f32"), "as")
    f_fd = jax.jit(lambda x: mul(x, 3.0))
    f_jnp = jax.jit(lambda x: x * 3.0)
    n = 1 << 24
    x = jnp.arange(n, dtype=jnp.float32) / n
    want = np.asarray(x) * 3.0
    verify("jax.jit fdlink map 2^24", np.asarray(f_fd(x)), want)
    verify("jax.jit x*3 2^24", np.asarray(f_jnp(x)), want)
    reps = 20 if QUICK else 100

    def loop(f):
        def run():
            r = None
            for _ in range(reps):
                r = f(x)
            r.block_until_ready()
        return run

    t_fd = per_call(loop(f_fd), 1, lambda: None) / reps
    t_jnp = per_call(loop(f_jnp), 1, lambda: None) / reps
    gbs = lambda t: 2 * 4 * n / t / 1e9  # noqa: E731
    xs = jnp.arange(256, dtype=jnp.float32)
    calls = 2000 if QUICK else 10000
    last = {}

    def tiny(f):
        def run():
            last["r"] = f(xs)
        return run

    sync = lambda: last["r"].block_until_ready()  # noqa: E731
    c_fd = per_call(tiny(f_fd), calls, sync)
    c_jnp = per_call(tiny(f_jnp), calls, sync)
    verify("jax.jit fdlink map 256", np.asarray(f_fd(xs)), 3 * np.arange(256))
    results["jax"] = {"map_2p24_GBps": gbs(t_fd), "jnp_mul_2p24_GBps": gbs(t_jnp),
                      "ratio_bandwidth_fdlink_vs_jnp": t_jnp / t_fd,
                      "tiny_call_fdlink_us": c_fd * 1e6, "tiny_call_jnp_us": c_jnp * 1e6,
                      "ratio_tiny_call_fdlink_vs_jnp": c_fd / c_jnp}
    fj.check()


def main():
    import fdlink
    if not fdlink.devices():
        print("no GPU")
        return 77
    lib = fdlink.Library(MUL_DECL, [MUL_CU], arch=fdlink.device().arch)
    mod = lib.link(SAXPY_CU)
    for name, fn in (("torch", lambda: bench_torch(lib, mod)), ("jax", lambda: bench_jax(lib))):
        try:
            fn()
        except ImportError as e:
            results[name] = {"skipped": str(e)}
        except Exception as e:  # one framework's failure does not hide the other's figures
            results[name] = {"error": f"{type(e).__name__}: {e}"[:2000]}
            failures.append(name)
        print(name, json.dumps(results.get(name)), flush=True)
    text = json.dumps(results, indent=1)
    print(text)
    with open(os.path.join(os.environ.get("OUT", "."), "bench-frameworks.json"), "w") as f:
        f.write(text)
    if failures:
        print("failures:", failures)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
