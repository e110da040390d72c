#!/usr/bin/env bash
# The source distribution builds a working wheel with nothing but PyPI (issue 38): `python -m
# build --sdist` of this tree; the sdist holds the bundled xxhash.h (third_party/xxhash, with its
# license); a wheel built from the unpacked sdist in a fresh virtual environment, with the
# system's xxhash.h ignored (FDLINK_XXHASH=bundled: the fallback a machine without libxxhash-dev
# takes), from outside the source tree; that wheel installed into another fresh environment,
# imported, and used: a declaration file parsed, CUDA C compiled and checked (NVRTC, where there
# is one) and its cache key made (XXH3 through the bundled header). Exit 77 (skipped) only when
# PyPI cannot be reached.
# Usage: run_sdist.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
mkdir -p "$work"
work=$(cd "$work" && pwd)
if ! python3 -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/build/", timeout=20)' 2>/dev/null; then
  echo "run_sdist: PyPI cannot be reached; skipped"
  exit 77
fi
rm -rf "$work/venv-sdist" "$work/venv-build" "$work/venv-use" "$work/dist" "$work/unpacked" \
  "$work/wheel" "$work/use"
# 1. the sdist, as a release would make it
python3 -m venv "$work/venv-sdist"
"$work/venv-sdist/bin/pip" install -q --disable-pip-version-check build
"$work/venv-sdist/bin/python" -m build --sdist -o "$work/dist" "$src" >"$work/sdist.log" 2>&1 ||
  { cat "$work/sdist.log"; echo "run_sdist: python -m build --sdist failed"; exit 1; }
sdist=$(ls "$work"/dist/fdlink-*.tar.gz)
echo "run_sdist: $(basename "$sdist") $(stat -c %s "$sdist") bytes"
listing=$(tar -tzf "$sdist")
for need in third_party/xxhash/xxhash.h third_party/xxhash/LICENSE third_party/xxhash/README.md \
            pyproject.toml CMakeLists.txt python/src/_fdlink.c python/src/py_fdlink.h link/src/cache/key.c; do
  grep -q "^fdlink-[0-9.]*/$need\$" <<<"$listing" || { echo "run_sdist: the sdist lacks $need"; exit 1; }
done
if grep -Eq '^fdlink-[0-9.]*/(build[^/]*|\.gpu|\.ci)/' <<<"$listing"; then
  echo "run_sdist: the sdist holds build trees or CI files"; exit 1
fi
# 2. a wheel from the unpacked sdist, in a fresh environment, the system's xxhash.h ignored
mkdir -p "$work/unpacked"
tar -xzf "$sdist" -C "$work/unpacked"
tree=$(ls -d "$work"/unpacked/fdlink-*)
python3 -m venv "$work/venv-build"
"$work/venv-build/bin/pip" install -q --disable-pip-version-check 'scikit-build-core>=0.10'
launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  export CCACHE_BASEDIR=$work
fi
(cd "$work" && CMAKE_ARGS="$launcher" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
  "$work/venv-build/bin/pip" wheel -v --disable-pip-version-check --no-deps --no-build-isolation \
  --config-settings=cmake.define.FDLINK_XXHASH=bundled \
  --config-settings=build-dir="$work/skbuild-sdist" -w "$work/wheel" "$tree") \
  >"$work/wheel.log" 2>&1 || { tail -n 60 "$work/wheel.log"; echo "run_sdist: the wheel did not build"; exit 1; }
grep -q "fdlink: xxhash.h: the bundled copy (xxHash 0.8.2" "$work/wheel.log" ||
  { tail -n 60 "$work/wheel.log"; echo "run_sdist: the build did not take the bundled xxhash.h"; exit 1; }
whl=$(ls "$work"/wheel/fdlink-*.whl)
echo "run_sdist: $(basename "$whl") from the sdist, with the bundled xxhash.h"
# xxHash is compiled in: its notice travels with the binary (BSD 2-Clause)
python3 -c 'import sys, zipfile; n = zipfile.ZipFile(sys.argv[1]).namelist()
sys.exit(0 if "fdlink/share/doc/fdlink/LICENSE.xxhash" in n else 1)' "$whl" ||
  { echo "run_sdist: the wheel lacks xxHash's license (fdlink/share/doc/fdlink/LICENSE.xxhash)"; exit 1; }
# 3. installed into another fresh environment and used, from outside any source tree
python3 -m venv "$work/venv-use"
"$work/venv-use/bin/pip" install -q --disable-pip-version-check --no-deps "$whl"
mkdir -p "$work/use"
cd "$work/use"
FDLINK_CACHE_DIR="$work/use/cache" VENV="$work/venv-use" "$work/venv-use/bin/python" - <<'PY'
import os
import fdlink
assert fdlink.__file__.startswith(os.environ["VENV"]), fdlink.__file__  # the wheel's, not a tree's
decl = "mul_f32_f32: float32(float32, float32)\n"
cu = 'extern "C" __device__ int mul_f32_f32(float *r, float a, float b) { *r = a * b; return 0; }\n'
print("run_sdist: fdlink", fdlink.__version__, "from", os.path.dirname(fdlink.__file__))
try:
    ptx = fdlink.compile(cu, decls=decl, arch="sm_90", output="ptx")
except fdlink.LibraryNotFoundError as e:
    print("run_sdist: no NVRTC here, compile not tried:", e)
else:
    assert b".visible .func" in bytes(ptx.data), ptx.data[:200]
    again = fdlink.compile(cu, decls=decl, arch="sm_90", output="ptx")
    assert bytes(again.data) == bytes(ptx.data)
    print("run_sdist: CUDA C compiled, checked and cached with the wheel built from the sdist")
PY
echo "run_sdist: the sdist builds a working wheel with the bundled xxhash.h"
