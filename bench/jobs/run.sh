#!/usr/bin/env bash
# The build's job slots (bench/README.md, issue 32): 8 large link targets built by make -j8.
#   bash bench/jobs/run.sh FDLINK OUTDIR [N [TARGETS [ARCH]]]
# FDLINK: the fdlink CLI; OUTDIR: where the program, the Makefile and the table go; N: foreign
# functions of benchmark 9's program (default 64); TARGETS: link targets (default 8); ARCH: sm_NN
# (default: the GPU's, else sm_90). Needs nvcc, python3 and GNU make; no GPU. Each target links
# the whole program (LTO-IR, --no-cache, fdlink's defaults: a split on every processor) to a
# cubin of its own. Three builds, each timed from start to end:
#   1. make -jT with the jobserver passed to fdlink (recipes marked '+'): each link takes its
#      slot and the tokens free (fdlink link -v says how many);
#   2. make -jT without it (no '+': make 4.3 passes no descriptors), as before issue 32: T links
#      each on every processor (oversubscribed);
#   3. make -j1: the links one after the other, each on every processor.
# Every cubin's code must be the same (ptxas's note of its command line aside): checked by
# comparing the cubins with the thread count's note blanked.
set -uo pipefail
fdlink=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
n=${3:-64}
targets=${4:-8}
here=$(cd "$(dirname "$0")" && pwd)
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
unset MAKEFLAGS MFLAGS FDLINK_JOBS
d=$out/n$n
if [ ! -s "$d/kernels.ltoir" ]; then
  rm -rf "$d"
  python3 "$here/../large/gen.py" "$n" 64 16 "$d" || exit 1
  (cd "$d" && ls ./*.cu | sed 's|^\./||; s/\.cu$//' | xargs -P "$(nproc)" -I{} \
    nvcc -ltoir -dlto -rdc=true -arch=lto_${arch#sm_} -o {}.ltoir {}.cu) || exit 1
fi
inputs=$(ls "$d"/f*.ltoir | tr '\n' ' ')"$d/kernels.ltoir"
build() { # tag prefix jobs
  local tag=$1 prefix=$2 jobs=$3 mk=$out/Makefile.$1
  rm -rf "$out/$tag"
  mkdir -p "$out/$tag"
  {
    printf 'all:'
    for i in $(seq 1 "$targets"); do printf ' %s/%s.cubin' "$out/$tag" "$i"; done
    printf '\n%s/%%.cubin:\n\t%s%s link -v -arch=%s --no-cache -o $@ %s 2> $@.log\n' \
      "$out/$tag" "$prefix" "$fdlink" "$arch" "$inputs"
  } > "$mk"
  local t0=$EPOCHREALTIME
  make -s -j"$jobs" -f "$mk" > "$out/$tag.make.log" 2>&1 || { echo "$tag: make failed"; cat "$out/$tag.make.log"; return 1; }
  awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $t0 }"
}
jobs=$(build jobserver + "$targets") || exit 1
over=$(build oversubscribed "" "$targets") || exit 1
serial=$(build serial "" 1) || exit 1
# the code: each cubin with ptxas's "-split-compile N" note blanked, against the first serial one
same=all
ref=$out/serial/1.cubin
blank() { sed -E 's/-split-compile [0-9]+/-split-compile _/g' "$1"; }
for f in "$out"/*/[0-9]*.cubin; do
  cmp -s <(blank "$f") <(blank "$ref") || { same="$f differs"; break; }
done
grants=$(grep -ho "split compilation: .*" "$out"/jobserver/*.log | sort | uniq -c | tr '\n' ';')
table=$out/jobs.md
{
  echo "# The build's job slots ($targets link targets, $n functions, $arch, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "| build | seconds | / serial |"
  echo "|---|---|---|"
  echo "| make -j$targets, jobserver passed (fdlink takes tokens) | $jobs | $(awk "BEGIN { printf \"%.2f\", $jobs / $serial }") |"
  echo "| make -j$targets, no jobserver (each link on every processor) | $over | $(awk "BEGIN { printf \"%.2f\", $over / $serial }") |"
  echo "| make -j1 (serial, each on every processor) | $serial | 1.00 |"
  echo
  echo "Threads the jobserver build's links took: $grants. Cubins' code (ptxas's thread note aside): $same equal."
} > "$table"
cat "$table"
[ "$same" = all ]
