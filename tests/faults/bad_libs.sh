#!/usr/bin/env bash
# Libraries that misbehave at load (issue 35): a stand-in nvJitLink (fake_nvjitlink.c) whose
# initialiser exits 0, aborts, crashes or never returns, given through FDLINK_NVJITLINK.
#   - `fdlink doctor` tries each library in a child first: the report goes on, and its nvjitlink
#     line names the library and what it did;
#   - any command with FDLINK_PROBE_LIBS=1: exit 1, one line, no output;
#   - without it, an initialiser's exit(0) is no success: exit 1 and one line naming the library
#     (before: exit 0 and no cubin; then a line naming none), for link and run alike; a load that
#     stalls, stopped by a signal, is named too (issue 40).
# The hanging one is bounded by FDLINK_PROBE_LIBS_TIMEOUT_MS=1000 (it never returns: no verdict
# depends on the machine's speed).
#   bad_libs.sh FDLINK FAKE_NVJITLINK DATA_DIR
set -uo pipefail
fdlink=$(realpath "$1") fake=$(realpath "$2") data=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
cp "$data/link/caller.ptx" "$data/link/mul.ptx" .
bad=0
fail() { bad=$((bad + 1)); echo "bad_libs: $*" >&2; }
export FDLINK_NVJITLINK=$fake FDLINK_CACHE=0 FDLINK_PROBE_LIBS_TIMEOUT_MS=1000
declare -A says=([exit]="ended the process while loading" [abort]="crashed while loading: signal 6"
                 [segv]="crashed while loading: signal 11" [sleep]="did not finish loading within 1000 ms")
for how in exit abort segv sleep; do
  export FDL_FAKE_INIT=$how
  # doctor: the report goes on past nvJitLink
  timeout 120 "$fdlink" doctor >out 2>err
  rc=$?
  grep -q "^nvjitlink .*not usable: cannot load nvJitLink: .*${says[$how]}" out ||
    fail "$how: doctor's nvjitlink line: $(grep '^nvjitlink' out) (exit $rc) $(head -c 300 err)"
  grep -q '^nvrtc ' out || fail "$how: doctor's report stopped at nvJitLink (exit $rc)"
  # any command behind FDLINK_PROBE_LIBS=1
  FDLINK_PROBE_LIBS=1 timeout 120 "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o out.cubin 2>err
  rc=$?
  [ "$rc" = 1 ] || fail "$how: FDLINK_PROBE_LIBS=1 link: exit $rc, not 1: $(head -c 300 err)"
  [ "$(wc -l <err)" = 1 ] || fail "$how: FDLINK_PROBE_LIBS=1 link said $(wc -l <err) lines"
  grep -q "${says[$how]}" err || fail "$how: FDLINK_PROBE_LIBS=1 link said: $(head -c 300 err)"
  [ -e out.cubin ] && fail "$how: FDLINK_PROBE_LIBS=1 link wrote out.cubin"
  rm -f out.cubin
done
# FDLINK_PROBE_LIBS unset under an address-space limit (ulimit -v): the trial is on by itself
# (nvJitLink's initialiser aborts when it runs out of memory there: "LLVM ERROR: out of memory")
# (AddressSanitizer reserves terabytes of shadow space and does not run under ulimit -v: that
# build, .ci/sanitize.sh, leaves this case out, as limits.sh does)
if grep -qa '__asan_init' "$fdlink"; then
  echo "bad_libs: SKIP the abort under ulimit -v: fdlink is built with AddressSanitizer"
else
  (ulimit -v 8388608 && FDL_FAKE_INIT=abort exec timeout 120 "$fdlink" link -arch=sm_90 \
    caller.ptx mul.ptx -o out.cubin) 2>err
  rc=$?
  [ "$rc" = 1 ] || fail "abort under ulimit -v: exit $rc, not 1: $(head -c 300 err)"
  [ "$(wc -l <err)" = 1 ] || fail "abort under ulimit -v said $(wc -l <err) lines"
  grep -q "${says[abort]}" err || fail "abort under ulimit -v said: $(head -c 300 err)"
  [ -e out.cubin ] && fail "abort under ulimit -v: out.cubin written"
fi
# without the probe: an initialiser's exit(0) is not fdlink's success
FDL_FAKE_INIT=exit timeout 120 "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o out.cubin 2>err
rc=$?
[ "$rc" = 1 ] || fail "exit without the probe: exit $rc, not 1: $(head -c 300 err)"
# ... and the library is named (issue 40: before, "the process was ended from inside a library")
grep -q "^fdlink: error: $fake ended the process while loading" err ||
  fail "exit without the probe, the library not named: $(cat err)"
[ "$(wc -l <err)" = 1 ] || fail "exit without the probe said $(wc -l <err) lines"
[ -e out.cubin ] && fail "exit without the probe: out.cubin written"
# inspect and run load libraries too: named as well (inspect loads nvJitLink for nothing, so
# run's driver: a fake libcuda that exits; FDLINK_LIBCUDA names it)
FDL_FAKE_INIT=exit FDLINK_LIBCUDA=$fake timeout 120 "$fdlink" run mul.ptx -k k 2>err
rc=$?
[ "$rc" = 1 ] || fail "run, a driver that exits: exit $rc, not 1: $(head -c 300 err)"
grep -q "^fdlink: error: $fake ended the process while loading" err ||
  fail "run, a driver that exits, not named: $(cat err)"
# a load that stalls, stopped (timeout's TERM): the library named, the end the signal's own
FDL_FAKE_INIT=sleep timeout -s TERM 3 "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o out.cubin 2>err
rc=$?
[ "$rc" = 124 ] || fail "a stalled load: exit $rc, not 124 (timeout's): $(head -c 300 err)"
grep -q "^fdlink: error: stopped while loading $fake, which had not finished loading" err ||
  fail "a stalled load, stopped, not named: $(cat err)"
[ -e out.cubin ] && fail "a stalled load: out.cubin written"
[ "$bad" = 0 ] && echo "bad_libs: every misbehaving library was a one-line diagnosis"
exit $((bad != 0))
