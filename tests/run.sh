#!/usr/bin/env bash
# The README's test command: install what is missing (as root, with apt-get), configure with
# warnings as errors, build, run every ctest test. Arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
dpkg -s libcriterion-dev >/dev/null 2>&1 || need+=(libcriterion-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v ninja >/dev/null 2>&1 || need+=(ninja-build)
# builds on a farm: the ccache test, and dpkg-shlibdeps for the Debian package's dependencies
command -v ccache >/dev/null 2>&1 || need+=(ccache)
command -v dpkg-shlibdeps >/dev/null 2>&1 || need+=(dpkg-dev)
# the CMake package's tools test: clangd --check on a caller of foreign functions
command -v clangd >/dev/null 2>&1 || need+=(clangd)
# the CMake package's tests under the newest CMake from PyPI, and the SARIF schema check
# (tests/cli/sarif_schema.sh), in virtual environments
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
# the cache's remote tier: real servers in the tests, and the client libraries fdlink dlopens
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v nginx >/dev/null 2>&1 || need+=(nginx-light)
ldconfig -p 2>/dev/null | grep -q 'libhiredis\.so' || need+=(libhiredis0.14)
ldconfig -p 2>/dev/null | grep -q 'libcurl\.so\.4' || need+=(libcurl4)
ldconfig -p 2>/dev/null | grep -q 'libcrypto\.so\.3' || need+=(libssl3)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tests/run.sh: installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "tests/run.sh: missing ${need[*]}; install with: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi
build=${FDLINK_BUILD_DIR:-build-tests}
jobs=$(nproc)
cmake -S . -B "$build" -G Ninja -DFDLINK_WERROR=ON -DFDLINK_REQUIRE_TESTS=ON ${FDLINK_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
# NVIDIA's device-library wheels for the vendor tests (tests/vendor, issue 34), into the build
# tree (about 220 MB); FDLINK_VENDOR_WHEELS=0 leaves them out (the tests then skip)
if [ "${FDLINK_VENDOR_WHEELS:-1}" != 0 ] && [ ! -f "$build/vendor/.installed" ]; then
  if python3 -m pip install -q --no-deps --target "$build/vendor" nvidia-nvshmem-cu13==3.8.0 \
       nvidia-libmathdx-cu13==0.4.1.15 nvidia-mathdx==25.6.0; then
    touch "$build/vendor/.installed"
  else
    echo "tests/run.sh: could not install the vendor wheels; the vendor tests will skip" >&2
  fi
fi
# cuobjdump (NVIDIA's wheel, a few MB), which the fatbin test (tests/cli/fatbin.sh, issue 40)
# lists fdlink's fatbins with; without it that check is left out
if [ "${FDLINK_VENDOR_WHEELS:-1}" != 0 ] && [ ! -f "$build/vendor-tools/.installed" ]; then
  if python3 -m pip install -q --no-deps --target "$build/vendor-tools" \
       nvidia-cuda-cuobjdump==13.5.37; then
    touch "$build/vendor-tools/.installed"
  else
    echo "tests/run.sh: could not install cuobjdump; the fatbin test will not list with it" >&2
  fi
fi
# NVIDIA's nvJitLink and NVRTC 13.5 wheels for the version-pair tests (tests/link/skew.sh, issue
# 40: the toolkit's 13.0 against them, both ways), into the build tree (about 250 MB);
# FDLINK_CU135_WHEELS=0 leaves them out (the tests then skip)
if [ "${FDLINK_CU135_WHEELS:-1}" != 0 ] && [ ! -f "$build/cu135/.installed" ]; then
  if python3 -m pip install -q --no-deps --target "$build/cu135" nvidia-nvjitlink==13.5.37 \
       nvidia-cuda-nvrtc==13.5.37; then
    touch "$build/cu135/.installed"
  else
    echo "tests/run.sh: could not install the 13.5 wheels; the version-pair tests will skip" >&2
  fi
fi
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
