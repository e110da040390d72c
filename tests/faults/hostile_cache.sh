#!/usr/bin/env bash
# A shared cache directory turned against its users (issue 22, class 4). A directory is
# pre-filled, under every name fdlink uses there (each entry, memo and temporary name a real link
# makes, and `stats`), with symlinks to a file outside and to /, symlinks to /dev/zero, FIFOs,
# device nodes (as root), folders and junk. Then links run from several processes at once, each
# under a time limit, ROUNDS times. Passes when:
#   - every link succeeds and its cubin is byte for byte what FDLINK_CACHE=0 links;
#   - nothing outside the directory changed (a sentinel tree checksummed before and after, and
#     the targets of the planted symlinks among it);
#   - nothing hung (every process under `timeout`), nor did `fdlink cache stats|list|verify|prune
#     |clear` on that directory;
#   - what fdlink ignored there it said in at most one line per link.
#   hostile_cache.sh FDLINK DATA_DIR [ROUNDS] [WRITERS]
set -uo pipefail
fdlink=$(realpath "$1") data=$(realpath "$2") rounds=${3:-3} writers=${4:-8}
work=$(mktemp -d)
trap 'chmod -R u+rwx "$work" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 1
cp "$data/link/caller.ptx" "$data/link/mul.ptx" "$data/link/src/mul.cu" .
bad=0
fail() { bad=$((bad + 1)); echo "hostile_cache: $*" >&2; }
limit=60

# The links: PTX for two architectures, and CUDA C (NVRTC: its compile entries and memos)
links=("-arch=sm_90 caller.ptx mul.ptx" "-arch=sm_80 caller.ptx mul.ptx"
       "-arch=sm_90 caller.ptx mul.cu")
nlinks=${#links[@]}
for i in $(seq 0 $((nlinks - 1))); do
  # shellcheck disable=SC2086
  if ! FDLINK_CACHE=0 timeout $limit "$fdlink" link ${links[$i]} -o "want.$i" 2>"err.want"; then
    if [ "$i" = 2 ] && grep -q -i nvrtc err.want; then
      echo "hostile_cache: NVRTC cannot be loaded here; the CUDA C link is left out"
      unset 'links[2]'
      nlinks=2
      continue
    fi
    echo "hostile_cache: link $i does not run: $(cat err.want)" >&2
    exit 1
  fi
done

# Every name a real run writes in a cache directory
mkdir names
for i in $(seq 0 $((nlinks - 1))); do
  # shellcheck disable=SC2086
  FDLINK_CACHE_DIR=$work/names timeout $limit "$fdlink" link ${links[$i]} -o scratch.cubin \
    2>/dev/null || { echo "hostile_cache: link $i with a cache fails" >&2; exit 1; }
done
mapfile -t names < <(ls -A names)
rm -rf names scratch.cubin
[ "${#names[@]}" -ge 4 ] || { echo "hostile_cache: a run wrote only ${names[*]}" >&2; exit 1; }

# The sentinel tree outside the cache: what the planted symlinks point to
mkdir -p outside/sub
echo "another user's file" > outside/victim.txt
echo "another user's entry" > outside/sub/entry.fdlc
head -c 4096 /dev/urandom > outside/sub/blob
chmod 0644 outside/victim.txt
sum_outside() { (cd outside && find . -printf '%p %y %m %s\n' | sort && find . -type f -exec sha256sum {} + | sort); }
before=$(sum_outside)
devnull_before=$(stat -c '%F %t:%T' /dev/null)
root_before=$(ls -A / | sha256sum)

root=0
[ "$(id -u)" = 0 ] && root=1
plant() { # plant NAME VARIANT: something hostile under NAME in the cache
  local n=$1 v=$2
  rm -rf "cache/$n"
  case $((v % 8)) in
    0) ln -s "$work/outside/victim.txt" "cache/$n" ;;
    1) ln -s / "cache/$n" ;;
    2) mkfifo "cache/$n" ;;
    3) mkdir "cache/$n"; echo x > "cache/$n/inside" ;;
    4) ln -s /dev/zero "cache/$n" ;;
    5) if [ $root = 1 ]; then mknod "cache/$n" c 1 5; else head -c 100 /dev/urandom > "cache/$n"; fi ;;
    6) head -c 70000 /dev/urandom > "cache/$n" ;;
    7) ln -s "$work/outside/sub/entry.fdlc" "cache/$n" ;;
  esac
}
fill_cache() { # fill_cache SHIFT: every name, and temporaries of them, with variant i + SHIFT
  rm -rf cache
  mkdir cache
  local i=0 n
  for n in "${names[@]}" stats; do
    plant "$n" $((i + $1))
    i=$((i + 1))
  done
  # names like fdlink's temporaries (a dead writer's, on this host and another)
  ln -s "$work/outside/victim.txt" "cache/${names[0]}.tmp.$(hostname | tr -cd 'a-zA-Z0-9-').1.00000000"
  mkfifo "cache/${names[0]%.*}.fdlc.tmp.otherhost.1.00000001"
  ln -s / "cache/${names[0]%.*}.fdlc.tmp.$(hostname | tr -cd 'a-zA-Z0-9-').999999.00000002"
}

