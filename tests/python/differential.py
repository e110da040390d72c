#!/usr/bin/env python3
"""Differential run of two builds of fdlink's Python package: the whole pytest suite (tests/python)
through both, every call it makes into fdlink recorded, the records compared (a structure change
must not change behaviour; issue 42). The CLI's counterpart is tests/cli/differential.py.

    python3 tests/python/differential.py OLD NEW --mock MOCK [--work DIR] [--tests DIR]
                                          [--old-tests DIR] [-k EXPR] [--python PY] [--no-jax]
                                          [--reuse] [--limit N]
    python3 tests/python/differential.py --compare OLD.jsonl NEW.jsonl

OLD and NEW are each a source tree (a checkout with pyproject.toml: its wheel is built as
tests/python/run_wheel.sh builds it, through scikit-build-core into WORK/tree-<name>-<hash>/skbuild,
kept between runs, and installed with `pip install --target WORK/tree-<name>-<hash>/site`), or a folder that holds
an importable `fdlink` package (a build tree's python/pkg, or a --target folder). MOCK is the mock
driver (a build tree's tests/gpu/libfdlink_mock_cuda.so); both sides run against the same
one. Both run the same suite: --tests (default: NEW's tests/python when NEW is a source tree,
else this file's folder); --old-tests gives OLD another one (its own, when the new suite uses
something the old package lacks, such as an internal module's new name): a test that only one of
the two suites has is then listed (`ONLY old|new <test>`) and not compared, and the tests/ folder
of each suite is normalised to <tests>. Both sides run with one interpreter (--python, default
WORK/venv/bin/python, made on first use with pytest, NumPy, scikit-build-core and, unless
--no-jax, JAX from PyPI, as run_wheel.sh does), the same paths (the run folder WORK/run, a fresh
empty cache directory WORK/run/cache, TMPDIR WORK/run/tmp, pytest's --basetemp WORK/run/basetemp,
the suite's tree copied to WORK/suite: its files as git lists them, so that the paths the tests
pass, such as tests/data and device/, and the cache keys made of them are the same),
and the plugin tests/python/_diffrecord.py (`-p _diffrecord`, FDLINK_DIFF_RECORD=WORK/<side>.jsonl;
its docstring says what is recorded and what is normalised).

Compared, per test (node id and phase: setup, call, teardown; collection and session-scoped
calls too): the calls of the main thread in order, the calls of other threads as a multiset (their
order is the scheduler's), each call's name, arguments and outcome (result or exception with its
fields; a field that the new build's exceptions of a class carry and no old one of that class
does is listed as ADDED and not compared, a field dropped is a difference); and each test's
outcome (passed, failed, skipped). Prints one line a difference
(`DIFFERS <test> <phase>: <call>: old ... | new ...`) and a summary
`differential: N calls, M differ; T tests, K outcomes differ`; exit 1 when anything differs.

Two runs of one build give no difference (`differential.py TREE TREE --mock MOCK` runs the suite
twice on one wheel). Examples (issue 42: main's old commit 6b87e59 checked out at /work/wt/base,
the mock driver of any configured build tree, BUILD/tests/gpu/libfdlink_mock_cuda.so):

    python3 tests/python/differential.py /work/wt/base . \\
        --mock /work/wt/base/build/tests/gpu/libfdlink_mock_cuda.so --work build-diff
    # where the new suite names internal modules the old package lacks (fdlink._types...):
    python3 tests/python/differential.py /work/wt/base . --old-tests /work/wt/base/tests/python \\
        --mock /work/wt/base/build/tests/gpu/libfdlink_mock_cuda.so --work build-diff
    # the same build twice (0 differ), the wheel already built (--reuse):
    python3 tests/python/differential.py . . --reuse \\
        --mock /work/wt/base/build/tests/gpu/libfdlink_mock_cuda.so --work build-diff

build-diff/ (any /build* name) is ignored by git. At 8f938f2 (both splits, of _fdlink.c and of
_core.py) against 6b87e59, with --old-tests: 3002 calls, 0 differ; 208 tests, 0 outcomes differ;
9 tests in one suite only (the new pickle test and test_differential.py). Without --old-tests the
9 tests of the new suite that import fdlink._types or fdlink._library fail on the old package
(outcomes and their calls differ: the suite's change, not the package's). A package that differs
is caught where the suite passes on both: `bad_argument`'s "argument: message" changed to
"argument - message" gives `DIFFERS test_bad_input.py::test_buffer_bounds call: fdlink.empty:
.raised.str: old "shape: (-1,) has a negative dimension" | new "shape - (-1,) ..."`.

It is a tool, not a ctest test: it needs the old build (tests/README.md, "Old against new").
"""
import argparse
import collections
import difflib
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(cmd, **kw):
    print("differential:", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def tools_python(o):
    """The interpreter both sides run with (a venv made on first use)."""
    if o.python:
        return o.python
    venv = os.path.join(o.work, "venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        sh([sys.executable, "-m", "venv", venv])
        sh([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "pytest", "numpy",
            "scikit-build-core>=0.10"])
        if not o.no_jax:
            r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "jax"])
            if r.returncode:
                print("differential: jax not installed (its tests skip on both sides)")
    return py


