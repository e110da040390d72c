#!/usr/bin/env bash
# The Debian package (label cmake): `cpack -G DEB` from the fdlink build tree, its control fields
# (no dependency on the CUDA libraries opened at run time) and contents, then, as root with dpkg,
# `dpkg -i`, the consumer project built against the installed package with find_package(fdlink)
# and a program built with `pkg-config --cflags --libs fdlink`, and `dpkg -P` (also on failure).
# usage: package.sh FDLINK_BUILD_DIR FDLINK_SOURCE_DIR WORK_DIR
# Exits 77 (skipped) without cpack's tools, or, after building and inspecting the package, when
# it cannot install it (not root, no dpkg, or a package fdlink already installed).
set -euo pipefail
build=$1 src=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
for tool in cpack dpkg-deb readelf; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: skipped (apt-get install dpkg binutils)"; exit 77; }
done
rm -rf "$work"
mkdir -p "$work"
log="$work/log"
fail() { echo "package test: $*"; exit 1; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$log" 2>&1 || { cat "$log"; fail "cpack failed"; }
deb=$(ls "$work"/pkg/*.deb)
echo "built $(basename "$deb")"
dpkg-deb -f "$deb" Package Version Architecture Depends Suggests
[ "$(dpkg-deb -f "$deb" Package)" = fdlink ] || fail "the package is not named fdlink"
depends=$(dpkg-deb -f "$deb" Depends)
[ -n "$depends" ] || fail "the package declares no dependency (expected at least the C library)"
if echo "$depends" | grep -Eiq 'cuda|nvidia|nvjitlink|nvrtc'; then
  fail "the package depends on a CUDA library: $depends"
fi
contents=$(dpkg-deb -c "$deb")
# the library directory of the build (lib, or lib/<multiarch> when configured for /usr)
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
case "$libdir" in /*|"") libdir=lib ;; esac
lib=./usr/$libdir
for f in ./usr/bin/fdlink ./usr/include/fdlink/fdlink.h ./usr/include/fdlink/host.h \
         ./usr/include/fdlink/device.h $lib/libfdlink.a $lib/cmake/fdlink/fdlinkConfig.cmake \
         $lib/cmake/fdlink/fdlinkFunctions.cmake $lib/cmake/fdlink/fdlinkTargets.cmake \
         $lib/pkgconfig/fdlink.pc ./usr/share/man/man1/fdlink.1; do
  grep -q " $f\$" <<<"$contents" || fail "the package lacks $f"
done
grep -q " $lib/libfdlink\.so\.[0-9]" <<<"$contents" || fail "the package lacks libfdlink.so.N"
# nothing in it is linked against a CUDA library
dpkg-deb -x "$deb" "$work/root"
for bin in "$work"/root/usr/bin/fdlink "$work"/root/usr/$libdir/libfdlink.so.*; do
  [ -L "$bin" ] && continue
  if readelf -d "$bin" | grep NEEDED | grep -Ei 'cuda|nvjitlink|nvrtc'; then
    fail "$(basename "$bin") is linked against a CUDA library"
  fi
done
echo "depends on: $depends; nothing links a CUDA library"

if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null 2>&1; then
  echo "package built and inspected; not root (or no dpkg), so dpkg -i was skipped"
  exit 77
fi
if dpkg-query -W -f='${Status}' fdlink 2>/dev/null | grep -q "ok installed" ||
   [ -e "/usr/$libdir/cmake/fdlink" ] || [ -e /usr/bin/fdlink ]; then
  echo "package built and inspected; fdlink is already installed in /usr, so it was left alone"
  exit 77
fi
trap 'dpkg -P fdlink >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >"$log" 2>&1 || { cat "$log"; fail "dpkg -i failed"; }
[ "$(/usr/bin/fdlink --version)" = "fdlink $(dpkg-deb -f "$deb" Version)" ] ||
  fail "installed fdlink --version says '$(/usr/bin/fdlink --version)'"
# man fdlink finds and renders the installed page (where dpkg installs man pages at all: a
# minimized system excludes /usr/share/man, and its `man` is a stub)
if [ -f /usr/share/man/man1/fdlink.1 ] && command -v man >/dev/null 2>&1 &&
   man --version 2>/dev/null | grep -q '^man '; then
  [ "$(man -w fdlink 2>/dev/null)" = /usr/share/man/man1/fdlink.1 ] ||
    fail "man -w fdlink says '$(man -w fdlink 2>&1)'"
  man fdlink 2>/dev/null | grep -q 'link them into caller kernels' || fail "man fdlink does not render the page"
  echo "man fdlink: /usr/share/man/man1/fdlink.1 renders"
else
  echo "man fdlink: not checked here (no man-db, or dpkg excludes /usr/share/man)"
fi

# find_package(fdlink) from the system prefix, nothing else given
cmake -S "$here/consumer" -B "$work/b" -DCONSUMER_FORMATS=ptx >"$log" 2>&1 || { cat "$log"; fail "consumer configure failed"; }
grep "^fdlink_DIR" "$work/b/CMakeCache.txt" || true
grep -q "^fdlink_DIR:PATH=/usr/$libdir/cmake/fdlink\$" "$work/b/CMakeCache.txt" ||
  fail "find_package did not find the installed package"
cmake --build "$work/b" >"$log" 2>&1 || { cat "$log"; fail "consumer build failed"; }
[ -f "$work/b/app.cubin" ] || fail "the consumer's app.cubin was not linked"
rc=0
"$work/b/app" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "the consumer program failed ($rc)"
echo "consumer built with find_package(fdlink) from /usr (program exit $rc)"

# pkg-config
flags=$(pkg-config --cflags --libs fdlink) || fail "pkg-config does not know fdlink"
echo "pkg-config --cflags --libs fdlink: $flags"
cc -std=c11 -o "$work/pc_app" "$here/package/main.c" $flags >"$log" 2>&1 || { cat "$log"; fail "cc with pkg-config flags failed"; }
"$work/pc_app" || fail "the pkg-config program failed"

dpkg -P fdlink >"$log" 2>&1 || { cat "$log"; fail "dpkg -P failed"; }
trap - EXIT
[ ! -e /usr/bin/fdlink ] || fail "dpkg -P left /usr/bin/fdlink"
echo "installed, used with find_package and pkg-config, and removed"
