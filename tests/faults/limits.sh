#!/usr/bin/env bash
# No success without a result (issue 35): `fdlink link` under `ulimit -n` (open files), `-v`
# (address space) and `-u` (processes; as user nobody where this is root, since root ignores
# RLIMIT_NPROC) at every value from the smallest up to where the link works. Passes when every
# run either exits 0 with the cubin that an unlimited link writes, byte for byte, or exits
# non-zero with a message and no output file; when the cache it shared holds nothing that
# `fdlink cache verify` removes; and when an unlimited link with that cache afterwards works and
# writes the same cubin (a bad entry stored under a limit would crash or corrupt it).
#   limits.sh FDLINK DATA_DIR
set -uo pipefail
fdlink=$(realpath "$1") data=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 0777 "$work"
cd "$work" || exit 1
cp "$data/link/caller.ptx" "$data/link/mul.ptx" .
chmod 0644 caller.ptx mul.ptx
bad=0
fail() { bad=$((bad + 1)); echo "limits: $*" >&2; }
FDLINK_CACHE=0 "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o want.cubin 2>err ||
  { echo "limits: the link does not run here: $(cat err)"; exit 1; }

# one run under a limit: judge it; linked=1 when it linked
judge() { # NAME RC
  local name=$1 rc=$2
  linked=0
  if [ "$rc" = 127 ] && grep -q 'error while loading shared libraries' err; then
    rm -f out.cubin
    return # the dynamic loader, before fdlink runs
  fi
  if [ "$rc" = 0 ]; then
    if ! cmp -s want.cubin out.cubin; then
      fail "$name: exit 0 but the cubin is $(stat -c %s out.cubin 2>/dev/null || echo absent) bytes, not the $(stat -c %s want.cubin) wanted"
    else
      linked=1
    fi
  else
    [ -e out.cubin ] && fail "$name: exit $rc but out.cubin was written"
    [ -s err ] || fail "$name: exit $rc without a message"
    head -n1 err | grep -q '^fdlink: ' || fail "$name: exit $rc, message '$(head -n1 err)'"
    # an exit by a signal is no answer (a crash of fdlink itself)
    [ "$rc" -gt 128 ] && fail "$name: fdlink died of signal $((rc - 128)): $(head -n1 err)"
  fi
  rm -f out.cubin
}

# after a series: the cache it shared holds only good entries, and serves a working link
after() { # NAME CACHE
  local name=$1 cache=$2 out
  out=$("$fdlink" cache --dir "$cache" verify 2>&1) || fail "$name: cache verify failed: $out"
  printf '%s\n' "$out" | grep -q ': 0 bad files removed$' ||
    fail "$name: cache verify found entries a limited run stored: $out"
  FDLINK_CACHE_DIR=$cache "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o out.cubin 2>err
  judge "$name, then unlimited" $?
  FDLINK_CACHE_DIR=$cache "$fdlink" link --no-isolate -arch=sm_90 caller.ptx mul.ptx \
    -o out.cubin 2>err
  judge "$name, then unlimited --no-isolate" $?
}

# ---- open files: 3 (the standard streams) up; isolated and in-process ------------------------
for mode in isolate no-isolate; do
  cache=$work/cache-n-$mode
  flag=()
  [ "$mode" = no-isolate ] && flag=(--no-isolate)
  worked=0
  for n in $(seq 3 64); do
    (ulimit -n "$n" && FDLINK_CACHE_DIR=$cache exec "$fdlink" link "${flag[@]}" -arch=sm_90 \
      caller.ptx mul.ptx -o out.cubin) 2>err
    judge "ulimit -n $n ($mode)" $?
    [ "$linked" = 1 ] && worked=$((worked + 1))
    [ "$worked" -ge 3 ] && break
  done
  [ "$worked" -ge 3 ] || fail "ulimit -n ($mode): the link never worked up to 64 files"
  after "ulimit -n ($mode)" "$cache"
done

# ---- address space: 16 MiB up, in 4 MiB steps ----------------------------------------------
# AddressSanitizer reserves terabytes of shadow address space and does not run under ulimit -v
# (its own documentation says so): that build (.ci/sanitize.sh) skips this series.
cache=$work/cache-v
worked=0
asan=0
grep -qa '__asan_init' "$fdlink" && asan=1
[ "$asan" = 1 ] && echo "limits: SKIP ulimit -v: fdlink is built with AddressSanitizer"
for kb in $(seq 16384 4096 1048576); do
  [ "$asan" = 1 ] && break
  (ulimit -v "$kb" && FDLINK_CACHE_DIR=$cache exec "$fdlink" link -arch=sm_90 caller.ptx \
    mul.ptx -o out.cubin) 2>err
  judge "ulimit -v $kb" $?
    [ "$linked" = 1 ] && worked=$((worked + 1))
  [ "$worked" -ge 2 ] && break