def prepare(o, py, side, path):
    """The folder to put on PYTHONPATH for @side: @path itself (a package folder) or the wheel
    of the source tree @path installed into WORK/<side>/site."""
    path = os.path.abspath(path)
    if os.path.exists(os.path.join(path, "fdlink", "__init__.py")) and \
            not os.path.exists(os.path.join(path, "pyproject.toml")):
        return path
    if not os.path.exists(os.path.join(path, "pyproject.toml")):
        sys.exit("differential: %s is neither a source tree nor a folder with a fdlink package"
                 % path)
    # one build folder a source tree (its CMake cache knows one source)
    d = os.path.join(o.work, "tree-%s-%s" % (
        os.path.basename(path) or "root", hashlib.sha256(path.encode()).hexdigest()[:8]))
    wheel = os.path.join(d, "wheel")
    site = os.path.join(d, "site")
    if o.reuse and os.path.exists(os.path.join(site, "fdlink", "__init__.py")):
        print("differential: %s: %s reused (--reuse)" % (side, site), flush=True)
        return site
    shutil.rmtree(wheel, ignore_errors=True)
    shutil.rmtree(site, ignore_errors=True)
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", "/work" if path.startswith("/work/") else path)
    if shutil.which("ccache"):
        env["CMAKE_ARGS"] = ("-DCMAKE_C_COMPILER_LAUNCHER=ccache "
                             "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(o.jobs))
    sh([py, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
        "--no-build-isolation", "--config-settings=build-dir=" + os.path.join(d, "skbuild"),
        "-w", wheel, path], env=env)
    whl = [f for f in os.listdir(wheel) if f.endswith(".whl")]
    sh([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
        "--target", site, os.path.join(wheel, whl[0])])
    return site


def stage_suite(o, tests):
    """A copy of the tree that holds the suite @tests (tests/python: its files as git lists them,
    or the whole tree less build folders), at WORK/suite for both sides, so that the paths the
    tests pass (tests/data, device/) and what depends on them (cache keys) are the same."""
    tests = os.path.abspath(tests)
    root = os.path.dirname(os.path.dirname(tests))
    dest = os.path.join(o.work, "suite")
    shutil.rmtree(dest, ignore_errors=True)
    ls = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z"],
                        capture_output=True)
    if ls.returncode == 0 and ls.stdout:
        for rel in ls.stdout.decode("utf-8", "surrogateescape").split("\0"):
            src = os.path.join(root, rel)
            if not rel or not os.path.lexists(src) or os.path.isdir(src):
                continue
            dst = os.path.join(dest, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst, follow_symlinks=False)
    else:
        shutil.copytree(root, dest, symlinks=True,
                        ignore=shutil.ignore_patterns("build*", ".git", "__pycache__"))
    return os.path.join(dest, os.path.relpath(tests, root))


