#!/usr/bin/env python3
"""The added cost of a launch from Python over the C library's, in one process, one driver and
one kernel (issue 30): per launch,

- a prepared launch called from Python (``p()``) against the C prepared launch (fdl_launch_run
  in a C loop),
- ``kernel[grid, block](*args)`` and ``kernel.launch(grid, block, *args)`` (arguments converted
  and checked at every call) against the C checked launch (fdl_kernel_launch_ex in a C loop,
  the arguments converted once),

with fdlink Buffers, raw pointers and scalars as arguments, and with CuPy arrays and PyTorch
tensors where those are installed. The kernels are empty (``empty`` and ``empty_args`` of
bench/kernels.cu, compiled here), so the figures are launch costs. Each figure is the median of
--rounds rounds of --reps launches. On a machine without a GPU run it against the mock driver:

    FDLINK_LIBCUDA=build/tests/gpu/libfdlink_mock_cuda.so python3 bench/python_launch.py

(the mock's launch does no GPU work, so the C figure is fdlink's own cost, and the added cost is
exactly the binding's). Prints a table, or JSON with --json.
"""

import argparse
import json
import statistics
import sys
import time

import fdlink

SRC = r'''
extern "C" __global__ void empty() {}
extern "C" __global__ void empty_args(float *a, const float *b, float *c, int n) {}
'''


def per_launch_us(fn, reps, rounds):
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn(reps)
        samples.append((time.perf_counter() - t) / reps * 1e6)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    dev = fdlink.device()
    mod = fdlink.link(SRC, arch=dev.arch, device=dev)
    k0, k4 = mod.kernel("empty"), mod.kernel("empty_args")
    bufs = [fdlink.empty(1024, "f4") for _ in range(3)]
    rows = []

    def sync():
        dev.synchronize()

    def add(name, fn, c_fn):
        fn(100)
        sync()
        py = per_launch_us(lambda n: (fn(n), sync()), a.reps, a.rounds)
        c = per_launch_us(lambda n: (c_fn(n), sync()), a.reps, a.rounds)
        rows.append({"case": name, "python_us": round(py, 4), "c_us": round(c, 4),
                     "added_us": round(py - c, 4)})

    for kname, k, args in (("empty", k0, ()),
                           ("empty_args (3 Buffers, int)", k4, (*bufs, 1024)),
                           ("empty_args (3 raw pointers, int)", k4,
                            (*(b.address for b in bufs), 1024))):
        p = k.prepare(1, 32, args)
        cbase = p._time_runs

        def prepared(n, p=p):
            for _ in range(n):
                p()
        add(f"{kname}: prepared p()", prepared, cbase)

        def checked(n, k=k, args=args):  # C: fdl_kernel_launch_ex, arguments converted once
            k._k._time_launches(n, 1, 32, 0, None, 0, *args)

        def sub(n, k=k, args=args):
            for _ in range(n):
                k[1, 32](*args)
        add(f"{kname}: kernel[grid, block](...)", sub, checked)

        def launch(n, k=k, args=args):
            for _ in range(n):
                k.launch(1, 32, *args)
        add(f"{kname}: kernel.launch(...)", launch, checked)

    for lib in ("cupy", "torch"):
        try:
            if lib == "cupy":
                import cupy
                arrs = [cupy.zeros(1024, cupy.float32) for _ in range(3)]
            else:
                import torch
                if not torch.cuda.is_available():
                    continue
                arrs = [torch.zeros(1024, device="cuda") for _ in range(3)]
        except Exception:
            continue
        def sub(n, arrs=arrs):
            for _ in range(n):
                k4[1, 32](*arrs, 1024)

        def checked(n, arrs=arrs):
            k4._k._time_launches(n, 1, 32, 0, None, 0, *arrs, 1024)
        add(f"empty_args (3 {lib} arrays, int): kernel[grid, block](...)", sub, checked)

    out = {"device": dev.info["name"], "driver": dev.info["driver_version"],
           "python": sys.version.split()[0], "reps": a.reps, "rounds": a.rounds, "rows": rows}
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"device {out['device']} (driver {out['driver']}), Python {out['python']}, "
          f"median of {a.rounds} x {a.reps} launches")
    print(f"{'case':58} {'Python us':>10} {'C us':>8} {'added us':>9}")
    for r in rows:
        print(f"{r['case']:58} {r['python_us']:10.3f} {r['c_us']:8.3f} {r['added_us']:9.3f}")


if __name__ == "__main__":
    main()
