#!/usr/bin/env bash
# Put redis-server and hiredis in .gpu/redis/ (kept out of git with the rest of .gpu/), for the
# farm benchmark's MODE redis on a GPU host without them (bench/README.md, "On a GPU host").
# Run on a development machine that has them (apt-get install redis-server libhiredis-dev).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/.gpu/redis
mkdir -p "$dest"
server=$(readlink -f "$(command -v redis-server)")
cp "$server" "$dest/redis-server" # by this name: redis picks its mode from argv[0]
# only the libraries a host without redis lacks: the others are the host's own (an older copy
# put first would break them)
for lib in $(ldd "$server" | awk '/=> \// { print $3 }'); do
  case $(basename "$lib") in
    liblzf.so*|libjemalloc.so*) cp -L "$lib" "$dest/" ;;
  esac
done
hiredis=$(ls /usr/lib/*/libhiredis.so.* 2>/dev/null | head -1)
[ -n "$hiredis" ] || { echo "no libhiredis here (apt-get install libhiredis-dev)" >&2; exit 1; }
cp -L "$hiredis" "$dest/"
exclude=$(git -C "$root" rev-parse --git-path info/exclude)
case $exclude in /*) ;; *) exclude=$root/$exclude ;; esac
grep -qxE '/?\.gpu/?' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
ls "$dest"