def run_suite(o, py, side, site, tests):
    """pytest over @tests with the package of @site, recorded into WORK/<side>.jsonl."""
    run = os.path.join(o.work, "run")
    shutil.rmtree(run, ignore_errors=True)
    for sub in ("cache", "tmp", "basetemp"):
        os.makedirs(os.path.join(run, sub))
    suite = stage_suite(o, tests)
    rec = os.path.join(o.work, side + ".jsonl")
    if os.path.exists(rec):
        os.remove(rec)
    env = dict(os.environ)
    for k in ("FDLINK_CACHE_DIR", "FDLINK_LIBCUDA", "PYTHONPATH", "FDLINK_DIFF_RECORD"):
        env.pop(k, None)
    env.update({
        "PYTHONPATH": site + os.pathsep + HERE,
        "FDLINK_PYTEST_MOCK": os.path.abspath(o.mock),
        "FDLINK_DIFF_RECORD": rec,
        "FDLINK_DIFF_TESTS": suite,
        "FDLINK_CACHE_DIR": os.path.join(run, "cache"),
        "TMPDIR": os.path.join(run, "tmp"),
        "PYTHONHASHSEED": "0",
    })
    cmd = [py, "-m", "pytest", "-p", "no:cacheprovider", "-p", "_diffrecord", "-q",
           "--basetemp", os.path.join(run, "basetemp"), suite]
    if o.k:
        cmd += ["-k", o.k]
    print("differential: %s: %s" % (side, " ".join(cmd)), flush=True)
    p = subprocess.run(cmd, env=env, cwd=run, capture_output=True, text=True, errors="replace")
    log = os.path.join(o.work, side + ".log")
    with open(log, "w") as f:
        f.write(p.stdout + p.stderr)
    tail = [l for l in p.stdout.splitlines() if l.strip()][-1:] or ["(no output)"]
    print("differential: %s: pytest exit %d, %s (log %s)" % (side, p.returncode, tail[0], log),
          flush=True)
    if p.returncode not in (0, 1):
        sys.exit("differential: pytest failed to run on %s (exit %d): %s" % (side, p.returncode, log))
    return rec


# ---------------------------------------------------------------- comparing


def load(path):
    """(calls by context: {ctx: {"main": [...], "other": [...]}}, outcomes by test, errors)."""
    calls = collections.OrderedDict()
    outcomes = {}
    errors = []
    ended = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if "call" in r:
                c = calls.setdefault(r["ctx"], {"main": [], "other": []})
                c["main" if r["thread"] == "main" else "other"].append(r)
            elif "test" in r:
                prev = outcomes.get(r["test"])
                o = r["outcome"]
                if r["when"] != "call":
                    o = "%s in %s" % (o, r["when"])
                # one outcome a test: a failure anywhere wins over the call's pass
                if prev is None or "failed" in o or (prev == "passed" and o != "passed"):
                    outcomes[r["test"]] = o
            elif "error" in r:
                errors.append(r["error"])
            elif r.get("session") == "end":
                ended = True
    if not ended:
        errors.append("the session did not end (pytest stopped early?)")
    return calls, outcomes, errors


def exc_fields(calls):
    """{exception class: the fields its records carry} over all raised outcomes."""
    out = collections.defaultdict(set)
    for c in calls.values():
        for r in c["main"] + c["other"]:
            e = r.get("raised")
            if isinstance(e, dict) and "exception" in e:
                out[e["exception"]] |= set(e) - {"exception", "str"}
    return out


def strip_added(calls, added):
    """Drops from the new records the exception fields no old record of that class has."""
    for c in calls.values():
        for r in c["main"] + c["other"]:
            e = r.get("raised")
            if isinstance(e, dict) and e.get("exception") in added:
                for f in added[e["exception"]]:
                    e.pop(f, None)


