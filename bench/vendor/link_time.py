#!/usr/bin/env python3
"""Link time of fdlink against raw nvJitLink on the same inputs (issue 34).

    python3 bench/vendor/link_time.py --fdlink build/cli/fdlink -arch sm_90 [-n 5] \
        [--fdlink-opt=--split-compile=1 ...] [--lto] INPUT...

INPUTs are files nvJitLink takes itself (PTX, cubin, fatbin, LTO-IR, host object, static
library: NVJITLINK_INPUT_ANY). Both sides are timed the same way (issue 41): each link a fresh
process, from its spawn to its exit, with nvJitLink's own cache off on both (CUDA_CACHE_DISABLE=1;
--nvjitlink-cache leaves it on for both). Raw: bench/large/rawlink.c (built here with cc):
nvJitLinkCreate(-arch=sm_NN [-lto]), nvJitLinkAddData of each file, nvJitLinkComplete. fdlink:
`fdlink link -arch=sm_NN --no-cache [--no-nvjitlink-cache] -o OUT INPUT...` (its own cache off).
Prints the median of each over -n runs (after one warm-up each), the ratio, and how both were
timed. No GPU needed; the machine's cores matter (fdlink's default splits large links over every
core).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def raw_link(exe, arch, lto, inputs, out, env):
    t0 = time.perf_counter()
    r = subprocess.run([exe, out, f"-arch={arch}", *(["-lto"] if lto else []), *inputs],
                       capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("raw nvJitLink link failed:\n" + r.stderr)
    return dt, os.path.getsize(out)


def fdlink_link(exe, arch, extra, inputs, out, env, nvjl_cache):
    t0 = time.perf_counter()
    r = subprocess.run([exe, "link", f"-arch={arch}", "--no-cache",
                        *([] if nvjl_cache else ["--no-nvjitlink-cache"]),
                        *extra, "-o", out, *inputs], capture_output=True, text=True, env=env)
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
    ap.add_argument("--nvjitlink-cache", action="store_true",
                    help="nvJitLink's own cache on for both sides (default: off for both)")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    rawlink = os.path.join(tmp, "rawlink")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(["cc", "-O2", "-o", rawlink, os.path.join(here, "..", "large", "rawlink.c"),
                    "-ldl"], check=True)
    env = dict(os.environ)
    env.pop("CUDA_CACHE_DISABLE", None)
    if not a.nvjitlink_cache:
        env["CUDA_CACHE_DISABLE"] = "1"
    out, rout = os.path.join(tmp, "out.cubin"), os.path.join(tmp, "raw.cubin")
    raw_link(rawlink, a.arch, a.lto, a.inputs, rout, env)
    fdlink_link(a.fdlink, a.arch, a.fdlink_opt, a.inputs, out, env, a.nvjitlink_cache)
    raw, fdl = [], []
    for _ in range(a.n):
        dt, rsize = raw_link(rawlink, a.arch, a.lto, a.inputs, rout, env)
        raw.append(dt)
        dt, fsize = fdlink_link(a.fdlink, a.arch, a.fdlink_opt, a.inputs, out, env,
                                a.nvjitlink_cache)
        fdl.append(dt)
    r, f = statistics.median(raw), statistics.median(fdl)
    print(f"cores {os.cpu_count()}, {a.arch}, {len(a.inputs)} inputs, fdlink options "
          f"{a.fdlink_opt or 'default'}")
    print("both sides timed alike: a fresh process per link, spawn to exit; nvJitLink's cache "
          + ("on for both" if a.nvjitlink_cache else "off for both (CUDA_CACHE_DISABLE=1)")
          + "; fdlink's own cache off (--no-cache)")
    print(f"raw nvJitLink: median {r * 1000:.0f} ms ({rsize} bytes)")
    print(f"fdlink link:   median {f * 1000:.0f} ms ({fsize} bytes)")
    print(f"ratio fdlink/raw: {f / r:.2f}x")


if __name__ == "__main__":
    main()
