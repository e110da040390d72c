#!/usr/bin/env python3
"""Link time of fdlink against raw nvJitLink on the same inputs (issue 34).

    python3 bench/vendor/link_time.py --fdlink build/cli/fdlink -arch sm_90 [-n 5] \
        [--fdlink-opt=--split-compile=1 ...] [--lto] INPUT...

INPUTs are files nvJitLink takes itself (PTX, cubin, fatbin, LTO-IR, host object, static
library: NVJITLINK_INPUT_ANY). Raw: nvJitLinkCreate(-arch=sm_NN [-lto]), nvJitLinkAddFile for
each, nvJitLinkComplete, through ctypes, in this process. fdlink: `fdlink link -arch=sm_NN
--no-cache --no-nvjitlink-cache -o OUT INPUT...` as a process (its start included: what a build
pays). Prints the median of each over -n runs (after one warm-up each) and the ratio. No GPU
needed; the machine's cores matter (fdlink's default splits large links over every core).
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time


def raw_link(lib, arch, lto, inputs):
    handle = ctypes.c_void_p()
    opts = [b"-arch=" + arch.encode()] + ([b"-lto"] if lto else [])
    arr = (ctypes.c_char_p * len(opts))(*opts)
    t0 = time.perf_counter()
    if lib.nvJitLinkCreate(ctypes.byref(handle), len(opts), arr) != 0:
        sys.exit("nvJitLinkCreate failed")
    try:
        for path in inputs:
            if lib.nvJitLinkAddFile(handle, 10, path.encode()) != 0:
                sys.exit(f"nvJitLinkAddFile {path} failed")
        rc = lib.nvJitLinkComplete(handle)
        size = ctypes.c_size_t()
        lib.nvJitLinkGetLinkedCubinSize(handle, ctypes.byref(size))
    finally:
        lib.nvJitLinkDestroy(ctypes.byref(handle))
    if rc != 0:
        sys.exit(f"raw nvJitLink link failed ({rc})")
    return time.perf_counter() - t0, size.value


def fdlink_link(exe, arch, extra, inputs, out):
    t0 = time.perf_counter()
    r = subprocess.run([exe, "link", f"-arch={arch}", "--no-cache", "--no-nvjitlink-cache",
                        *extra, "-o", out, *inputs], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("fdlink link failed:\n" + r.stderr)
    return dt, os.path.getsize(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fdlink", required=True)
    ap.add_argument("-arch", "--arch", required=True)
    ap.add_argument("-n", type=int, default=5)
    ap.add_argument("--lto", action="store_true", help="-lto for the raw link (LTO-IR inputs)")
    ap.add_argument("--fdlink-opt", action="append", default=[])
    ap.add_argument("--nvjitlink", default="libnvJitLink.so.13")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    lib = ctypes.CDLL(a.nvjitlink)
    out = os.path.join(tempfile.mkdtemp(), "out.cubin")
    raw_link(lib, a.arch, a.lto, a.inputs)
    fdlink_link(a.fdlink, a.arch, a.fdlink_opt, a.inputs, out)
    raw, fdl = [], []
    for _ in range(a.n):
        dt, rsize = raw_link(lib, a.arch, a.lto, a.inputs)
        raw.append(dt)
        dt, fsize = fdlink_link(a.fdlink, a.arch, a.fdlink_opt, a.inputs, out)
        fdl.append(dt)
    r, f = statistics.median(raw), statistics.median(fdl)
    print(f"cores {os.cpu_count()}, {a.arch}, {len(a.inputs)} inputs, fdlink options "
          f"{a.fdlink_opt or 'default'}")
    print(f"raw nvJitLink: median {r * 1000:.0f} ms ({rsize} bytes)")
    print(f"fdlink link:   median {f * 1000:.0f} ms ({fsize} bytes)")
    print(f"ratio fdlink/raw: {f / r:.2f}x")


if __name__ == "__main__":
    main()
