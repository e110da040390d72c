#!/usr/bin/env bash
# On a GPU host (docs/benchmarks.md, "Python beside Numba and CuPy"): install the carried wheel,
# run the Python suite's GPU and Numba tests (tests/python, markers gpu or numba), then
# bench/python/bench_python.py; logs, pytest's JUnit XML and bench-python.{json,md} go to $OUT
# (else the current directory). One command, no package access needed:
#
#   pip wheel . --no-deps -w .gpu/whl          # on the development machine, then carry .gpu
#   bash bench/python/run_gpu_host.sh [WHEEL] [bench_python.py options]
#
# Exit status: 0 when both passed, else 1 (each one's own status is printed at the end).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
whl=${1:-}
if [ -z "$whl" ] || [ "${whl#-}" != "$whl" ]; then
    whl=$(ls "$root"/.gpu/whl/fdlink-*.whl 2>/dev/null | head -n 1)
else
    shift
fi
if [ -z "$whl" ] || [ ! -f "$whl" ]; then
    echo "run_gpu_host.sh: no wheel (give one, or put it in .gpu/whl/)" >&2
    exit 1
fi
out=${OUT:-$PWD}
mkdir -p "$out"
site=$(mktemp -d /tmp/fdlink-site.XXXXXX)
python3 -m pip install -q --no-index --no-deps --target "$site" "$whl" || exit 1
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
# nvdisasm, for the bridge test that reads the kernel's SASS
if ! command -v nvdisasm >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvdisasm ]; then
    export PATH="$PATH:/usr/local/cuda/bin"
fi
echo "== pytest (gpu or numba), wheel $(basename "$whl")"
python3 -m pytest -q -m "gpu or numba" "$root/tests/python" --junitxml="$out/pytest-gpu.xml" \
    >"$out/pytest-gpu.log" 2>&1
rc_test=$?
tail -n 40 "$out/pytest-gpu.log"
echo "== bench/python/bench_python.py"
OUT="$out" timeout 420 python3 "$root/bench/python/bench_python.py" "$@" 2>&1 |
    tee "$out/bench-python.log"
rc_bench=${PIPESTATUS[0]}
echo "pytest exit $rc_test, benchmark exit $rc_bench"
[ "$rc_test" -eq 0 ] && [ "$rc_bench" -eq 0 ]
