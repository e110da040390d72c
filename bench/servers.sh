#!/usr/bin/env bash
# The servers of benchmark 7's remote rows (bench/remotecache.c), for a GPU host without package
# access: redis-server, nginx (with WebDAV) and the client libraries fdlink opens (hiredis,
# libcurl), with the libraries they need beyond a base Debian system.
#
#   bash bench/servers.sh download [DIR]         here (apt): .deb files into DIR (.gpu/bench-debs)
#   bash bench/servers.sh unpack DEBS PREFIX     there: dpkg -x each into PREFIX
#   FDLINK_BENCH_SERVERS=PREFIX ./fdlink-bench --only cache
#
# The C library and other essential packages are left out: the servers run with
# LD_LIBRARY_PATH=PREFIX/usr/lib/x86_64-linux-gnu on top of the host's own libc.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
download)
  dir=${2:-.gpu/bench-debs}
  mkdir -p "$dir"
  roots=(redis-server redis-tools nginx nginx-common libhiredis0.14 libcurl4)
  skip='^(libc6|libc-bin|libgcc-s1|libcrypt1|debconf|dpkg|perl-base|adduser|passwd|lsb-base|init-system-helpers|sysvinit-utils|libpam.*|login|systemd.*|libselinux1|libaudit.*|libcap-ng0|libsemanage.*|libsepol.*|libbz2-1.0|liblzma5|libzstd1|zlib1g|libdb5.3|libpcre2-8-0|mawk|base-files|coreutils|debianutils|tar|gzip|sed|grep|bash|dash|diffutils|findutils|util-linux|mount|iproute2|procps)$'
  mapfile -t pkgs < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "${roots[@]}" | grep -E '^[a-z0-9]' | sort -u |
      grep -Ev "$skip")
  (cd "$dir" && apt-get download "${pkgs[@]}" >/dev/null)
  echo "servers.sh: ${#pkgs[@]} packages in $dir ($(du -sh "$dir" | cut -f1))"
  ;;
unpack)
  debs=${2:?DEBS folder}; prefix=${3:?PREFIX}
  mkdir -p "$prefix"
  for d in "$debs"/*.deb; do dpkg -x "$d" "$prefix"; done
  # redis-server is a link to redis-check-rdb (redis-tools); nginx is in nginx or nginx-light
  ls "$prefix/usr/bin/redis-server" "$prefix/usr/sbin/nginx" >/dev/null
  echo "servers.sh: unpacked into $prefix; FDLINK_BENCH_SERVERS=$(cd "$prefix" && pwd)"
  ;;
*)
  echo "usage: bash bench/servers.sh download [DIR] | unpack DEBS PREFIX" >&2
  exit 2
  ;;
esac
