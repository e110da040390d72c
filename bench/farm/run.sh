#!/usr/bin/env bash
# The farm benchmark (bench/README.md, issue 32): a farm's cold start, P processes that share one
# cache directory (MODE dir), or P "machines" that share only a Redis remote, each process with a
# cache directory of its own (MODE redis), missing the same key at once.
#   bash bench/farm/run.sh FDLINK OUTDIR [P [N [ARCH [MODE]]]]
# FDLINK: the fdlink CLI; OUTDIR: where the program, the caches, the logs and the table go;
# P: processes (default 16); N: foreign functions of benchmark 9's generated program (default
# 64; always 64 kernels); ARCH: sm_NN (default: the GPU's, else sm_90). Needs nvcc and python3;
# no GPU (nothing is run on one). Measured, each a fresh empty cache directory:
#   1. one link alone (the baseline);
#   2. P processes started at once: the time until the last has its cubin, over the baseline
#      (goal <= 1.2), and how many ran nvJitLink (`-v` says `cache: miss, linked`; goal 1);
#   3. the same with the lease's holder killed (SIGKILL, the pid from /proc/locks, or in MODE
#      redis from the lease's token on the server) once it holds the lease: every other process
#      must still finish with the cubin (in MODE redis after the lease's 5 s time to live).
# MODE redis starts redis-server ($REDIS_SERVER, else the one on PATH; the libraries beside it
# found first) on a free loopback port, nothing saved; fdlink opens hiredis (FDLINK_LIBHIREDIS
# names it where it is not installed). bench/farm/carry_redis.sh puts both in .gpu/redis/.
# Every cubin is compared with the baseline's byte for byte. Exit status 1 when a goal is missed
# or a process fails.
set -uo pipefail
fdlink=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
procs=${3:-16}
n=${4:-64}
mode=${6:-dir}
here=$(cd "$(dirname "$0")" && pwd)
case $mode in dir|redis) ;; *) echo "MODE is dir or redis, not '$mode'" >&2; exit 2 ;; esac
if [ -n "${5:-}" ]; then
  arch=$5
elif cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .) && [ -n "$cap" ]; then
  arch=sm_$cap
