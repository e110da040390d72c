#!/usr/bin/env bash
# The Python package as a user gets it: build the wheel from this tree (scikit-build-core,
# pyproject.toml), check what it holds (one libfdlink.so and no symlink or static archive, the
# extension, the CLI, the headers and the CMake package; `auditwheel show` finds nothing to
# vendor), install it into a fresh virtual environment with pytest and NumPy from PyPI, and run
# tests/python from outside the source tree against the mock driver (exit 5, no tests collected,
# is a failure). Exit 77 (skipped) only when PyPI cannot be reached.
# Usage: run_wheel.sh SOURCE_DIR WORK_DIR MOCK_DRIVER
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
mock=$3
mkdir -p "$work"
work=$(cd "$work" && pwd)
if ! python3 -c 'import urllib.request; urllib.request.urlopen("https://pypi.org/simple/pytest/", timeout=20)' 2>/dev/null; then
  echo "run_wheel: PyPI cannot be reached; skipped"
  exit 77
fi
venv=$work/venv
rm -rf "$venv" "$work/wheel" "$work/run"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check pytest numpy 'scikit-build-core>=0.10' auditwheel
# JAX (CPU jaxlib, about 100 MB): its headers build fdlink.jax's XLA FFI handler, tested with
# hand-built call frames over the mock driver (tests/python/test_jax_ffi.py); where it cannot be
# installed those tests skip. PyTorch only with FDLINK_TEST_TORCH=1: PyPI's Linux wheel is the
# CUDA build (about 3 GB installed with its NVIDIA libraries, minutes to fetch), for the meta-tensor
# tests of fdlink.torch (tests/python/test_torch_ops.py), which skip without it.
"$venv/bin/pip" install -q --disable-pip-version-check jax || echo "run_wheel: jax not installed"
if [ "${FDLINK_TEST_TORCH:-0}" = 1 ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check torch || echo "run_wheel: torch not installed"
fi
# the wheel's CMake build goes to the work folder (kept between runs; nothing is written into the
# source tree), through the compiler cache where there is one
launcher=""
if command -v ccache >/dev/null 2>&1; then
  launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
fi
CMAKE_ARGS="$launcher" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
  "$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  --config-settings=build-dir="$work/skbuild" -w "$work/wheel" "$src"
whl=$(ls "$work"/wheel/fdlink-*.whl)
echo "run_wheel: $(basename "$whl") $(stat -c %s "$whl") bytes"
"$venv/bin/python" - "$whl" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
libs = [n for n in names if "libfdlink" in n]
problems = []
if libs != ["fdlink/lib/libfdlink.so"]:
    problems.append(f"libfdlink copies: {libs} (one, fdlink/lib/libfdlink.so, expected)")
for need in ("fdlink/_fdlink.abi3.so", "fdlink/bin/fdlink", "fdlink/include/fdlink/fdlink.h",
             "fdlink/include/fdlink/device.h", "fdlink/lib/cmake/fdlink/fdlinkConfig.cmake",
             "fdlink/py.typed", "fdlink/__init__.py", "fdlink/_fdlink.pyi"):
    if need not in names:
        problems.append(f"{need} missing")
for i in z.infolist():
    if (i.external_attr >> 16) & 0o170000 == 0o120000:
        problems.append(f"{i.filename} is a symlink")
    if i.filename.endswith(".a"):
        problems.append(f"{i.filename}: a static archive")
tags = [l for l in z.read([n for n in names if n.endswith("WHEEL")][0]).decode().splitlines()
        if l.startswith("Tag:")]
print("run_wheel:", ", ".join(tags))
if tags != ["Tag: cp310-abi3-linux_x86_64"] and not all("cp310-abi3" in t for t in tags):
    problems.append(f"tags {tags}: cp310-abi3 expected")
if problems:
    print("run_wheel: " + "; ".join(problems))
    sys.exit(1)
PY
# nothing to vendor: every CUDA library is opened at run time (auditwheel lists what it would
# graft; libfdlink is the package's own)
"$venv/bin/auditwheel" show "$whl" > "$work/auditwheel.txt" 2>&1 || true
cat "$work/auditwheel.txt"
if grep -Eq 'libcuda|libnvJitLink|libnvrtc' "$work/auditwheel.txt"; then
  echo "run_wheel: the wheel links a CUDA library"; exit 1
fi
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$whl"
# a C consumer of the wheel's headers and CMake package (find_package(fdlink CONFIG))
pkgdir=$("$venv/bin/python" -c 'import fdlink; print(fdlink.cmake_dir())')
rm -rf "$work/consumer"
mkdir -p "$work/consumer"
cat > "$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(fdlink CONFIG REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE fdlink::fdlink)
CM
cat > "$work/consumer/main.c" <<'C'
#include <fdlink/fdlink.h>
#include <stdio.h>
int main(void)
{
    fdl_decls *d = NULL;
    int rc = fdl_decls_parse(&d, "f: float32(float32)", 19, "x.decl", NULL);
    printf("fdlink %s %zu\n", fdl_version(), fdl_decls_count(d));
    fdl_decls_destroy(d);
    return rc;
}
C
cmake -S "$work/consumer" -B "$work/consumer/build" -Dfdlink_DIR="$pkgdir" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
"$work/consumer/build/consumer" | grep -q "^fdlink .* 1$" || {
  echo "run_wheel: the C consumer of the wheel's CMake package failed"; exit 1; }
echo "run_wheel: a C consumer of the wheel's CMake package built and ran"
mkdir -p "$work/run"
cd "$work/run"
rc=0
FDLINK_PYTEST_MOCK=$mock "$venv/bin/python" -m pytest -p no:cacheprovider "$src/tests/python" \
  || rc=$?
if [ "$rc" = 5 ]; then
  echo "run_wheel: pytest collected no tests"; exit 1
fi
exit "$rc"
