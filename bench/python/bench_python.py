#!/usr/bin/env python3
"""fdlink from Python beside Numba-CUDA and CuPy, in one run on one GPU (docs/benchmarks.md).

usage: python3 bench/python/bench_python.py [--quick] [--reps N] [--json FILE] [--markdown FILE]
                                            [--fdlink-bench PATH] [--check]

Every figure is a ratio against an anchor measured in the same run, and every result is verified
against NumPy (a wrong result fails the run, exit 1):

 1. first result in a fresh process, empty caches (import, compile, check, link, load, launch,
    verified result of a 2^20-element map y = mul_f32_f32(x, 3)): fdlink (Library + a CUDA C
    caller linked with the function) against Numba's first call (declare_device + link= the
    same .cu + @cuda.jit; goal <= 0.5x) and against CuPy's RawKernel first call of the same
    kernel (goal <= 1.5x); each a subprocess with empty fdlink/CuPy/Numba cache directories and
    CUDA_CACHE_DISABLE=1, timed from its first line (before any import) to the verified result;
 2. the same fdlink process with a warm cache: the link a disk hit, NVRTC never run (the link's
    statistics) and whether libnvrtc/libnvJitLink were even loaded (/proc/self/maps); goal
    <= 100 ms from `import fdlink` to the verified result;
 3. launch overhead: 10^4 back-to-back one-thread launches of a 4-argument kernel with CuPy
    arrays, one synchronisation, host clock: fdlink prepared (goal <= 1.15x raw cuLaunchKernel
    from C, raw_launch.c built here with cc: fdlink-bench's baseline) and unprepared (<= 1.5x),
    CuPy RawKernel, Numba (CuPy arrays, and its own device arrays) beside; with --fdlink-bench
    (or build*/bench/fdlink-bench found) its own launch and generated-kernel tables (the C
    figures) are added to the notes;
 4. generated map and sum over 2^24 float32: fdlink's map of mul_f32_f32 against CuPy's
    ElementwiseKernel (goal >= 0.97x, CUDA events over back-to-back launches) and fdlink's
    reduction against cupy.sum (goal >= 0.95x; both returning the sum to the host each call,
    as fdlink's reduction does; cupy.sum without the read-back reported beside);
 5. the Numba bridge (fdlink.numba.declare_device): first call in a fresh process and launch
    cost against plain Numba with link= (goal: within 5%).

Writes bench-python.json and bench-python.md into $OUT if set, else the current directory
(--json/--markdown to name them). Exit 0 when everything ran and verified (with --check: and
every goal met), 1 a failure, 77 without a GPU. Total about a minute on an H100/H200.
"""

import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

DECL = "mul_f32_f32: float32(float32, float32)\n"
FUNC_CU = ('extern "C" __device__ int mul_f32_f32(float *r, float a, float b)\n'
           '{ *r = a * b; return 0; }\n')
CALLER_CU = r'''
extern "C" __global__ void scale(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float r;
    if (i < n && mul_f32_f32(&r, x[i], 3.0f) == 0)
        y[i] = r;
}
'''
EMPTY_ARGS_CU = r'''
extern "C" __global__ void empty_args(float *out, const float *a, const float *b, int n)
{
    if (n < 0)
        out[0] = a[0] + b[0];
}
'''
N_FIRST = 1 << 20

# ---- children: one fresh process per first-result sample --------------------------------------
# Each prints one JSON line; "ms" is from the child's first statement to the verified result.

CHILD_PRELUDE = "import time as _t; _T0 = _t.perf_counter()\nimport json, os, sys\n"

