#!/usr/bin/env bash
# CMake package tests: a consumer project built against fdlink.
# usage: consumer.sh MODE GENERATOR FDLINK_BUILD_DIR FDLINK_SOURCE_DIR WORK_DIR [STEP]
#   install      install fdlink, find_package it (twice), build the consumer, run its ctest
#   subdir       add_subdirectory() of the fdlink source tree instead
#   buildtree    find_package(fdlink) from the fdlink build tree, not installed
#   fetchcontent FetchContent of the fdlink source tree (configure and build only); it and
#                subdir check that fdlink is a good guest (guest_checks)
#     STEP (these three modes): build (configure and build in WORK_DIR, launch nothing), run (run
#     the program and the consumer's ctest on the tree a build step left in WORK_DIR), or both
#     (the default). The ctest tests are the two steps, tied by a fixture, so that
#     compute-sanitizer can trace the run alone (.ci/gpu-sanitize.sh), not the build's hundreds
#     of compiler processes.
#   incremental  after a full build: a null build (also after reconfiguring); editing a header that a
#                .cu includes through another header rebuilds exactly the artifacts made from it;
#                touching one .cu rebuilds only what depends on it; each followed by a null build
#   findpkg      find_package(fdlink) and a C program without the CUDA toolkit; a device library
#                without it fails naming it; the version file accepts 0.x for 0.x only
#   negative     a definition that disagrees with its declaration fails the build, naming it
#   ccache       built twice from clean build trees behind ccache (CMAKE_CUDA_COMPILER_LAUNCHER,
#                then FDLINK_COMPILER_LAUNCHER over a launcher that fails): the second build
#                gets every nvcc compilation from the cache, and the linked cubins are identical
# FDLINK_CONSUMER_ARGS adds cmake arguments for the consumer (e.g. -DCONSUMER_FORMATS=ptx).
# Exits 77 (skipped) when the consumer's program finds no GPU: the link and check were done.
set -euo pipefail
mode=$1 gen=$2 build=$3 src=$4 work=$5 step=${6:-both}
here=$(cd "$(dirname "$0")" && pwd)
case "$step" in
build | both)
  rm -rf "$work"
  mkdir -p "$work"
  ;;
run)
  [ -f "$work/b/CMakeCache.txt" ] || { echo "no consumer built in $work/b: run its build step first"; exit 1; }
  ;;
*) echo "unknown step $step"; exit 2 ;;
esac
log="$work/log"

install_fdlink() {
  cmake --install "$build" --prefix "$work/prefix" >"$log" 2>&1 || { cat "$log"; exit 1; }
  for f in lib/cmake/fdlink/fdlinkConfig.cmake lib/cmake/fdlink/fdlinkFunctions.cmake \
           lib/pkgconfig/fdlink.pc bin/fdlink include/fdlink/fdlink.h; do
    [ -e "$work/prefix/$f" ] || { echo "install is missing $f"; exit 1; }
  done
}

configure_and_build() { # $1 = source dir, $2 = binary dir, rest = cmake args
  local s=$1 b=$2
  shift 2
  cmake -S "$s" -B "$b" -G "$gen" "$@" ${FDLINK_CONSUMER_ARGS:-} >"$log" 2>&1 || { cat "$log"; echo "configure failed"; exit 1; }
  cmake --build "$b" >"$log" 2>&1 || { cat "$log"; echo "build failed"; exit 1; }
}

run_consumer() { # $1 = binary dir: run the program and its ctest test
  local b=$1 rc=0
  "$b/app" || rc=$?
  local out
  out=$(ctest --test-dir "$b" --output-on-failure 2>&1) || { echo "$out"; echo "consumer ctest failed"; exit 1; }
  echo "$out" | grep -E "app_runs" || true
  if [ "$rc" = 77 ]; then
    grep -q "Skipped" <<<"$out" || { echo "fdlink_add_test did not report the skip"; exit 1; }
    echo "consumer built, checked, linked and embedded; no GPU, so its launch was skipped"
    exit 77
  fi
  [ "$rc" = 0 ] || { echo "consumer program failed ($rc)"; exit 1; }
}

