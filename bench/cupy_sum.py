#!/usr/bin/env python3
"""CuPy's float32 sum and a device-to-device copy, timed as fdlink-bench times its own.

usage: python3 bench/cupy_sum.py N REPS

Fills x (N float32, the same values as fdlink-bench: (i % 1000) / 1000 - 0.5), then for each of
REPS samples times, with CUDA events, enough back-to-back `cupy.sum(x)` calls (and copies of
6 * N bytes, i.e. 12 bytes moved per element as fdlink-bench's copy) to last about 20 ms.
Prints one line per sample, `sample SUM_GBS COPY_GBS` (sum: 4 bytes read per element; copy:
bytes read + written), then `value SUM` (the sum, for verification) and `cupy VERSION`.
Exit status 3 when CuPy cannot be imported (fdlink-bench then notes it and goes on).
"""
import sys


def main():
    try:
        import cupy as cp
    except Exception as e:  # noqa: BLE001 - any import failure means "no CuPy here"
        print(f"error cannot import cupy: {e}", flush=True)
        return 3
    n = int(sys.argv[1])
    reps = int(sys.argv[2])
    x = (cp.arange(n, dtype=cp.int64) % 1000).astype(cp.float32) / cp.float32(1000) - cp.float32(0.5)
    src = cp.zeros(6 * n // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    start, end = cp.cuda.Event(), cp.cuda.Event()

    def timed(fn, count):
        start.record()
        for _ in range(count):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / count  # ms per call

    def do_sum():
        return cp.sum(x)

    def do_copy():
        dst.data.copy_from_device_async(src.data, src.nbytes)

    counts = {}
    for name, fn in (("sum", do_sum), ("copy", do_copy)):
        fn()
        one = timed(fn, 2)
        counts[name] = max(1, min(1000, int(20.0 / one) if one > 0 else 1000))
    for _ in range(reps):
        ms_sum = timed(do_sum, counts["sum"])
        ms_copy = timed(do_copy, counts["copy"])
        print(f"sample {4.0 * n / (ms_sum * 1e6):.3f} {12.0 * n / (ms_copy * 1e6):.3f}", flush=True)
    print(f"value {float(cp.sum(x)):.9g}")
    print(f"cupy {cp.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
