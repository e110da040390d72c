#!/usr/bin/env bash
# fdlink.numba on numba-cuda-mlir, on a GPU host that has numba-cuda only and no package access
# (issue 39). Carried in .gpu/nbm/ (git-ignored; tools/gpu/README.md says how it is made):
#   numba_cuda_mlir-<version>-cp312-....whl            the wheel as PyPI has it, or, where that
#   numba_cuda_mlir-<version>-cp312-....whl.tree.tar.xz  is over the carry limit, its files
#                                                        (xz-compressed), zipped back into the
#                                                        wheel here
# and the fdlink wheel in .gpu/whl/ (tools/gpu/prepare.sh). Both go with pip --no-index --target
# into a folder put on PYTHONPATH, over the interpreter's own packages (numba-cuda, NumPy,
# cuda-bindings, cuda.core, pytest; numba-cuda-mlir's requirements checked against them), and
# tests/python/test_numba_bridge.py runs with FDLINK_NUMBA=numba-cuda-mlir (the bridge then uses
# numba-cuda-mlir, checked first). The log goes
# to $OUT/numba-mlir.log where $OUT is set. Exit status: pytest's (1 where the setup failed).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
work=$(mktemp -d /tmp/fdlink-nbm.XXXXXX)
log=${OUT:+$OUT/numba-mlir.log}
log=${log:-$work/numba-mlir.log}
(
set -e
whl=$(ls .gpu/nbm/numba_cuda_mlir-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$whl" ]; then
    tree=$(ls .gpu/nbm/numba_cuda_mlir-*.whl.tree.tar.xz 2>/dev/null | head -n 1 || true)
    [ -n "$tree" ] || { echo "test_numba_mlir.sh: no numba-cuda-mlir wheel in .gpu/nbm"; exit 1; }
    whl=$work/$(basename "${tree%.tree.tar.xz}")
    mkdir "$work/tree"
    tar -xJf "$tree" -C "$work/tree"
    # a wheel is a zip of these files (their RECORD unchanged)
    python3 - "$work/tree" "$whl" <<'PY'
import os, sys, zipfile
top, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for d, _, files in os.walk(top):
        for f in sorted(files):
            p = os.path.join(d, f)
            z.write(p, os.path.relpath(p, top))
PY
fi
fdl=$(ls .gpu/whl/fdlink-*.whl 2>/dev/null | head -n 1 || true)
[ -n "$fdl" ] || { echo "test_numba_mlir.sh: no fdlink wheel in .gpu/whl (tools/gpu/prepare.sh)"; exit 1; }
echo "== $(basename "$whl") ($(stat -c %s "$whl") bytes), $(basename "$fdl")"
# into a folder on PYTHONPATH over the interpreter's own packages (numba-cuda, NumPy,
# cuda-bindings, cuda.core, pytest): a venv made from the GPU host's python3, itself a venv,
# would not see them (--system-site-packages reaches the base interpreter's only)
site=$work/site
py=python3
python3 -m pip install -q --disable-pip-version-check --no-index --no-deps --target "$site" \
    "$fdl" "$whl"
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
# its requirements (NumPy, cuda-bindings >= 12.9.1, cuda.core >= 0.5.1) from the interpreter's
"$py" - <<'PY'
import importlib.metadata as md
try:
    from packaging.requirements import Requirement
except ImportError:  # pip's own copy
    from pip._vendor.packaging.requirements import Requirement
for r in md.requires("numba-cuda-mlir") or []:
    req = Requirement(r)
    if req.marker and not req.marker.evaluate():
        continue
    try:
        v = md.version(req.name)
    except md.PackageNotFoundError:
        raise SystemExit(f"numba-cuda-mlir needs {r}: not installed")
    if not req.specifier.contains(v, prereleases=True):
        raise SystemExit(f"numba-cuda-mlir needs {r}: {req.name} {v} is here")
PY
"$py" - <<'PY'
import importlib.metadata as md
for p in ("numba-cuda-mlir", "numba-cuda", "numba", "cuda-core", "cuda-bindings", "numpy"):
    try:
        print(f"{p} {md.version(p)}")
    except md.PackageNotFoundError:
        print(f"{p} not installed")
PY
if ! command -v nvdisasm >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvdisasm ]; then
    export PATH="$PATH:/usr/local/cuda/bin"
fi
FDLINK_NUMBA=numba-cuda-mlir "$py" -c \
    'import fdlink.numba as fn; c = fn._cuda(); print("fdlink.numba uses", c.__name__)'
set +e
cd "$work"
FDLINK_NUMBA=numba-cuda-mlir "$py" -m pytest -p no:cacheprovider -q -rs \
    "$root/tests/python/test_numba_bridge.py"
) > "$log" 2>&1
rc=$?
tail -n 40 "$log"
echo "test_numba_mlir.sh: exit $rc (log $log)"
exit "$rc"
