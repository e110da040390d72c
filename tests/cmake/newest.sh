#!/usr/bin/env bash
# Runs a CMake package test (consumer.sh or settings.sh, with its arguments) under the newest CMake
# from PyPI, installed once into a virtual environment under the build tree (VENV), so that a
# build tree, and CI, pays for the download once; concurrent tests share it under a lock.
# usage: newest.sh VENV SCRIPT ARGS...
# Exits 77 (skipped) when the environment cannot be made (no python3 venv, no PyPI).
set -euo pipefail
venv=$1
shift
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/cmake" ]; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >"$venv.log" 2>&1 ||
     ! "$venv/bin/pip" install -q --disable-pip-version-check cmake >>"$venv.log" 2>&1; then
    cat "$venv.log"
    rm -rf "$venv"
    echo "could not install the newest CMake from PyPI into $venv: skipped"
    exit 77
  fi
fi
flock -u 9
export PATH="$venv/bin:$PATH"
echo "$(cmake --version | head -1) (PyPI, $venv)"
exec bash "$@"
