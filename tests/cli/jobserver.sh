#!/usr/bin/env bash
# The build's job slots (issue 32; label cli): `fdlink link` of a large link (split compilation
# on every processor) under a real `make -j4` jobserver takes its own slot and as many of the 3
# free tokens as the processors allow, runs on at least 2 threads (one would lay the code out
# otherwise), and gives the tokens back (make 4.4 and later say so at exit when a token is lost; the
# fifo form is checked by hand below); `make -j1` has no jobserver; FDLINK_JOBS and --jobs bound
# the threads without one; FDLINK_MEMORY_BUDGET (the memory budget) bounds them either way.
# Skips (77) without make or nvJitLink.
# usage: jobserver.sh FDLINK FIXTURES
set -uo pipefail
fdlink=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixtures=$(cd "$2" && pwd)
n=$(nproc)
min() { [ "$1" -lt "$2" ] && echo "$1" || echo "$2"; }
max() { [ "$1" -gt "$2" ] && echo "$1" || echo "$2"; }
threads() { [ "$1" = 1 ] && echo "1 thread" || echo "$1 threads"; }
tokens() { [ "$1" = 1 ] && echo "1 token" || echo "$1 tokens"; }
command -v make >/dev/null || { echo "no make: skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# 2000 empty device functions: 80 KB of PTX, a link fdlink splits on every processor
{
  printf '.version 9.0\n.target sm_90\n.address_size 64\n\n'
  for i in $(seq -w 0 1999); do printf '.visible .func pad_%s()\n{\n\tret;\n}\n' "$i"; done
} > "$dir/pad.ptx"
inputs="$fixtures/caller.ptx $fixtures/mul.ptx $dir/pad.ptx"
"$fdlink" link -arch=sm_90 --no-cache -o "$dir/probe.cubin" $inputs > "$dir/probe.log" 2>&1 ||
  { grep -q "nvJitLink" "$dir/probe.log" && { echo "no nvJitLink: skipped"; exit 77; }; cat "$dir/probe.log"; exit 1; }
fail=0
expect() { grep -qF -- "$2" "$1" || { echo "FAIL: $3: expected '$2' in:"; grep -v "^ptxas\|^info" "$1" | tail -8; fail=1; }; }
cat > "$dir/Makefile" <<MK
all:
	+$fdlink link -v -arch=sm_90 --no-cache -o $dir/out.cubin $inputs 2> $dir/link.log
MK
unset MAKEFLAGS MFLAGS FDLINK_JOBS
make -s -j4 -C "$dir" > "$dir/make.log" 2>&1 || { echo "FAIL: make -j4"; cat "$dir/make.log" "$dir/link.log"; fail=1; }
t=$(min 4 "$n")
expect "$dir/link.log" "split compilation: $(threads "$(max 2 "$t")") ($(tokens $((t - 1))) of the jobserver)" "make -j4"
if grep -q "jobserver" "$dir/make.log"; then echo "FAIL: make complains:"; cat "$dir/make.log"; fail=1; fi
make -s -j1 -C "$dir" > "$dir/make.log" 2>&1 || { echo "FAIL: make -j1"; cat "$dir/make.log"; fail=1; }
if grep -q "split compilation" "$dir/link.log"; then echo "FAIL: make -j1 has no jobserver"; cat "$dir/link.log"; fail=1; fi
# make 4.4's fifo form, by hand: 2 tokens in a FIFO; both back once fdlink is done
mkfifo "$dir/fifo"
exec 9<>"$dir/fifo"
printf 'ab' >&9
MAKEFLAGS="-j3 --jobserver-auth=fifo:$dir/fifo" "$fdlink" link -v -arch=sm_90 --no-cache \
  -o "$dir/out2.cubin" $inputs 2> "$dir/fifo.log" || { echo "FAIL: fifo link"; cat "$dir/fifo.log"; fail=1; }
t=$(min 3 "$n")
expect "$dir/fifo.log" "split compilation: $(threads "$(max 2 "$t")") ($(tokens $((t - 1))) of the jobserver)" "fifo jobserver"
back=$(timeout 10 head -c 2 <&9)
[ "$back" = ab ] || [ "$back" = ba ] || { echo "FAIL: the fifo's tokens did not come back ('$back')"; fail=1; }
exec 9>&-
# no jobserver: FDLINK_JOBS and --jobs
FDLINK_JOBS=2 "$fdlink" link -v -arch=sm_90 --no-cache -o "$dir/out3.cubin" $inputs 2> "$dir/env.log"
expect "$dir/env.log" "split compilation: $(threads "$(min 2 "$n")") (FDLINK_JOBS or --jobs)" "FDLINK_JOBS=2"
"$fdlink" link -v --jobs 3 -arch=sm_90 --no-cache -o "$dir/out4.cubin" $inputs 2> "$dir/opt.log"
expect "$dir/opt.log" "split compilation: $(threads "$(min 3 "$n")") (FDLINK_JOBS or --jobs)" "--jobs 3"
# the memory budget (FDLINK_MEMORY_BUDGET in place of the machine's free memory): 256 MiB and the
# inputs per thread, jobserver or not
FDLINK_MEMORY_BUDGET=300M "$fdlink" link -v -arch=sm_90 --no-cache -o "$dir/out5.cubin" $inputs 2> "$dir/mem1.log"
expect "$dir/mem1.log" "split compilation: 1 thread (the memory budget)" "FDLINK_MEMORY_BUDGET=300M"
FDLINK_MEMORY_BUDGET=800M "$fdlink" link -v -arch=sm_90 --no-cache -o "$dir/out6.cubin" $inputs 2> "$dir/mem3.log"
if [ "$n" -gt 3 ]; then
  expect "$dir/mem3.log" "split compilation: 3 threads (the memory budget)" "FDLINK_MEMORY_BUDGET=800M"
elif grep -q "split compilation" "$dir/mem3.log"; then
  echo "FAIL: 800M holds 3 threads, more than the $n processors: no bound"; cat "$dir/mem3.log"; fail=1
fi
FDLINK_MEMORY_BUDGET=1T "$fdlink" link -v -arch=sm_90 --no-cache -o "$dir/out7.cubin" $inputs 2> "$dir/memall.log"
if grep -q "split compilation" "$dir/memall.log"; then echo "FAIL: 1T bounds nothing"; cat "$dir/memall.log"; fail=1; fi
FDLINK_MEMORY_BUDGET=800M FDLINK_JOBS=2 "$fdlink" link -v -arch=sm_90 --no-cache -o "$dir/out8.cubin" $inputs 2> "$dir/memjobs.log"
expect "$dir/memjobs.log" "split compilation: $(threads "$(min 2 "$n")") (FDLINK_JOBS or --jobs)" "FDLINK_JOBS=2 under 800M"
printf 'all:\n\t+FDLINK_MEMORY_BUDGET=300M %s link -v -arch=sm_90 --no-cache -o %s/out9.cubin %s 2> %s/memmake.log\n' \
  "$fdlink" "$dir" "$inputs" "$dir" > "$dir/Makefile.mem"
make -s -j4 -C "$dir" -f Makefile.mem > "$dir/make.log" 2>&1 || { echo "FAIL: make -j4 (memory)"; cat "$dir/make.log"; fail=1; }
expect "$dir/memmake.log" "split compilation: 1 thread (the memory budget)" "make -j4 under 300M"
[ "$fail" = 0 ] && echo "jobserver: clean"
exit "$fail"
