#!/usr/bin/env python3
"""Differential run of two fdlink CLIs: the same argument vectors through both, the results
compared (a structure change must not change behaviour; issue 42).

    python3 tests/cli/differential.py OLD_FDLINK NEW_FDLINK BUILD_DIR [--extra FILE] [-R REGEX]

The argument vectors are every golden test and every case of the bad-input catalogue that ctest
knows in BUILD_DIR (`ctest --show-only=json-v1`: their runners, tests/cli/run_golden.cmake and
run_bad.cmake, with FDLINK_UPDATE_GOLDEN=1 write what they got instead of comparing), plus the
lines of --extra (one argument vector a line, split as a shell would, run in tests/data; @OUT@ a
scratch folder, @CACHE@ the cache directory). For each,
both CLIs run with the test's environment and a fresh, empty cache directory at the same path;
compared are the exit status, stdout and stderr (what the runners record, files left behind
included; times in milliseconds left out) and the names of the files left in the cache directory (entries, memos). Prints one
line a difference and a summary; exit 1 when anything differs.
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile


def cache_names(d):
    """The files left in a cache directory, sorted."""
    out = []
    for root, _, files in os.walk(d):
        for f in files:
            out.append(os.path.relpath(os.path.join(root, f), d))
    return sorted(out)


def run_runner(cmd, env, exe, work):
    got = os.path.join(work, "got")
    if os.path.exists(got):
        os.remove(got)
    args = []
    for a in cmd:
        if a.startswith("-DEXE="):
            a = "-DEXE=" + exe
        elif a.startswith("-DGOLDEN="):
            a = "-DGOLDEN=" + got
        elif a.startswith("-DOUTDIR="):
            a = "-DOUTDIR=" + os.path.join(work, "out")
        args.append(a)
    p = subprocess.run(args, env=env, capture_output=True, text=True, errors="replace")
    text = open(got, errors="replace").read() if os.path.exists(got) else None
    if text is None:  # skipped (SKIP:), or the runner failed before running fdlink
        text = "runner exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return text


def run_plain(argv, env, exe, cwd):
    p = subprocess.run([exe] + argv, env=env, cwd=cwd, capture_output=True, text=True,
                       errors="replace", stdin=subprocess.DEVNULL)
    return "exit: %d\n--- stdout\n%s--- stderr\n%s" % (p.returncode, p.stdout, p.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("build")
    ap.add_argument("--extra")
    ap.add_argument("-R", default="")
    o = ap.parse_args()
    o.old, o.new = os.path.abspath(o.old), os.path.abspath(o.new)
    src = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    show = subprocess.run(["ctest", "--test-dir", o.build, "--show-only=json-v1"],
                          capture_output=True, text=True, check=True)
    tests = json.loads(show.stdout)["tests"]
    cases = []
    for t in tests:
        cmd = t.get("command") or []
        if not any(c.endswith(("run_golden.cmake", "run_bad.cmake")) for c in cmd):
            continue
        if o.R and not re.search(o.R, t["name"]):
            continue
        env = {}
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                for kv in p["value"]:
                    k, _, v = kv.partition("=")
                    env[k] = v
        cases.append((t["name"], "runner", cmd, env))
    if o.extra:
        for n, line in enumerate(open(o.extra), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                cases.append(("extra:%d %s" % (n, line), "plain", shlex.split(line), {}))
    work = tempfile.mkdtemp(prefix="fdlink-differential-")
    cache = os.path.join(work, "cache")
    differ = 0
    for name, kind, what, tenv in cases:
        results = []
        for exe in (o.old, o.new):
            shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
            env = dict(os.environ)
            env.pop("FDLINK_UPDATE_GOLDEN", None)
            env["FDLINK_CACHE_DIR"] = cache
            env.update(tenv)
            if kind == "runner":
                env["FDLINK_UPDATE_GOLDEN"] = "1"
                text = run_runner(what, env, exe, work)
            else:
                out = os.path.join(work, "out")
                os.makedirs(out)
                argv = [a.replace("@OUT@", out).replace("@CACHE@", cache) for a in what]
                text = run_plain(argv, env, exe, os.path.join(src, "tests", "data"))
                text = text.replace(out, "@OUT@").replace(cache, "@CACHE@")
            text = text.replace(exe, "FDLINK")
            # times vary from run to run: not behaviour
            text = re.sub(r"[0-9]+(\.[0-9]+)? ms", "T ms", text)
            results.append((text, cache_names(cache)))
        (t_old, c_old), (t_new, c_new) = results
        if t_old != t_new:
            differ += 1
            print("DIFFERS (output) %s\n=== old\n%s=== new\n%s" % (name, t_old, t_new))
        elif c_old != c_new:
            differ += 1
            print("DIFFERS (cache files) %s: old %s, new %s" % (name, c_old, c_new))
    shutil.rmtree(work, ignore_errors=True)
    print("differential: %d argument vectors, %d differ" % (len(cases), differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
