#!/usr/bin/env bash
# The CLI's first line is its own (issue 38): what NVIDIA's libraries write to the process's
# standard error during an in-process link (nvJitLink's "fatal   : Memory allocation failure"
# under `ulimit -v`) comes after fdlink's message, as the log, never before it. A stand-in
# nvJitLink (fake_nvjitlink.c, FDL_FAKE_STDERR) writes through stdio and through fd 2 in its
# option probe (nvJitLinkCreate: in fdlink's process with --no-isolate, the isolated child's log
# otherwise) or in the link itself
# (nvJitLinkComplete: in process with --no-isolate; the isolated child's output is the log
# already), then fails.
#   stderr.sh FDLINK FAKE_NVJITLINK DATA_DIR
set -uo pipefail
fdlink=$(realpath "$1") fake=$(realpath "$2") data=$(realpath "$3")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
cp "$data/link/caller.ptx" "$data/link/mul.ptx" .
bad=0
fail() { bad=$((bad + 1)); echo "stderr: $*" >&2; }
export FDLINK_NVJITLINK=$fake FDLINK_CACHE=0
for when in create complete; do
  for mode in --isolate --no-isolate; do
    [ "$when" = complete ] && [ "$mode" = --isolate ] && continue
    for v in "" -v; do
      name="$when $mode${v:+ $v}"
      FDL_FAKE_STDERR=$when "$fdlink" link $mode $v -arch=sm_90 caller.ptx mul.ptx \
        -o out.cubin >out 2>err
      rc=$?
      [ "$rc" = 1 ] || fail "$name: exit $rc, not 1"
      [ -e out.cubin ] && fail "$name: out.cubin written"
      head -n1 err | grep -q '^fdlink: ' || fail "$name: first line '$(head -n1 err)'"
      # the library's words stay, after fdlink's: both ways it wrote them
      n_fatal=$(grep -n '^fatal   : Memory allocation failure$' err | head -n1 | cut -d: -f1)
      n_raw=$(grep -n '^nvJitLink (fake): written to fd 2$' err | head -n1 | cut -d: -f1)
      n_own=$(grep -n '^fdlink: ' err | head -n1 | cut -d: -f1)
      if [ "$when" = create ] && [ "$mode" = --isolate ]; then
        # the probe of an isolated link runs in the child too: its words are the child's log,
        # and the message's headline says them
        head -n1 err | grep -q 'nvJitLink rejected the options: memory allocation failure$' ||
          fail "$name: first line '$(head -n1 err)'"
        continue
      fi
      { [ -n "$n_fatal" ] && [ -n "$n_raw" ]; } ||
        fail "$name: the library's text is not in stderr: $(head -c 400 err)"
      [ -n "$n_fatal" ] && [ "$n_fatal" -lt "$n_own" ] && fail "$name: the library's line first"
      # nothing of it on stdout, and no temporary file left behind
      [ -s out ] && fail "$name: stdout: $(head -c 200 out)"
    done
  done
done
# nvJitLink aborting in its option probe (LLVM's "out of memory" under an address-space limit):
# isolated (the CLI's default), one line naming the signal and what it printed, exit 1
FDL_FAKE_ABORT=create "$fdlink" link -arch=sm_90 caller.ptx mul.ptx -o out.cubin >out 2>err
rc=$?
[ "$rc" = 1 ] || fail "abort in the probe: exit $rc, not 1"
[ -e out.cubin ] && fail "abort in the probe: out.cubin written"
head -n1 err | grep -q "^fdlink: error: nvJitLink died of signal 6 ([A-Za-z ]*) checking the link's options: LLVM ERROR: out of memory$" ||
  fail "abort in the probe: first line '$(head -n1 err)'"
ls "${TMPDIR:-/tmp}"/fdlink-stderr-* >/dev/null 2>&1 && fail "a capture file was left in ${TMPDIR:-/tmp}"
[ "$bad" = 0 ] && echo "stderr: fdlink's message first, the library's text after it, every time"
exit $((bad != 0))