def key(r):
    return json.dumps({k: r.get(k) for k in ("call", "args", "kw", "returned", "raised")
                       if k in r}, sort_keys=True)


def show(r):
    out = ("returned " + json.dumps(r["returned"], sort_keys=True)) if "returned" in r \
        else ("raised " + json.dumps(r.get("raised"), sort_keys=True))
    s = "%s(%s%s) %s" % (r["call"], json.dumps(r["args"])[1:-1],
                         (", " + json.dumps(r["kw"])) if r.get("kw") else "", out)
    return s if len(s) < 600 else s[:600] + "..."


def leaves(a, b, path, out):
    """The paths where the JSON values @a and @b differ (at most 4)."""
    if len(out) >= 4 or a == b:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            leaves(a.get(k, "(none)"), b.get(k, "(none)"), path + "." + k, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            leaves(x, y, "%s[%d]" % (path, i), out)
    else:
        sa, sb = json.dumps(a, sort_keys=True), json.dumps(b, sort_keys=True)
        out.append("%s: old %s | new %s" % (path, sa[:300], sb[:300]))
    return out


def differ_line(ctx, a, b):
    if a and b and a["call"] == b["call"]:
        ka = {k: a[k] for k in ("args", "kw", "returned", "raised") if k in a}
        kb = {k: b[k] for k in ("args", "kw", "returned", "raised") if k in b}
        return "DIFFERS %s: %s: %s" % (ctx, a["call"], "; ".join(leaves(ka, kb, "", [])))
    return "DIFFERS %s: %s | old: %s | new: %s" % (
        ctx, (a or b)["call"], show(a) if a else "(no call)", show(b) if b else "(no call)")


def test_of(ctx):
    """The test id of a context ("<id> call"), or None (collection, the session)."""
    for phase in (" setup", " call", " teardown"):
        if ctx.endswith(phase):
            return ctx[:-len(phase)]
    return None


def compare(old_path, new_path, limit, suites_differ=False):
    old, old_out, old_err = load(old_path)
    new, new_out, new_err = load(new_path)
    lines = []
    # an exception field the new build adds (a record's field carried to Python that was not
    # there) is an addition, listed and not compared; one it drops is a difference
    fo, fn = exc_fields(old), exc_fields(new)
    added = {cls: fn[cls] - fo[cls] for cls in fn if cls in fo and fn[cls] - fo[cls]}
    strip_added(new, added)
    for cls in sorted(added):
        lines.append("ADDED %s: %s (fields only the new build's exceptions carry; not compared)"
                     % (cls, ", ".join(sorted(added[cls]))))
    # with two suites, a test that one of them lacks is not compared (listed, not a difference)
    one_sided = set()
    if suites_differ:
        one_sided = set(old_out) ^ set(new_out)
        for t in sorted(one_sided):
            lines.append("ONLY %s: %s" % ("old" if t in old_out else "new", t))
    n_calls = 0
    n_differ = 0
    for e in old_err:
        lines.append("ERROR old: %s" % e)
    for e in new_err:
        lines.append("ERROR new: %s" % e)
    ctxs = list(old) + [c for c in new if c not in old]
    for ctx in ctxs:
        if test_of(ctx) in one_sided:
            continue
        o = old.get(ctx, {"main": [], "other": []})
        n = new.get(ctx, {"main": [], "other": []})
        # the main thread: in order
        ko = [key(r) for r in o["main"]]
        kn = [key(r) for r in n["main"]]
        n_calls += max(len(ko), len(kn))
        sm = difflib.SequenceMatcher(None, ko, kn, autojunk=False)
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag == "equal":
                continue
            # within a changed block, calls of one name paired (a changed outcome), the rest
            # calls made by one side only
            ra, rb = o["main"][i1:i2], n["main"][j1:j2]
            sub = difflib.SequenceMatcher(None, [r["call"] for r in ra], [r["call"] for r in rb],
                                          autojunk=False)
            for t2, a1, a2, b1, b2 in sub.get_opcodes():
                if t2 == "equal":
                    pairs = list(zip(ra[a1:a2], rb[b1:b2]))
                else:
                    pairs = [(a, None) for a in ra[a1:a2]] + [(None, b) for b in rb[b1:b2]]
                for a, b in pairs:
                    n_differ += 1
                    lines.append(differ_line(ctx, a, b))
        # other threads: as multisets
        co = collections.Counter(key(r) for r in o["other"])
        cn = collections.Counter(key(r) for r in n["other"])
        n_calls += max(len(o["other"]), len(n["other"]))
        only_o = co - cn
        only_n = cn - co
        byk = {key(r): r for r in o["other"] + n["other"]}
        for k, c in list(only_o.items()) + list(only_n.items()):
            side = "old" if k in only_o else "new"
            n_differ += c
            lines.append("DIFFERS %s (another thread): %s | only %s (x%d): %s" % (
                ctx, byk[k]["call"], side, c, show(byk[k])))
    tests = sorted((set(old_out) | set(new_out)) - one_sided)
    n_out = 0
    for t in tests:
        a, b = old_out.get(t, "(not run)"), new_out.get(t, "(not run)")
        if a != b:
            n_out += 1
            lines.append("DIFFERS outcome %s: old %s | new %s" % (t, a, b))
    for l in lines[:limit]:
        print(l)
    if len(lines) > limit:
        print("... %d more lines" % (len(lines) - limit))
    print("differential: %d calls, %d differ; %d tests, %d outcomes differ%s%s" % (
        n_calls, n_differ, len(tests), n_out,
        "; %d tests in one suite only" % len(one_sided) if one_sided else "",
        "; %d errors" % (len(old_err) + len(new_err)) if old_err or new_err else ""))
    return 1 if (n_differ or n_out or old_err or new_err) else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", nargs="?")
    ap.add_argument("new", nargs="?")
    ap.add_argument("--mock")
    ap.add_argument("--work", default="build-differential-python")
    ap.add_argument("--tests")
    ap.add_argument("--old-tests")
    ap.add_argument("-k")
    ap.add_argument("--python")
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reuse", action="store_true",
                    help="build no new wheel where the tree's site folder holds one")
    ap.add_argument("--limit", type=int, default=500, help="difference lines printed at most")
    ap.add_argument("--compare", nargs=2, metavar=("OLD_JSONL", "NEW_JSONL"))
    ap.add_argument("--suites-differ", action="store_true",
                    help="with --compare: the records are of two suites (as --old-tests)")
    o = ap.parse_args()
    if o.compare:
        return compare(o.compare[0], o.compare[1], o.limit, o.suites_differ)
    if not (o.old and o.new and o.mock):
        ap.error("OLD, NEW and --mock are needed (or --compare OLD.jsonl NEW.jsonl)")
    o.work = os.path.abspath(o.work)
    os.makedirs(o.work, exist_ok=True)
    py = tools_python(o)
    tests = o.tests
    if not tests:
        t = os.path.join(os.path.abspath(o.new), "tests", "python")
        tests = t if os.path.exists(os.path.join(o.new, "pyproject.toml")) else HERE
    tests = os.path.abspath(tests)
    old_tests = os.path.abspath(o.old_tests) if o.old_tests else tests
    site_old = prepare(o, py, "old", o.old)
    if os.path.abspath(o.new) == os.path.abspath(o.old):
        site_new = site_old
    else:
        site_new = prepare(o, py, "new", o.new)
    rec_old = run_suite(o, py, "old", site_old, old_tests)
    rec_new = run_suite(o, py, "new", site_new, tests)
    return compare(rec_old, rec_new, o.limit, suites_differ=old_tests != tests)


if __name__ == "__main__":
    sys.exit(main())