# fdlink as a guest of the consumer ($1: fdlink's binary directory in it): no examples, tests or
# benchmarks built, the parent's build type untouched, and the parent's install holds only its own
guest_checks() {
  local fb=$1 b=$work/b
  for v in FDLINK_BUILD_EXAMPLES FDLINK_INSTALL FDLINK_BUILD_TESTS FDLINK_BUILD_BENCH; do
    grep -q "^$v:BOOL=OFF$" "$b/CMakeCache.txt" || { grep "^$v" "$b/CMakeCache.txt"; echo "$v is not OFF for a guest"; exit 1; }
  done
  for d in examples tests bench; do
    [ ! -e "$fb/$d" ] || { echo "the guest configured its $d ($fb/$d)"; exit 1; }
  done
  grep -qE '^CMAKE_BUILD_TYPE:[A-Z]*=$' "$b/CMakeCache.txt" ||
    { grep '^CMAKE_BUILD_TYPE' "$b/CMakeCache.txt"; echo "the guest set the parent's build type"; exit 1; }
  cmake --install "$b" --prefix "$work/inst" >"$log" 2>&1 || { cat "$log"; echo "the parent's install failed"; exit 1; }
  local installed
  installed=$(cd "$work/inst" && find . -type f -o -type l | sort | tr '\n' ' ')
  [ "$installed" = "./bin/app " ] || { echo "the parent's install holds: $installed (expected ./bin/app only)"; exit 1; }
  echo "guest: no examples, tests or benchmarks; build type untouched; the parent's install holds only $installed"
}

case "$mode" in
fetchcontent)
  configure_and_build "$here/consumer" "$work/b" -DFDLINK_SOURCE_DIR="$src" -DCONSUMER_FETCHCONTENT=ON
  [ -f "$work/b/app.cubin" ] || { echo "app.cubin was not linked"; exit 1; }
  guest_checks "$work/b/_deps/fdlink-build"
  # without xxhash.h (hidden: CMake's system paths off, and the folder fdlink's own build found it
  # in ignored, wherever that is), the parent's configure takes fdlink's bundled copy (issue 38)
  # and says so; FDLINK_XXHASH=system refuses, naming the package
  xxdir=$(sed -n 's/^FDLINK_XXHASH_INCLUDE_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ "$xxdir" = FDLINK_XXHASH_INCLUDE_DIR-NOTFOUND ] && xxdir=
  cmake -S "$here/consumer" -B "$work/noxx" -G "$gen" -DFDLINK_SOURCE_DIR="$src" -DCONSUMER_FETCHCONTENT=ON \
    -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF ${xxdir:+"-DCMAKE_IGNORE_PATH=$xxdir"} >"$log" 2>&1 ||
    { cat "$log"; echo "configure without xxhash.h failed (the bundled copy should do)"; exit 1; }
  grep -q "fdlink: xxhash.h: the bundled copy (xxHash 0.8.2" "$log" ||
    { cat "$log"; echo "configure without xxhash.h did not say it took the bundled copy"; exit 1; }
  if cmake -S "$here/consumer" -B "$work/noxx-system" -G "$gen" -DFDLINK_SOURCE_DIR="$src" \
       -DCONSUMER_FETCHCONTENT=ON -DFDLINK_XXHASH=system -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF \
       ${xxdir:+"-DCMAKE_IGNORE_PATH=$xxdir"} >"$log" 2>&1; then
    echo "configure with FDLINK_XXHASH=system without xxhash.h should fail"; exit 1
  fi
  msg=$(tr -s ' \n' '  ' <"$log" | grep -o "fdlink: xxhash.h not found.*libxxhash-dev") ||
    { cat "$log"; echo "the error does not name libxxhash-dev"; exit 1; }
  grep -q "link cache" <<<"$msg" || { echo "the error does not say what needs xxhash: $msg"; exit 1; }
  echo "without xxhash.h: the bundled copy; with FDLINK_XXHASH=system: $msg"
  ;;
install | buildtree | subdir)
  if [ "$step" != run ]; then
    case "$mode" in
    install)
      install_fdlink
      configure_and_build "$here/consumer" "$work/b" -DCMAKE_PREFIX_PATH="$work/prefix" ;;
    buildtree) configure_and_build "$here/consumer" "$work/b" -Dfdlink_DIR="$build" ;;
    subdir) configure_and_build "$here/consumer" "$work/b" -DFDLINK_SOURCE_DIR="$src" ;;
    esac
    [ -f "$work/b/app.cubin" ] || { echo "app.cubin was not linked"; exit 1; }
    [ "$mode" = subdir ] && guest_checks "$work/b/fdlink"
    [ "$step" = build ] && { echo "consumer configured and built ($mode, $gen): app.cubin linked and embedded"; exit 0; }
  fi
  run_consumer "$work/b"
  ;;