CHILD_FDLINK = CHILD_PRELUDE + r'''
import numpy as np
_T1 = _t.perf_counter()
_steps = []
def _step(name):
    _steps.append((name, _t.perf_counter()))
import fdlink
_step("import fdlink")
dev = fdlink.device()
_step("driver: cuInit, device, context (fdlink.device())")
lib = fdlink.Library(os.environ["B_DECL"], [os.environ["B_FUNC"]], check=False)
_step("Library (compile cache lookup)")
mod = lib.link(open(os.environ["B_CALLER"]).read())
_step("link (link cache lookup)")
k = mod.kernel("scale")
_step("module load, kernel lookup")
n = int(os.environ["B_N"])
x = (np.arange(n, dtype=np.int64) % 1000).astype(np.float32) / np.float32(1000) - np.float32(0.5)
_step("input made (NumPy, 4 MiB)")
dx = fdlink.to_device(x)
dy = fdlink.empty(n, "float32")
_step("input copied to the GPU, output allocated")
k[(n + 255) // 256, 256](dy, dx, np.int32(n))
mod.device.synchronize()
_step("launch and wait")
y = fdlink.to_host(dy)
ok = bool(np.array_equal(y, x * np.float32(3)))
_step("read back and verify")
ms = (_t.perf_counter() - _T0) * 1e3
steps, prev = {}, _T1
for name, t in _steps:
    steps[name] = (t - prev) * 1e3
    prev = t
info = mod.info
maps = open("/proc/self/maps").read()
print(json.dumps({"ms": ms, "ms_from_import": (_t.perf_counter() - _T1) * 1e3, "ok": ok,
                  "cache": info["cache"], "nvrtc_compiled": info["nvrtc_compiled"],
                  "nvrtc_cache_hits": info["nvrtc_cache_hits"],
                  "nvrtc_loaded": "libnvrtc" in maps, "nvjitlink_loaded": "libnvJitLink" in maps,
                  "steps": steps,
                  "stats": fdlink.cache.stats()}))
'''

# The driver's own start, without fdlink: cuInit, the device, its primary context made current,
# one allocation (what any CUDA program pays before its first launch), through ctypes.
CHILD_DRIVER = CHILD_PRELUDE + r'''
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
_T1 = _t.perf_counter()
steps = {}
def chk(r, what):
    if r != 0:
        raise SystemExit(f"{what}: CUresult {r}")
chk(cu.cuInit(0), "cuInit")
t = _t.perf_counter(); steps["cuInit"] = (t - _T1) * 1e3
d, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
chk(cu.cuDeviceGet(ctypes.byref(d), 0), "cuDeviceGet")
chk(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), d), "cuDevicePrimaryCtxRetain")
chk(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
t2 = _t.perf_counter(); steps["primary context"] = (t2 - t) * 1e3
chk(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 22)), "cuMemAlloc")
t3 = _t.perf_counter(); steps["first cuMemAlloc (4 MiB)"] = (t3 - t2) * 1e3
print(json.dumps({"ms": (t3 - _T1) * 1e3, "ok": True, "steps": steps}))
'''

CHILD_CUPY = CHILD_PRELUDE + r'''
import numpy as np
import cupy as cp
src = open(os.environ["B_FUNC"]).read() + open(os.environ["B_CALLER"]).read()
k = cp.RawKernel(src, "scale")
n = int(os.environ["B_N"])
x = (np.arange(n, dtype=np.int64) % 1000).astype(np.float32) / np.float32(1000) - np.float32(0.5)
dx = cp.asarray(x)
dy = cp.empty(n, dtype=cp.float32)
k(((n + 255) // 256,), (256,), (dy, dx, np.int32(n)))
y = cp.asnumpy(dy)
ok = bool(np.array_equal(y, x * np.float32(3)))
print(json.dumps({"ms": (_t.perf_counter() - _T0) * 1e3, "ok": ok}))
'''

# numba-cuda 0.30.4 (numba_cuda/np/arrayobj.py) refers to numpy.row_stack, which NumPy 2.5 removed
# (an alias of vstack, deprecated since 2.0): without it no @cuda.jit kernel compiles. The
# benchmark puts the alias back before Numba is imported, here and in its Numba children; the
# fdlink package itself never patches NumPy.
NUMPY_SHIM = ("import numpy as _np\n"
              "if not hasattr(_np, 'row_stack'):\n"
              "    _np.row_stack = _np.vstack\n")

CHILD_NUMBA = CHILD_PRELUDE + NUMPY_SHIM + r'''
import numpy as np
from numba import cuda
if os.environ.get("B_BRIDGE") == "1":
    import fdlink.numba
    mul = fdlink.numba.declare_device(os.environ["B_DECL"], [os.environ["B_FUNC"]]).mul_f32_f32
else:
    mul = cuda.declare_device("mul_f32_f32", "float32(float32, float32)",
                              link=[os.environ["B_FUNC"]])

@cuda.jit
def scale(y, x):
    i = cuda.grid(1)
    if i < x.size:
        y[i] = mul(x[i], 3.0)

n = int(os.environ["B_N"])
x = (np.arange(n, dtype=np.int64) % 1000).astype(np.float32) / np.float32(1000) - np.float32(0.5)
dx = cuda.to_device(x)
dy = cuda.device_array(n, dtype=np.float32)
scale[(n + 255) // 256, 256](dy, dx)
y = dy.copy_to_host()
ok = bool(np.array_equal(y, x * np.float32(3)))
print(json.dumps({"ms": (_t.perf_counter() - _T0) * 1e3, "ok": ok}))
'''


