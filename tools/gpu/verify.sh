#!/usr/bin/env bash
# One call on a GPU host that verifies the whole tree: configure and build, the whole ctest, the
# wheel's whole pytest against the real driver, the Python benchmark and benchmark 4 (quick).
# Prepare on the development machine first (bash tools/gpu/prepare.sh, which also builds the
# wheel into .gpu/whl), then run from the project root there, carrying .gpu:
#
#   bash .gpu/verify.sh                  # about 6-8 minutes on a 2-GPU, 32-core host
#   VERIFY_STEPS="tests pytest" bash .gpu/verify.sh      # a subset: tests pytest pybench bench san
#
# The summary is printed at the end; into $OUT (the folder that comes back: at most 8 files)
# go summary.txt, ctest.log, pytest.log, the two benchmarks' Markdown and logs.tar.gz (every log).
# Exit status: 0 when every step passed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dest=${OUT:-$root/.gpu/out}; mkdir -p "$dest"
out=$(mktemp -d /tmp/verify.XXXXXX)
steps=${VERIFY_STEPS:-tests pytest pybench bench}
summary=(); rc_all=0
note() { summary+=("$1"); echo "== $1"; }
# Criterion and its dependencies, unpacked once (run-tests.sh does the same)
deps=/opt/fdlink-deps; mkdir -p "$deps"
for f in .gpu/debs/*.deb; do [ -f "$f" ] && dpkg -x "$f" "$deps"; done
multi=$(ls -d "$deps"/usr/lib/*-linux-gnu 2>/dev/null | head -1)
for pc in "$multi"/pkgconfig/*.pc; do [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$deps/usr|" "$pc"; done
[ -f "$multi/pkgconfig/criterion.pc" ] && sed -i '/^Requires/d' "$multi/pkgconfig/criterion.pc"
export CMAKE_PREFIX_PATH="$deps/usr" PKG_CONFIG_PATH="$multi/pkgconfig"
export LD_LIBRARY_PATH="$multi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$PATH:$deps/usr/bin:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$out/gpus.txt"
t=$SECONDS
if cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=RelWithDebInfo ${FDLINK_CMAKE_ARGS:-} >"$out/configure.log" 2>&1 &&
   cmake --build build-gpu -j "$(nproc)" >"$out/build.log" 2>&1; then
  note "build: ok in $((SECONDS - t)) s"
else
  note "build: FAILED (configure.log, build.log)"; tail -20 "$out/build.log" "$out/configure.log"; exit 1
fi
site=/tmp/fdlink-site
wheel=$(ls .gpu/whl/fdlink-*.whl 2>/dev/null | head -1)
for s in $steps; do
  t=$SECONDS
  case $s in
  tests)
    timeout "${VERIFY_TESTS_T:-420}" ctest --test-dir build-gpu -j "$(nproc)" --output-on-failure >"$out/ctest.log" 2>&1; rc=$?
    note "ctest (all labels): $(grep -E '% tests passed' "$out/ctest.log" | tail -1) rc=$rc in $((SECONDS - t)) s"
    grep -E '^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Not Run|Subprocess|Exception)' "$out/ctest.log" | head -20 ;;
  pytest)
    [ -n "$wheel" ] || { note "pytest: no wheel in .gpu/whl (prepare.sh builds it)"; rc_all=1; continue; }
    rm -rf "$site"; python3 -m pip install -q --no-index --no-deps --target "$site" "$wheel"
    PYTHONPATH=$site timeout 300 python3 -m pytest -q -p no:cacheprovider tests/python \
      --junitxml="$out/pytest.xml" >"$out/pytest.log" 2>&1; rc=$?
    note "pytest (wheel $(basename "$wheel"), real driver): $(tail -1 "$out/pytest.log") rc=$rc" ;;
  pybench)
    [ -f bench/python/bench_python.py ] || continue
    rm -rf "$site"; python3 -m pip install -q --no-index --no-deps --target "$site" "$wheel"
    OUT=$out PYTHONPATH=$site timeout 300 python3 bench/python/bench_python.py >"$out/bench-python.log" 2>&1; rc=$?
    note "bench_python: rc=$rc, $(grep -c 'goal met' "$out/bench-python.log") goals met, missed: $(grep -E 'MISSED' "$out/bench-python.log" | cut -c1-80 | tr '\n' ';')" ;;
  bench)
    (cd build-gpu/bench && timeout 400 ./fdlink-bench --quick --json "$out/bench.json" --markdown "$out/bench.md" >"$out/bench.log" 2>&1); rc=$?
    note "fdlink-bench --quick: rc=$rc, $(grep -E '^goals:' "$out/bench.log" | tail -1)" ;;
  san)
    FDLINK_SANITIZE_CTEST_ARGS="-j $(nproc)" FDLINK_SANITIZE_TIMEOUT=240 timeout 560 bash .ci/gpu-sanitize.sh ${VERIFY_SAN_TOOLS:-memcheck} >"$out/san.log" 2>&1; rc=$?
    note "sanitizers: $(grep 'gpu-sanitize:' "$out/san.log" | tr '\n' ' ')" ;;
  *) note "unknown step $s"; rc=2 ;;
  esac
  [ "$rc" = 0 ] || rc_all=1
done
echo; echo "== summary"; printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
for f in summary.txt ctest.log pytest.log bench-python.md bench.md; do [ -f "$out/$f" ] && cp "$out/$f" "$dest/"; done
tar -czf "$dest/logs.tar.gz" -C "$out" . 2>/dev/null
exit $rc_all