incremental)
  install_fdlink
  cp -r "$here/consumer" "$work/src"
  configure_and_build "$work/src" "$work/b" -DCMAKE_PREFIX_PATH="$work/prefix"
  b=$work/b
  # every artifact of the build, with its modification time and content
  snapshot() {
    (cd "$b" && find fdlink app app.cubin app.fatbin -type f ! -name '*.d' | sort | while read -r f; do
      echo "$f $(stat -c %.9Y "$f") $(sha1sum <"$f" | cut -c1-12)"; done)
  }
  changed() { { diff <(echo "$1") <(echo "$2") || true; } | sed -n 's/^> \([^ ]*\) .*/\1/p' | sort; }
  # a null build: the generator says so, and no artifact was touched
  null_build() { # $1 = what came before
    local before after
    before=$(snapshot)
    cmake --build "$b" >"$log" 2>&1 || { cat "$log"; exit 1; }
    after=$(snapshot)
    if [ "$gen" = Ninja ]; then
      grep -q "ninja: no work to do" "$log" || { cat "$log"; echo "the build after $1 did work"; exit 1; }
    elif grep -E "Generating|Building|Linking|nvcc|fdlink (header|check|link|embed)" "$log"; then
      echo "the build after $1 did work"; exit 1
    fi
    [ "$before" = "$after" ] || { changed "$before" "$after"; echo "the build after $1 changed the artifacts above"; exit 1; }
    echo "null build after $1: $(grep -E "no work to do" "$log" || echo "nothing rebuilt ($(grep -c "Built target" "$log") targets up to date)")"
  }
  null_build "the first build"
  cmake -S "$work/src" -B "$b" >"$log" 2>&1 || { cat "$log"; exit 1; }
  null_build "reconfiguring"

  # a nested header (scale.cu -> scale_unit.h -> detail/unit.h) changes: exactly scale's
  # artifacts, the check, the link, the embedding and the program are rebuilt
  sleep 1
  before=$(snapshot)
  sed -i 's/1\.0f/2.0f/' "$work/src/src/include/detail/unit.h"
  cmake --build "$b" >"$log" 2>&1 || { cat "$log"; exit 1; }
  after=$(snapshot)
  got=$(changed "$before" "$after")
  want=$(printf '%s\n' app app.cubin app.fatbin fdlink/app_embedded.c \
    fdlink/app_fatbin/app.sm_80.cubin fdlink/app_fatbin/app.sm_90.cubin fdlink/app_fatbin/app.compute_90.ptx \
    fdlink/mathlib/check_80.stamp fdlink/mathlib/check_90.stamp \
    fdlink/mathlib/scale.compute_80.ptx fdlink/mathlib/scale.sm_80.cubin fdlink/mathlib/scale.sm_80.ltoir \
    fdlink/mathlib/scale.compute_90.ptx fdlink/mathlib/scale.sm_90.cubin fdlink/mathlib/scale.sm_90.ltoir | sort)
  echo "after editing src/include/detail/unit.h, rebuilt:" $got
  [ "$got" = "$want" ] || { cat "$log"; echo "expected exactly:" $want; exit 1; }
  for f in scale.compute_90.ptx scale.sm_90.cubin scale.sm_90.ltoir scale.sm_80.cubin; do
    [ "$(grep "^fdlink/mathlib/$f " <<<"$before" | cut -d' ' -f3)" != \
      "$(grep "^fdlink/mathlib/$f " <<<"$after" | cut -d' ' -f3)" ] || { echo "$f was rewritten but did not change"; exit 1; }
  done
  grep -q "mul.f32" "$b/fdlink/mathlib/scale.compute_90.ptx" || { echo "scale's PTX lacks the new code"; exit 1; }
  null_build "the header's rebuild"

  # a source: only its artifacts and what is made from them
  sleep 1
  touch "$work/src/src/scale.cu"
  cmake --build "$b" >"$log" 2>&1 || { cat "$log"; exit 1; }
  grep -q "scale.cu" "$log" || { echo "scale.cu was not rebuilt"; exit 1; }
  grep -q "fdlink link" "$log" || { echo "the link was not redone"; exit 1; }
  grep -q "fdlink embed" "$log" || { echo "the embedding was not redone"; exit 1; }
  if grep -E "offset.cu|caller.cu" "$log"; then echo "rebuilt what does not depend on scale.cu"; exit 1; fi
  null_build "touching scale.cu"
  echo "a nested header and a source rebuilt exactly what depends on them; every other build did nothing"
  ;;