class Failure(Exception):
    pass


def run_child(code, env_extra, timeout=180):
    env = dict(os.environ)
    env.update(env_extra)
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=timeout)
    wall = (time.perf_counter() - t0) * 1e3
    if r.returncode != 0:
        raise Failure(f"child failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1]
    d = json.loads(line)
    d["wall_ms"] = wall
    if not d.get("ok"):
        raise Failure(f"child's result is wrong: {d}")
    return d


def med(xs):
    return statistics.median(xs)


def summary(xs):
    xs = sorted(xs)
    return {"median": med(xs), "min": xs[0], "max": xs[-1], "samples": xs}


class Report:
    def __init__(self):
        self.rows = []
        self.notes = []

    def ratio(self, bench, name, value, unit, anchor_name, anchor, goal_op, goal, samples=None,
              anchor_samples=None, note=""):
        r = value / anchor if anchor else float("nan")
        met = None
        if goal is not None:
            met = r <= goal if goal_op == "<=" else r >= goal
        self.rows.append({"bench": bench, "name": name, "value": value, "unit": unit,
                          "anchor": anchor_name, "anchor_value": anchor, "ratio": r,
                          "goal": None if goal is None else f"{goal_op} {goal}", "met": met,
                          "samples": samples, "anchor_samples": anchor_samples, "note": note})
        mark = "" if met is None else ("  goal met" if met else "  GOAL MISSED")
        goal_s = "" if goal is None else f" (goal {goal_op} {goal})"
        print(f"  {name}: {value:.4g} {unit} vs {anchor_name} {anchor:.4g} {unit}: "
              f"{r:.3f}x{goal_s}{mark}", flush=True)

    def figure(self, bench, name, value, unit, goal_op=None, goal=None, samples=None, note=""):
        met = None
        if goal is not None:
            met = value <= goal if goal_op == "<=" else value >= goal
        self.rows.append({"bench": bench, "name": name, "value": value, "unit": unit,
                          "anchor": None, "anchor_value": None, "ratio": None,
                          "goal": None if goal is None else f"{goal_op} {goal}", "met": met,
                          "samples": samples, "anchor_samples": None, "note": note})
        goal_s = "" if goal is None else f" (goal {goal_op} {goal})"
        mark = "" if met is None else ("  goal met" if met else "  GOAL MISSED")
        print(f"  {name}: {value:.4g} {unit}{goal_s}{mark}", flush=True)


# ---- 1, 2, 5a: first results in fresh processes ------------------------------------------------

def bench_first(rep, files, reps, tmp):
    print("1. first result in a fresh process, empty caches (ms, import to verified result)",
          flush=True)
    kinds = ["fdlink", "cupy", "numba", "bridge", "bridge_warm"]
    res = {k: [] for k in kinds}
    # bridge_warm: the bridge with fdlink's cache filled (the CUDA C compile and the check come
    # from it), Numba's own caches empty as for the others
    warm_bridge_dir = tempfile.mkdtemp(prefix="bridge-warm-", dir=tmp)
    run_child(CHILD_NUMBA, {"FDLINK_CACHE_DIR": warm_bridge_dir, "CUDA_CACHE_DISABLE": "1",
                            "B_BRIDGE": "1", **files})
    for i in range(reps):
        order = kinds[i % len(kinds):] + kinds[:i % len(kinds)]  # rotating, drift shared
        for k in order:
            d = tempfile.mkdtemp(prefix=f"cold-{k}-", dir=tmp)
            env = {"FDLINK_CACHE_DIR": warm_bridge_dir if k == "bridge_warm" else
                   os.path.join(d, "fdlink"),
                   "CUPY_CACHE_DIR": os.path.join(d, "cupy"),
                   "NUMBA_CACHE_DIR": os.path.join(d, "numba"),
                   "CUDA_CACHE_DISABLE": "1", **files}
            code = {"fdlink": CHILD_FDLINK, "cupy": CHILD_CUPY, "numba": CHILD_NUMBA,
                    "bridge": CHILD_NUMBA, "bridge_warm": CHILD_NUMBA}[k]
            if k.startswith("bridge"):
                env["B_BRIDGE"] = "1"
            r = run_child(code, env)
            if k == "fdlink" and (r["cache"] != "miss" or r["nvrtc_compiled"] == 0):
                raise Failure(f"the cold fdlink child did not compile and link: {r}")
            res[k].append(r)
    ms = {k: [r["ms"] for r in v] for k, v in res.items()}
    f = med(ms["fdlink"])
    rep.ratio("first", "fdlink first result / Numba first call", f, "ms",
              "Numba declare_device + link= + @cuda.jit", med(ms["numba"]), "<=", 0.5,
              ms["fdlink"], ms["numba"])
    rep.ratio("first", "fdlink first result / CuPy RawKernel first call", f, "ms",
              "CuPy RawKernel", med(ms["cupy"]), "<=", 1.5, ms["fdlink"], ms["cupy"],
              note="fdlink also checks the declaration and links two units")
    rep.ratio("bridge", "bridge first call / plain Numba first call", med(ms["bridge"]), "ms",
              "Numba declare_device + link=", med(ms["numba"]), "<=", 1.05, ms["bridge"],
              ms["numba"], note="the bridge adds the check; fdlink's cache was empty")
    rep.ratio("bridge", "bridge first call, warm fdlink cache / plain Numba first call",
              med(ms["bridge_warm"]), "ms", "Numba declare_device + link=", med(ms["numba"]),
              None, None, ms["bridge_warm"], ms["numba"])
    rep.notes.append("first results, wall time of each child process (spawn to exit, ms): " +
                     ", ".join(f"{k} {med([r['wall_ms'] for r in v]):.0f}"
                               for k, v in res.items()))

    print("2. warm fdlink cache, fresh process", flush=True)
    d = tempfile.mkdtemp(prefix="warm-", dir=tmp)
    env = {"FDLINK_CACHE_DIR": d, "CUDA_CACHE_DISABLE": "1", **files}
    run_child(CHILD_FDLINK, env)  # fills the cache
    warm = []
    for _ in range(reps):
        r = run_child(CHILD_FDLINK, env)
        if r["cache"] != "disk" or r["nvrtc_compiled"] != 0:
            raise Failure(f"the warm child compiled or linked: {r}")
        warm.append(r)
    rep.figure("warm", "warm cache: import fdlink to verified result",
               med([r["ms_from_import"] for r in warm]), "ms", "<=", 100,
               [r["ms_from_import"] for r in warm],
               note=f"link cache {warm[-1]['cache']}, NVRTC compiles 0 "
                    f"({warm[-1]['nvrtc_cache_hits']} compile-cache hits), libnvrtc loaded: "
                    f"{warm[-1]['nvrtc_loaded']}, libnvJitLink loaded: "
                    f"{warm[-1]['nvjitlink_loaded']}")
    rep.figure("warm", "warm cache: process's first statement to verified result (numpy "
               "import included)", med([r["ms"] for r in warm]), "ms",
               samples=[r["ms"] for r in warm])
    # where the time goes: each step's median, and the driver's own start without fdlink
    drv = [run_child(CHILD_DRIVER, {}) for _ in range(reps)]
    drv_ms = med([r["ms"] for r in drv])
    rep.figure("warm", "the driver alone (ctypes): cuInit, primary context, first cuMemAlloc",
               drv_ms, "ms", samples=[r["ms"] for r in drv])
    steps = "; ".join(f"{k} {med([r['steps'][k] for r in warm]):.1f}"
                      for k in warm[0]["steps"])
    dsteps = "; ".join(f"{k} {med([r['steps'][k] for r in drv]):.1f}"
                       for k in drv[0]["steps"])
    rep.notes.append(f"warm cache, where the time goes (median ms of {reps} fresh processes): "
                     f"{steps}. The driver alone, no fdlink, in a fresh process: {dsteps} "
                     f"(total {drv_ms:.1f} ms)")
    print(f"  steps (ms): {steps}\n  driver alone (ms): {dsteps}", flush=True)


# ---- 3, 5b: launch overhead --------------------------------------------------------------------

def host_launches(fn, launches, sync):
    t0 = time.perf_counter()
    for _ in range(launches):
        fn()
    sync()
    return (time.perf_counter() - t0) * 1e6 / launches


def find_fdlink_bench(arg):
    if arg:
        return arg
    for p in sorted(glob.glob(os.path.join(ROOT, "build*", "bench", "fdlink-bench"))):
        if os.access(p, os.X_OK):
            return p
    return None


def bench_launch(rep, launches, reps, tmp, fdlink_bench):
    import cupy as cp
    import numpy as np
    from numba import cuda

    import fdlink
    import fdlink.numba

    print(f"3. launch overhead: {launches} one-thread launches of a 4-argument kernel, "
          "CuPy arrays (us a launch)", flush=True)
    mod = fdlink.link(EMPTY_ARGS_CU)
    k = mod.kernel("empty_args")
    cubin = os.path.join(tmp, "empty_args.cubin")
    with open(cubin, "wb") as f:
        f.write(mod.cubin)
    out, a, b = (cp.zeros(256, dtype=cp.float32) for _ in range(3))
    n = np.int32(256)
    prepared = k.prepare(1, 1, (out, a, b, n))
    cfg = k[1, 1]
    rk = cp.RawKernel(EMPTY_ARGS_CU, "empty_args")

    @cuda.jit
    def nk(o, x, y, m):
        if m < 0:
            o[0] = x[0] + y[0]

    na, nb, no = cuda.to_device(np.zeros(256, np.float32)), cuda.to_device(
        np.zeros(256, np.float32)), cuda.device_array(256, np.float32)
    dev = mod.device
    methods = {
        "fdlink prepared": (lambda: prepared(), dev.synchronize),
        "fdlink unprepared": (lambda: cfg(out, a, b, n), dev.synchronize),
        "CuPy RawKernel": (lambda: rk((1,), (1,), (out, a, b, n)), cp.cuda.Device().synchronize),
        "Numba, CuPy arrays": (lambda: nk[1, 1](out, a, b, 256), cuda.synchronize),
        "Numba, its device arrays": (lambda: nk[1, 1](no, na, nb, 256), cuda.synchronize),
    }
    for fn, sync in methods.values():  # warm-up (and Numba's compile)
        for _ in range(1000):
            fn()
        sync()
    samples = {m: [] for m in methods}
    names = list(methods)
    for i in range(reps):
        for m in names[i % len(names):] + names[:i % len(names)]:
            samples[m].append(host_launches(methods[m][0], launches, methods[m][1]))
    # the C anchor, built and run here
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise Failure("no C compiler (cc) to build the raw cuLaunchKernel anchor")
    exe = os.path.join(tmp, "raw_launch")
    subprocess.run([cc, "-O2", "-o", exe, os.path.join(HERE, "raw_launch.c"), "-ldl"],
                   check=True)
    r = subprocess.run([exe, cubin, "empty_args", str(launches), str(reps)], capture_output=True,
                       text=True, check=False)
    if r.returncode != 0:
        raise Failure(f"raw_launch: {r.stderr.strip()}")
    raw = [float(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("sample ")]
    raw_m = med(raw)
    rep.figure("launch", "raw cuLaunchKernel from C (raw_launch.c)", raw_m, "us", samples=raw)
    rep.ratio("launch", "fdlink prepared / raw C", med(samples["fdlink prepared"]), "us",
              "raw cuLaunchKernel (C)", raw_m, "<=", 1.15, samples["fdlink prepared"], raw)
    rep.ratio("launch", "fdlink unprepared / raw C", med(samples["fdlink unprepared"]), "us",
              "raw cuLaunchKernel (C)", raw_m, "<=", 1.5, samples["fdlink unprepared"], raw)
    for m in ("CuPy RawKernel", "Numba, CuPy arrays", "Numba, its device arrays"):
        rep.ratio("launch", f"{m} / raw C", med(samples[m]), "us", "raw cuLaunchKernel (C)",
                  raw_m, None, None, samples[m], raw)
    for m in ("fdlink prepared", "fdlink unprepared"):
        rep.ratio("launch", f"{m} / CuPy RawKernel", med(samples[m]), "us", "CuPy RawKernel",
                  med(samples["CuPy RawKernel"]), "<=", 1.0, samples[m],
                  samples["CuPy RawKernel"], note="goal: ahead of CuPy")
    fb = find_fdlink_bench(fdlink_bench)
    if fb:
        try:  # run where it was built (it finds its kernels there), its table from stdout
            r = subprocess.run([fb, "--only", "launch,generated", "--launches", str(launches),
                                "--no-files"], capture_output=True, text=True,
                               cwd=os.path.dirname(os.path.abspath(fb)), timeout=300,
                               check=False)
            rep.notes.append(f"fdlink-bench --only launch,generated ({fb}), the C figures "
                             f"beside these, exit {r.returncode}; its table:\n" +
                             textwrap.indent(r.stdout.strip()[-4000:], "    "))
        except subprocess.TimeoutExpired:
            rep.notes.append(f"fdlink-bench ({fb}) did not finish in 300 s")
    else:
        rep.notes.append("fdlink-bench not found (build*/bench/fdlink-bench): the C anchor is "
                         "raw_launch.c alone")

    # 5b: the bridge's kernel against plain Numba's, both linking mul_f32_f32
    print("5. Numba bridge launch against plain Numba with link= (us a launch, Numba arrays)",
          flush=True)
    fpath = os.path.join(tmp, "mul.cu")
    bridged = fdlink.numba.declare_device(DECL, [FUNC_CU]).mul_f32_f32
    plain = cuda.declare_device("mul_f32_f32", "float32(float32, float32)", link=[fpath])

    def make(fn):
        @cuda.jit
        def kk(y, x):
            i = cuda.grid(1)
            if i < x.size:
                y[i] = fn(x[i], 3.0)
        return kk

    kb, kp = make(bridged), make(plain)
    xs = np.arange(256, dtype=np.float32)
    dx, dyb, dyp = cuda.to_device(xs), cuda.device_array(256, np.float32), cuda.device_array(
        256, np.float32)
    kb[1, 256](dyb, dx)
    kp[1, 256](dyp, dx)
    for y in (dyb, dyp):
        if not np.array_equal(y.copy_to_host(), xs * np.float32(3)):
            raise Failure("a Numba kernel through mul_f32_f32 gave a wrong result")
    bm = {"bridge": (lambda: kb[1, 256](dyb, dx), cuda.synchronize),
          "plain": (lambda: kp[1, 256](dyp, dx), cuda.synchronize)}
    # the same Numba machinery launches both: many short rounds, interleaved (the order
    # alternating), so that drift and noise fall on both alike; medians of the rounds
    for fn, sync in bm.values():
        for _ in range(1000):
            fn()
        sync()
    bs = {m: [] for m in bm}
    rounds = max(8 * reps, 40)
    per = max(launches // 10, 100)
    pair = []
    for i in range(rounds):
        for m in (("bridge", "plain") if i % 2 == 0 else ("plain", "bridge")):
            bs[m].append(host_launches(bm[m][0], per, bm[m][1]))
        pair.append(bs["bridge"][-1] / bs["plain"][-1])
    rep.ratio("bridge", "bridge kernel launch / plain Numba link= kernel launch",
              med(bs["bridge"]), "us", "plain Numba", med(bs["plain"]), "<=", 1.05, bs["bridge"],
              bs["plain"], note=f"{rounds} interleaved rounds of {per} launches each; median of "
              f"the rounds' ratios {med(pair):.3f}, quartiles "
              f"{statistics.quantiles(pair, n=4)[0]:.3f}-{statistics.quantiles(pair, n=4)[2]:.3f}")


# ---- 4: generated map and sum ------------------------------------------------------------------

def events_time(cp, fn, count):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(count):
        fn()
    e.record()
    e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / count  # ms a call


def bench_generated(rep, reps, quick):
    import cupy as cp
    import numpy as np

    import fdlink

    n = 1 << (22 if quick else 24)
    print(f"4. generated map and sum over {n} float32 (GB/s)", flush=True)
    lib = fdlink.Library(DECL, [FUNC_CU])
    fmap = lib.map("mul_f32_f32", "aa")
    fsum = fdlink.kernels.reduction("float32", "const float *x", "x[i]", "sum")
    ek = cp.ElementwiseKernel("float32 a, float32 b", "float32 o", "o = a * b", "mul_ew")
    xh = (np.arange(n, dtype=np.int64) % 1000).astype(np.float32) / np.float32(1000) - \
        np.float32(0.5)
    a = cp.asarray(xh)
    b = cp.asarray(np.random.default_rng(3).standard_normal(n).astype(np.float32))
    o1, o2 = cp.empty(n, cp.float32), cp.empty(n, cp.float32)
    stream = cp.cuda.get_current_stream()
    fmap(o1, a, b, stream=stream, sync=False)
    ek(a, b, o2)
    want = cp.asnumpy(a) * cp.asnumpy(b)
    if not (np.array_equal(cp.asnumpy(o1), want) and np.array_equal(cp.asnumpy(o2), want)):
        raise Failure("a map gave a wrong product")
    # the sums' input: 0 and 0.5 alternating, so that every partial sum in any order is a
    # multiple of 0.5 below 2^23, exact in float32: each sum must equal NumPy's exactly
    sh = (np.arange(n, dtype=np.int64) % 2).astype(np.float32) * np.float32(0.5)
    s_in = cp.asarray(sh)
    ref = float(np.sum(sh.astype(np.float64)))
    for v, who in ((fsum(s_in), "fdlink's sum"), (float(cp.sum(s_in)), "cupy.sum")):
        if v != ref:
            raise Failure(f"{who} = {v}, NumPy's = {ref}")
    maps = {"fdlink map": lambda: fmap(o1, a, b, stream=stream, sync=False),
            "CuPy ElementwiseKernel": lambda: ek(a, b, o2)}
    counts = {m: max(1, int(20.0 / max(events_time(cp, f, 3), 1e-3))) for m, f in maps.items()}
    ms = {m: [] for m in maps}
    res = cp.empty(1, cp.float32)
    sums = {"fdlink sum": lambda: fsum(s_in),
            "cupy.sum (to the host)": lambda: float(cp.sum(s_in)),
            "cupy.sum (no read-back)": lambda: cp.sum(s_in),
            "fdlink sum (no read-back)": lambda: fsum(s_in, out=res, stream=stream)}
    ss = {m: [] for m in sums}
    for i in range(reps):
        order = list(maps) if i % 2 == 0 else list(maps)[::-1]
        for m in order:
            ms[m].append(12.0 * n / (events_time(cp, maps[m], counts[m]) * 1e6))
        for m in (list(sums) if i % 2 == 0 else list(sums)[::-1]):
            if m.endswith("(no read-back)"):
                ss[m].append(4.0 * n / (events_time(cp, sums[m], 20) * 1e6))
            else:
                t0 = time.perf_counter()
                for _ in range(20):
                    sums[m]()
                ss[m].append(4.0 * n / ((time.perf_counter() - t0) / 20 * 1e9))
    # verify what the timed runs left, and the sums once more
    if not (np.array_equal(cp.asnumpy(o1), want) and np.array_equal(cp.asnumpy(o2), want)):
        raise Failure("a map gave a wrong product in the timed runs")
    fsum.check()
    if fsum(s_in) != ref or float(cp.sum(s_in)) != ref or float(res[0]) != ref:
        raise Failure("a sum changed in the timed runs")
    rep.ratio("generated", "fdlink map / CuPy ElementwiseKernel", med(ms["fdlink map"]), "GB/s",
              "CuPy ElementwiseKernel", med(ms["CuPy ElementwiseKernel"]), ">=", 0.97,
              ms["fdlink map"], ms["CuPy ElementwiseKernel"], note="12 bytes an element")
    rep.ratio("generated", "fdlink sum / cupy.sum (both to the host)", med(ss["fdlink sum"]),
              "GB/s", "cupy.sum + float()", med(ss["cupy.sum (to the host)"]), ">=", 0.95,
              ss["fdlink sum"], ss["cupy.sum (to the host)"], note="4 bytes an element")
    rep.ratio("generated", "fdlink sum / cupy.sum without read-back", med(ss["fdlink sum"]),
              "GB/s", "cupy.sum (events)", med(ss["cupy.sum (no read-back)"]), None, None,
              ss["fdlink sum"], ss["cupy.sum (no read-back)"])
    rep.ratio("generated", "fdlink sum kernel / cupy.sum kernel (both without read-back)",
              med(ss["fdlink sum (no read-back)"]), "GB/s", "cupy.sum (events)",
              med(ss["cupy.sum (no read-back)"]), None, None, ss["fdlink sum (no read-back)"],
              ss["cupy.sum (no read-back)"], note="fdlink: out= a CuPy array, in CuPy's stream, "
              "nothing waits (events around 20 calls)")


# ---- output ------------------------------------------------------------------------------------

def environment():
    env = {"python": platform.python_version(), "machine": platform.machine()}
    try:
        import fdlink
        env["fdlink"] = fdlink.__version__
        env.update({f"fdlink_{k}": v for k, v in fdlink.versions().items()})
        env["device"] = fdlink.device().info
    except Exception as e:  # noqa: BLE001
        env["fdlink_error"] = str(e)
    for m in ("numpy", "cupy", "numba", "numba_cuda"):
        try:
            env[m] = __import__(m).__version__
        except Exception:  # noqa: BLE001
            env[m] = None
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        env["nvidia_smi"] = r.stdout.strip()
    except Exception:  # noqa: BLE001
        env["nvidia_smi"] = None
    return env


def markdown(env, rows, notes, seconds):
    out = ["# fdlink from Python beside Numba and CuPy (bench/python/bench_python.py)", "",
           f"Card: {env.get('nvidia_smi')}; Python {env['python']}, fdlink {env.get('fdlink')}, "
           f"NumPy {env.get('numpy')}, CuPy {env.get('cupy')}, Numba {env.get('numba')}, "
           f"numba-cuda {env.get('numba_cuda')}; driver {env.get('fdlink_driver')}, "
           f"nvJitLink {env.get('fdlink_nvjitlink')}. Run took {seconds:.0f} s.", "",
           "| bench | figure | value | anchor | anchor value | ratio | goal | met |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.3f}x"
        av = "" if r["anchor_value"] is None else f"{r['anchor_value']:.4g} {r['unit']}"
        met = "" if r["met"] is None else ("yes" if r["met"] else "**no**")
        out.append(f"| {r['bench']} | {r['name']} | {r['value']:.4g} {r['unit']} | "
                   f"{r['anchor'] or ''} | {av} | {ratio} | {r['goal'] or ''} | {met} |")
    notes_rows = [f"- {r['name']}: {r['note']}" for r in rows if r["note"]]
    if notes_rows or notes:
        out += ["", "Notes:", ""] + notes_rows + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def main():
    exec(NUMPY_SHIM, {})  # before Numba is imported (see NUMPY_SHIM)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples, 2^22 elements in 4")
    ap.add_argument("--reps", type=int, default=None, help="samples a figure (default 5)")
    ap.add_argument("--launches", type=int, default=10000)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--fdlink-bench", help="fdlink-bench, for its own raw launch figure")
    ap.add_argument("--only", default="first,launch,generated",
                    help="comma list of first, launch, generated")
    ap.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = ap.parse_args()
    reps = args.reps or (3 if args.quick else 5)
    out_dir = os.environ.get("OUT") or os.getcwd()
    jpath = args.json or os.path.join(out_dir, "bench-python.json")
    mpath = args.markdown or os.path.join(out_dir, "bench-python.md")
    try:
        import fdlink
        if fdlink.device_count() < 1:
            raise RuntimeError("no device")
    except Exception as e:  # noqa: BLE001
        print(f"skipped: no GPU ({e})")
        return 77
    t_start = time.perf_counter()
    rep = Report()
    tmp = tempfile.mkdtemp(prefix="fdlink-bench-python-")
    files = {}
    for key, name, text in (("B_DECL", "mul.decl", DECL), ("B_FUNC", "mul.cu", FUNC_CU),
                            ("B_CALLER", "caller.cu", CALLER_CU)):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(text)
        files[key] = p
    files["B_N"] = str(N_FIRST)
    only = set(args.only.split(","))
    status = 0
    try:
        if "first" in only:
            bench_first(rep, files, reps, tmp)
        if "launch" in only:
            bench_launch(rep, args.launches, reps, tmp, args.fdlink_bench)
        if "generated" in only:
            bench_generated(rep, reps, args.quick)
    except Failure as e:
        print(f"FAILED: {e}", flush=True)
        rep.notes.append(f"FAILED: {e}")
        status = 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.perf_counter() - t_start
    env = environment()
    doc = {"environment": env, "seconds": seconds, "results": rep.rows, "notes": rep.notes,
           "ok": status == 0}
    with open(jpath + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(jpath + ".tmp", jpath)
    with open(mpath + ".tmp", "w") as f:
        f.write(markdown(env, rep.rows, rep.notes, seconds))
    os.replace(mpath + ".tmp", mpath)
    print(f"wrote {jpath} and {mpath} ({seconds:.0f} s)")
    missed = [r["name"] for r in rep.rows if r["met"] is False]
    if missed:
        print("goals missed: " + "; ".join(missed))
        if args.check and status == 0:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
