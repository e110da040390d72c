#!/usr/bin/env python3
"""The linker dies with fdlink (issue 35). For SIGINT, SIGTERM, SIGHUP and SIGKILL sent to the
fdlink process alone while its isolated linker runs (a stand-in nvJitLink that says its process id
on a pipe, then waits for ever): fdlink ends by that signal (the shell's status 128+N: 130, 143,
129, 137), its linker ends too, and nothing is left in the folder (no output, no temporary).

Event-driven: the test waits for the linker's "I exist" on the pipe, and for the pipe's end of
file, which comes only when every process holding its write end (fdlink and its linker) is gone.
The limits below only keep a broken build from hanging the run; no verdict depends on them.
  signals.py FDLINK FAKE_NVJITLINK DATA_DIR"""
import os
import select
import signal
import subprocess
import sys
import tempfile

fdlink, fake, data = (os.path.abspath(a) for a in sys.argv[1:4])
bad = 0


def fail(msg):
    global bad
    bad += 1
    print("signals: " + msg, file=sys.stderr)


def read_until(fd, want_eof, limit=120.0):
    """What the pipe gives: one line, or everything up to its end of file."""
    got = b""
    while True:
        ready, _, _ = select.select([fd], [], [], limit)
        if not ready:
            return None  # a hang: reported as a failure by the caller
        chunk = os.read(fd, 4096)
        if not chunk:
            return got
        got += chunk
        if not want_eof and b"\n" in got:
            return got


for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL):
    name = signal.Signals(sig).name
    with tempfile.TemporaryDirectory() as work:
        for f in ("caller.ptx", "mul.ptx"):
            with open(os.path.join(data, "link", f), "rb") as src, \
                    open(os.path.join(work, f), "wb") as dst:
                dst.write(src.read())
        before = sorted(os.listdir(work))
        r, w = os.pipe()
        env = dict(os.environ, FDLINK_NVJITLINK=fake, FDL_FAKE_HANG_FD=str(w),
                   FDLINK_CACHE_DIR=os.path.join(work, "cache"))
        p = subprocess.Popen([fdlink, "link", "-arch=sm_90", "caller.ptx", "mul.ptx",
                              "-o", "out.cubin"], cwd=work, env=env, pass_fds=[w],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(w)
        line = read_until(r, False)
        if not line:
            p.kill()
            out, err = p.communicate()
            fail(f"{name}: the linker never started: {err.decode(errors='replace').strip()}")
            os.close(r)
            continue
        child = int(line.split()[0])
        if child == p.pid:
            fail(f"{name}: the link is not isolated (nvJitLink runs in fdlink itself)")
        os.kill(p.pid, sig)  # fdlink alone, not its process group
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            fail(f"{name}: fdlink did not end")
        status = p.returncode if p.returncode >= 0 else 128 - p.returncode
        if status != 128 + sig:
            fail(f"{name}: fdlink's status is {status}, not {128 + sig}")
        rest = read_until(r, True)
        os.close(r)
        if rest is None:
            fail(f"{name}: the linker (process {child}) still runs after fdlink ended")
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = sorted(set(os.listdir(work)) - set(before) - {"cache"})
        if left:
            fail(f"{name}: left behind: {left}")
        cache = os.path.join(work, "cache")
        temps = [n for n in os.listdir(cache) if ".tmp." in n] if os.path.isdir(cache) else []
        if temps:
            fail(f"{name}: temporaries left in the cache: {temps}")
        if not bad:
            print(f"signals: {name}: fdlink ended ({status}), its linker too, nothing left")

sys.exit(1 if bad else 0)