runs=0
for shift in $(seq 0 $((rounds - 1))); do
  fill_cache "$shift"
  for pass in 1 2; do # a miss on hostile names, then (where a store replaced them) a hit
    pids=()
    for w in $(seq 1 "$writers"); do
      i=$((w % nlinks))
      # shellcheck disable=SC2086
      FDLINK_CACHE_DIR=$work/cache timeout $limit "$fdlink" link ${links[$i]} -o "out.$w" \
        2>"err.$w" &
      pids+=($!)
    done
    for w in $(seq 1 "$writers"); do
      runs=$((runs + 1))
      i=$((w % nlinks))
      wait "${pids[$((w - 1))]}"
      rc=$?
      if [ $rc = 124 ]; then
        fail "round $shift pass $pass: link $w hung (killed after $limit s)"
      elif [ $rc != 0 ]; then
        fail "round $shift pass $pass: link $w failed ($rc): $(cat "err.$w")"
      elif ! cmp -s "out.$w" "want.$i"; then
        fail "round $shift pass $pass: link $w: the cubin differs from FDLINK_CACHE=0's"
      fi
      lines=$(grep -c . "err.$w")
      if [ "$lines" -gt 1 ] || { [ "$lines" = 1 ] && ! grep -q "ignored" "err.$w"; }; then
        fail "round $shift pass $pass: link $w said: $(cat "err.$w")"
      fi
      rm -f "out.$w" "err.$w"
    done
  done
  # the administration commands on the same directory: nothing hangs, nothing outside changes
  for cmd in stats list verify prune clear; do
    timeout $limit "$fdlink" cache "$cmd" --dir "$work/cache" >/dev/null 2>"err.$cmd"
    rc=$?
    [ $rc = 124 ] && fail "round $shift: cache $cmd hung"
    [ $rc -gt 1 ] && [ $rc != 124 ] && fail "round $shift: cache $cmd crashed ($rc): $(cat "err.$cmd")"
    rm -f "err.$cmd"
  done
  after=$(sum_outside)
  [ "$before" = "$after" ] || fail "round $shift: the tree outside the cache changed:
$(diff <(echo "$before") <(echo "$after"))"
done
[ "$(stat -c '%F %t:%T' /dev/null)" = "$devnull_before" ] || fail "/dev/null changed"
[ "$(ls -A / | sha256sum)" = "$root_before" ] || fail "/ changed"
echo "hostile_cache: ${#names[@]} names + stats planted x $rounds rounds, $writers writers x 2 passes ($runs links): $bad failures"
[ "$bad" = 0 ]