findpkg)
  # find_package(fdlink) as a C user without the CUDA toolkit, and what the version file accepts
  install_fdlink
  mkdir -p "$work/p"
  cp "$here/package/main.c" "$work/p/main.c"
  try() { # $1 = version asked for, $2 = a device library too (1) or not; the rest: cmake arguments
    local v=$1 dev=$2
    shift 2
    { echo "cmake_minimum_required(VERSION 3.25)"; echo "project(p C)"
      # only this install's package: no other location (the user's package registry, /usr while
      # the package test runs) may answer for a version this one refuses
      echo "find_package(fdlink $v CONFIG REQUIRED PATHS \"$pkgdir\" NO_DEFAULT_PATH)"
      echo "add_executable(p main.c)"; echo "target_link_libraries(p PRIVATE fdlink::fdlink)"
      [ "$dev" = 1 ] && echo "fdlink_add_device_library(d SOURCES $here/consumer/src/offset.cu)"
      true; } >"$work/p/CMakeLists.txt"
    rm -rf "$work/pb"
    # fdlink_DIR: this install's package only (another may lie in /usr while a package test runs)
    cmake -S "$work/p" -B "$work/pb" -G "$gen" -Dfdlink_DIR="$pkgdir" "$@" >"$log" 2>&1
  }
  pkgdir=$(dirname "$(find "$work/prefix" -name fdlinkConfig.cmake)")
  said() { tr -s ' \n' '  ' <"$log" | grep -qF -- "$1"; }
  notool=-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
  try 0.1 0 $notool || { cat "$log"; echo "find_package(fdlink) needs the CUDA toolkit"; exit 1; }
  cmake --build "$work/pb" >"$log" 2>&1 || { cat "$log"; echo "a C program without the toolkit did not build"; exit 1; }
  echo "without the CUDA toolkit: find_package(fdlink 0.1) and a C program linking fdlink::fdlink build"
  if try 0.1 1 $notool; then echo "a device library without the toolkit should fail"; exit 1; fi
  said "device code needs the CUDA toolkit's nvcc" || { cat "$log"; echo "the error does not name the toolkit"; exit 1; }
  echo "without the CUDA toolkit, a device library fails: $(tr -s ' \n' '  ' <"$log" | grep -o "fdlink_add_device_library(d): [^)]*)")"
  version=$(sed -n 's/.*FDLINK_VERSION_STRING "\([0-9.]*\)".*/\1/p' "$src/base/include/fdlink/version.h")
  IFS=. read -r major minor patch <<<"$version"
  try "$major.$minor" 0 || { cat "$log"; echo "find_package(fdlink $major.$minor) failed"; exit 1; }
  refused="$major.$((minor + 1)) $((major + 1)).0"
  [ "$minor" -gt 0 ] && refused="$refused $major.$((minor - 1)).5"
  for v in $refused; do
    if try "$v" 0; then echo "find_package(fdlink $v) accepted version $version"; exit 1; fi
  done
  echo "version $version: find_package(fdlink $major.$minor) accepted; refused: $refused"
  ;;
negative)
  install_fdlink
  cmake -S "$here/negative" -B "$work/b" -G "$gen" -DCMAKE_PREFIX_PATH="$work/prefix" >"$log" 2>&1 ||
    { cat "$log"; echo "configure should succeed"; exit 1; }
  if cmake --build "$work/b" >"$log" 2>&1; then echo "the build should have failed"; exit 1; fi
  cat "$log"
  grep -q "error.*mul_f32_f32" "$log" || { echo "the failure does not name mul_f32_f32"; exit 1; }
  echo "the build failed and named mul_f32_f32, as it should"
  ;;
ccache)
  command -v ccache >/dev/null 2>&1 || { echo "ccache not found: skipped (apt-get install ccache)"; exit 77; }
  # a private cache; the source and both build trees under one base directory, at the same depth,
  # so that the paths nvcc is given are the same relative paths in both builds
  export CCACHE_DIR="$work/ccache" CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=1
  unset CCACHE_DISABLE CCACHE_RECACHE CCACHE_READONLY CCACHE_PREFIX
  cp -r "$here/consumer" "$work/src"
  configure_and_build "$work/src" "$work/b1" -Dfdlink_DIR="$build" -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache
  compiles=$(grep -c "nvcc -" "$log" || true)
  [ "$compiles" -gt 0 ] || { cat "$log"; echo "the build ran no nvcc compilation"; exit 1; }
  ccache -z >/dev/null
  # FDLINK_COMPILER_LAUNCHER wins over CMAKE_CUDA_COMPILER_LAUNCHER (here a launcher that fails)
  configure_and_build "$work/src" "$work/b2" -Dfdlink_DIR="$build" \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=false -DFDLINK_COMPILER_LAUNCHER=ccache
  stats=$(ccache --print-stats)
  ccstat() { echo "$stats" | awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'; }
  hits=$(( $(ccstat direct_cache_hit) + $(ccstat preprocessed_cache_hit) ))
  misses=$(ccstat cache_miss)
  echo "second build: $compiles nvcc compilations, $hits cache hits, $misses misses"
  ccache -s
  [ "$misses" = 0 ] || { echo "the second build missed the cache $misses times"; exit 1; }
  [ "$hits" = "$compiles" ] || { echo "expected $compiles cache hits, ccache counted $hits"; exit 1; }
  cmp "$work/b1/app.cubin" "$work/b2/app.cubin" || { echo "the linked cubins differ"; exit 1; }
  echo "every nvcc compilation of the second build came from ccache; app.cubin is byte-identical"
  ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