done
if [ "$asan" = 0 ]; then
  [ "$worked" -ge 2 ] || fail "ulimit -v: the link never worked up to 1 GiB"
  after "ulimit -v" "$cache"
fi

# ---- processes: 1 up, as a user that RLIMIT_NPROC binds -------------------------------------
as=()
if [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null &&
     setpriv --reuid=65534 --regid=65534 --clear-groups -- "$fdlink" --version >/dev/null 2>&1; then
    as=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  else
    echo "limits: SKIP ulimit -u: root ignores RLIMIT_NPROC and user nobody cannot run fdlink here"
    as=(skip)
  fi
fi
if [ "${as[0]:-}" != skip ]; then
  cache=$work/cache-u
  mkdir -m 0777 "$cache"
  worked=0
  for u in $(seq 1 64); do
    "${as[@]}" bash -c 'ulimit -u "$1" 2>/dev/null || exit 99; FDLINK_CACHE_DIR=$2 exec "$3" link \
      -arch=sm_90 caller.ptx mul.ptx -o out.cubin' _ "$u" "$cache" "$fdlink" 2>err
    rc=$?
    if [ "$rc" = 99 ] || { [ "$rc" = 1 ] && grep -q '^bash: ' err && ! grep -q '^fdlink' err; }; then
      continue # the shell itself could not start fdlink under this limit
    fi
    judge "ulimit -u $u" $rc
    [ "$linked" = 1 ] && worked=$((worked + 1))
    [ "$worked" -ge 2 ] && break
  done
  [ "$worked" -ge 2 ] || fail "ulimit -u: the link never worked up to 64 processes"
  after "ulimit -u" "$cache"
fi

# ---- option texts at their bound (issue 35): nvJitLink's ptxas takes a 64 KiB option cleanly
# (it overflows a heap buffer from 99,964 bytes; fdlink refuses more than 65,536), in process,
# with glibc's heap checks on; one byte more is refused before nvJitLink is loaded (exit 2)
long=$(head -c 65535 /dev/zero | tr '\0' x)
GLIBC_TUNABLES=glibc.malloc.check=3 FDLINK_CACHE=0 "$fdlink" link --no-isolate -arch=sm_90 \
  -Xptxas "-$long" caller.ptx mul.ptx -o out.cubin 2>err
rc=$?
[ "$rc" = 1 ] || fail "a 65,536-byte ptxas option: exit $rc, not 1 (nvJitLink's refusal)"
rm -f out.cubin
FDLINK_CACHE=0 "$fdlink" link --no-isolate -arch=sm_90 -Xptxas "-x$long" caller.ptx mul.ptx \
  -o out.cubin 2>err
rc=$?
[ "$rc" = 2 ] || fail "a 65,537-byte ptxas option: exit $rc, not 2"
grep -q 'a ptxas option may have at most 65536' err || fail "65,537 bytes: $(head -c 200 err)"

# ---- a parent that ignores SIGCHLD (its children are reaped for it): the isolated link's
# waitpid finds none, and the link still gives its cubin
if command -v python3 >/dev/null; then
  FDLINK_CACHE=0 python3 -c 'import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o out.cubin 2>err
  judge "SIGCHLD ignored" $?
  [ "$linked" = 1 ] || fail "SIGCHLD ignored: no cubin: $(head -c 300 err)"
fi

# ---- a 2 GiB bundle (sparse, its checksum wrong at the end) imported in bounded memory ---------
# (issue 35: import read the whole file into memory). Peak resident size, from getrusage.
if command -v python3 >/dev/null; then
  truncate -s 2G big.fdlb
  printf 'FDLBUNDL\001\000\000\000\000\000\000\000' | dd of=big.fdlb conv=notrunc 2>/dev/null
  peak=$(python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True)
print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
    "$fdlink" cache --dir "$work/cache-import" import big.fdlb)
  rm -f big.fdlb
  read -r rc kb <<<"$peak"
  [ "$rc" = 1 ] || fail "import of a damaged 2 GiB bundle: exit $rc, not 1"
  [ "$kb" -lt 262144 ] || fail "import of a 2 GiB bundle peaked at $kb KiB resident (bound: 256 MiB)"
  [ -n "$(ls -A "$work/cache-import" 2>/dev/null | grep fdlc)" ] &&
    fail "import of a damaged bundle stored entries"
else
  echo "limits: SKIP the bundle's memory bound: no python3"
fi

[ "$bad" = 0 ] && echo "limits: every run under a limit either linked or failed cleanly"
exit $((bad != 0))