else
  arch=sm_90
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
export CUDA_CACHE_DISABLE=1
unset FDLINK_CACHE FDLINK_CACHE_REMOTE FDLINK_CACHE_LEASE_MS
secs() { awk "BEGIN { printf \"%.2f\", $2 - $1 }"; }
d=$out/n$n
if [ ! -s "$d/kernels.ltoir" ]; then
  rm -rf "$d"
  python3 "$here/../large/gen.py" "$n" 64 16 "$d" || exit 1
  (cd "$d" && ls ./*.cu | sed 's|^\./||; s/\.cu$//' | xargs -P "$(nproc)" -I{} \
    nvcc -ltoir -dlto -rdc=true -arch=lto_${arch#sm_} -o {}.ltoir {}.cu) || exit 1
fi
lto=("$d"/f*.ltoir "$d/kernels.ltoir")
fail=0
remote=
if [ "$mode" = redis ]; then
  redis=${REDIS_SERVER:-$(command -v redis-server)} || { echo "no redis-server (set REDIS_SERVER)" >&2; exit 2; }
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$out/redis"
  LD_LIBRARY_PATH=$(dirname "$redis")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$redis" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$out/redis" \
    > "$out/redis/log" 2>&1 &
  redis_pid=$!
  trap 'kill "$redis_pid" 2>/dev/null' EXIT
  for _ in $(seq 1 500); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.01; done
  remote=redis://127.0.0.1:$port
fi
# One command to the Redis server; its reply's lines, CR removed.
redis_say() {
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf '%s\r\nQUIT\r\n' "$1" >&3
  timeout 2 cat <&3 | tr -d '\r' | head -"${2:-2}"
  exec 3<&-
}

# 1. one link alone
rm -rf "$out/cache1"
t0=$EPOCHREALTIME
FDLINK_CACHE_DIR=$out/cache1 "$fdlink" link -v -arch=$arch -o "$out/single.cubin" "${lto[@]}" \
  > "$out/single.log" 2>&1 || { echo "the single link failed: $(tail -c 300 "$out/single.log")"; exit 1; }
single=$(secs "$t0" "$EPOCHREALTIME")
echo "one link alone: $single s ($(wc -c < "$out/single.cubin") bytes of cubin, $arch, $(nproc) cores)"

# P processes at once, from a gate (a FIFO opened by all, released by one write of P bytes)
farm() {
  local tag=$1 kill_holder=$2 cache=$out/cache_$1
  rm -rf "$cache" "$out/$tag"
  mkdir -p "$cache" "$out/$tag"
  [ "$mode" = redis ] && redis_say FLUSHALL 1 > /dev/null # the remote empty too
  local gate=$out/$tag/gate
  mkfifo "$gate"
  exec 9<>"$gate" # read-write: never blocks, and keeps the gate open for late readers
  local pids=()
  for i in $(seq 1 "$procs"); do
    (read -r -n 1 < "$gate"
     s=$EPOCHREALTIME
     c=$cache
     [ "$mode" = redis ] && c=$cache/$i # a machine of its own: only the remote is shared
     FDLINK_CACHE_REMOTE=$remote FDLINK_CACHE_DIR=$c "$fdlink" link -v -arch=$arch -o "$out/$tag/$i.cubin" "${lto[@]}" \
       > "$out/$tag/$i.log" 2>&1
     echo "$? $s $EPOCHREALTIME" > "$out/$tag/$i.status") &
    pids+=($!)
  done
  local start=$EPOCHREALTIME
  printf '%*s' "$procs" '' | tr ' ' x >&9 # one byte each
  local killed=
  if [ "$kill_holder" = 1 ] && [ "$mode" = redis ]; then
    # the holder: the pid in the lease's token ("host:pid:time:address"), once there is one
    for _ in $(seq 1 3000); do
      local key token
      key=$(redis_say 'KEYS fdlink-lease:*' 3 | sed -n 3p)
      if [ -n "$key" ]; then
        token=$(redis_say "GET $key" 2 | sed -n 2p)
        killed=$(echo "$token" | cut -d: -f2)
        [ -n "$killed" ] && kill -KILL "$killed" 2>/dev/null && break
        killed=
      fi
      sleep 0.02
    done
  elif [ "$kill_holder" = 1 ]; then
    # the holder: the pid /proc/locks gives for the lease file's inode, once there is one
    for _ in $(seq 1 6000); do
      local f
      f=$(ls "$cache"/*.lease 2>/dev/null | head -1)
      if [ -n "$f" ]; then
        local ino
        ino=$(stat -c %i "$f" 2>/dev/null) || continue
        killed=$(awk -v ino="$ino" '$2 == "FLOCK" { split($6, a, ":"); if (a[3] == ino) print $5 }' /proc/locks | head -1)
        [ -n "$killed" ] && kill -KILL "$killed" 2>/dev/null && break
        killed=
      fi
      sleep 0.01
    done
  fi
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null; done # their status files tell
  exec 9>&-
  local last=0 linked=0 bad=0 ok=0 seen_killed=
  for i in $(seq 1 "$procs"); do
    read -r rc s e < "$out/$tag/$i.status" || { rc=99; e=$start; }
    if [ "$rc" != 0 ]; then
      # the killed holder's own process
      if [ -n "$killed" ] && [ "$rc" = 137 ] && [ -z "${seen_killed:-}" ]; then seen_killed=1; continue; fi
      echo "  $tag: process $i exited $rc: $(tail -c 200 "$out/$tag/$i.log")"; bad=$((bad + 1)); continue
    fi
    cmp -s "$out/$tag/$i.cubin" "$out/single.cubin" || { echo "  $tag: process $i's cubin differs"; bad=$((bad + 1)); }
    grep -q "cache: miss, linked" "$out/$tag/$i.log" && linked=$((linked + 1))
    ok=$((ok + 1))
    last=$(awk -v a="$last" -v b="$(secs "$start" "$e")" 'BEGIN { print (b > a ? b : a) }')
  done
  echo "$tag $ok $linked $bad $last ${killed:-none}"
}
read -r _ ok linked bad last _ < <(farm cold 0 | tee /dev/stderr | tail -1)
ratio=$(awk "BEGIN { printf \"%.2f\", $last / $single }")
verdict_t=$(awk "BEGIN { print ($ratio <= 1.2) ? \"met\" : \"MISSED\" }")
verdict_n=$([ "$linked" = 1 ] && echo met || echo MISSED)
[ "$bad" = 0 ] && [ "$ok" = "$procs" ] && [ "$verdict_n" = met ] && [ "$verdict_t" = met ] || fail=1
read -r _ kok klinked kbad klast killed < <(farm killed 1 | tee /dev/stderr | tail -1)
[ "$kbad" = 0 ] && [ "$killed" != none ] || fail=1
table=$out/farm$([ "$mode" = redis ] && echo -redis).md
{
  echo "# The farm benchmark ($procs processes, $([ "$mode" = redis ] && echo "each a machine of its own sharing a Redis remote" || echo "one cache directory"), $n functions, $arch, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "| run | seconds | / one link | processes ok | ran nvJitLink | cubins equal | goal |"
  echo "|---|---|---|---|---|---|---|"
  echo "| one link alone | $single | 1.00 | 1 | 1 | - | - |"
  echo "| $procs at once | $last | $ratio | $ok of $procs | $linked | $([ "$bad" = 0 ] && echo all || echo "$bad differ or failed") | last <= 1.2x: $verdict_t; one linker: $verdict_n |"
  echo "| $procs at once, holder killed (pid $killed) | $klast | $(awk "BEGIN { printf \"%.2f\", $klast / $single }") | $kok of $((procs - 1)) others | $klinked | $([ "$kbad" = 0 ] && echo all || echo "$kbad differ or failed") | all others finish: $([ "$kbad" = 0 ] && echo met || echo MISSED) |"
} > "$table"
echo
cat "$table"
exit $fail
