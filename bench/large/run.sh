#!/usr/bin/env bash
# Benchmark 9, large programs (bench/README.md): bash bench/large/run.sh FDLINK OUTDIR [N...]
# FDLINK: the fdlink CLI to measure; OUTDIR: where the program, the cubins and the table go;
# N: the sizes, in foreign functions (default 64 256; always 64 kernels). Needs nvcc, a C
# compiler, python3 and a GPU (every cubin's kernels are run and their outputs compared).
# Every link is a fresh process timed from spawn to exit, CUDA_CACHE_DISABLE=1 and --no-cache,
# so no cache of nvJitLink's or fdlink's serves it. Exit status 1 when a link or a check fails.
# fdlink's default links a large LTO program partitioned (issue 41, docs/linking.md): its rows
# show the speed against raw nvJitLink's default, the cubin byte for byte against fdlink's own
# (again, and with --jobs 8: the same bytes whatever the job count; -v, which ptxas records in
# .note.nv.tkinfo, against -v only), every kernel's output
# against raw's (verify.cu) and, where cuobjdump is, how many kernels' SASS equals raw's.
# BENCH9_QUICK=1: only those rows, and fdlink unpartitioned (FDLINK_PARTITION=0) for comparison.
set -uo pipefail
fdlink=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
shift 2
sizes=${*:-64 256}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
export CUDA_CACHE_DISABLE=1 FDLINK_CACHE=0
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
arch=sm_$cap
cc -O2 -o "$out/rawlink" "$here/rawlink.c" -ldl || exit 1
nvcc -O2 -o "$out/verify" "$here/verify.cu" || exit 1
table=$out/bench9.md
{
  echo "# Benchmark 9: large programs ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
  echo
  echo "| N | inputs | variant | seconds | raw default / this | cubin | kernel outputs |"
  echo "|---|---|---|---|---|---|---|"
} > "$table"
fail=0
notes=()
secs() { awk "BEGIN { printf \"%.2f\", $2 - $1 }"; }
# run NAME CUBIN COMMAND...: time one link; the seconds in $last
run() {
  local name=$1 cubin=$2
  shift 2
  local t0=$EPOCHREALTIME
  timeout 300 "$@" > "$out/$name.log" 2>&1
  local rc=$?
  last=$(secs "$t0" "$EPOCHREALTIME")
  [ $rc -eq 0 ] && [ -s "$cubin" ] || { last=; echo "  $name: failed (exit $rc): $(tail -c 300 "$out/$name.log")"; }
}
# row N KIND NAME CUBIN BASE_SECONDS BASE_CUBIN BASE_OUT [ONLY]
row() {
  local n=$1 kind=$2 name=$3 cubin=$4 base=$5 base_cubin=$6 base_out=$7 only=${8:-}
  if [ -z "$last" ]; then
    echo "| $n | $kind | $name | failed | | | |" >> "$table"
    case $name in *extended*) ;; *) fail=1 ;; esac
    return
  fi
  local same="differs from raw default's"
  cmp -s "$cubin" "$base_cubin" && same="identical"
  local outputs
  if "$out/verify" "$cubin" 64 "$cubin.out" $only > "$cubin.verify" 2>&1; then
    if [ -n "$only" ]; then
      cmp -s "$cubin.out" <(head -c 16384 "$base_out") && outputs="k0000 equal" || { outputs="k0000 DIFFER"; fail=1; }
    else
      cmp -s "$cubin.out" "$base_out" && outputs="all 64 equal" || { outputs="DIFFER"; fail=1; }
    fi
  else
    outputs="run failed: $(tail -c 200 "$cubin.verify")"
    fail=1
  fi
  local ratio
  ratio=$(awk "BEGIN { printf \"%.2fx\", $base / $last }")
  echo "| $n | $kind | $name | $last | $ratio | $same | $outputs |" >> "$table"
  echo "  $name: $last s ($ratio), cubin $same, outputs: $outputs"
}
for n in $sizes; do
  d=$out/n$n
  rm -rf "$d"
  python3 "$here/gen.py" "$n" 64 16 "$d" || exit 1
  t0=$EPOCHREALTIME
  (cd "$d" && ls ./*.cu | sed 's|^\./||; s/\.cu$//' | xargs -P "$(nproc)" -I{} sh -c \
    "nvcc -ltoir -dlto -rdc=true -arch=lto_$cap -o {}.ltoir {}.cu && nvcc -ptx -rdc=true -arch=$arch -o {}.ptx {}.cu") || exit 1
  echo "N=$n: 17 sources compiled in $(secs "$t0" "$EPOCHREALTIME") s ($(cat "$d"/*.ltoir | wc -c) bytes of LTO-IR)"
  lto=("$d"/f*.ltoir "$d/kernels.ltoir")
  ptx=("$d"/f*.ptx "$d/kernels.ptx")
  # LTO-IR
  run raw_lto_$n "$d/raw.cubin" "$out/rawlink" "$d/raw.cubin" -arch=$arch -lto "${lto[@]}"
  base=$last
  [ -n "$base" ] || { fail=1; continue; }
  "$out/verify" "$d/raw.cubin" 64 "$d/raw.out" || { echo "  raw default: run failed"; fail=1; continue; }
  echo "| $n | LTO-IR | raw nvJitLink, defaults | $base | 1.00x | | all 64 run |" >> "$table"
  echo "  raw nvJitLink default: $base s"
  run fdlink_lto_$n "$d/fdlink.cubin" "$fdlink" link -arch=$arch --no-cache -o "$d/fdlink.cubin" "${lto[@]}"
  row $n LTO-IR "fdlink, defaults" "$d/fdlink.cubin" $base "$d/raw.cubin" "$d/raw.out"
  [ -s "$d/fdlink.cubin" ] && notes+=("N=$n, fdlink's default against raw's default, kernel by kernel: $(python3 "$here/sasssame.py" "$d/fdlink.cubin" "$d/raw.cubin")")
  # like with like: the same options as the first run (-v is on ptxas's command line, which
  # ptxas records in .note.nv.tkinfo: a -v link differs from one without in that note alone)
  run fdagain_$n "$d/fdagain.cubin" "$fdlink" link -arch=$arch --no-cache -o "$d/fdagain.cubin" "${lto[@]}"
  row $n LTO-IR "fdlink, defaults, again (cubin against the first)" "$d/fdagain.cubin" $base "$d/fdlink.cubin" "$d/raw.out"
  [ -s "$d/fdagain.cubin" ] && notes+=("N=$n, fdlink's default run twice: $(python3 "$here/cubinsame.py" "$d/fdlink.cubin" "$d/fdagain.cubin")")
  cmp -s "$d/fdlink.cubin" "$d/fdagain.cubin" || fail=1
  run fdjobs_$n "$d/fdjobs.cubin" "$fdlink" link -arch=$arch --no-cache --jobs 8 -o "$d/fdjobs.cubin" "${lto[@]}"
  row $n LTO-IR "fdlink, --jobs 8 (cubin against the first)" "$d/fdjobs.cubin" $base "$d/fdlink.cubin" "$d/raw.out"
  [ -s "$d/fdjobs.cubin" ] && notes+=("N=$n, fdlink's default and --jobs 8: $(python3 "$here/cubinsame.py" "$d/fdlink.cubin" "$d/fdjobs.cubin")")
  cmp -s "$d/fdlink.cubin" "$d/fdjobs.cubin" || fail=1
  for j in 0 8; do # -v, for the partition's line: its cubin against the other -v link's
    jo=; [ $j = 0 ] || jo="--jobs $j"
    run fdv${j}_$n "$d/fdv$j.cubin" "$fdlink" link -v -arch=$arch --no-cache $jo -o "$d/fdv$j.cubin" "${lto[@]}"
    notes+=("N=$n, fdlink -v${jo:+ $jo}: $(grep -o 'partitioned link: .*' "$out/fdv${j}_$n.log" || echo 'not partitioned')")
  done
  [ -s "$d/fdv0.cubin" ] && [ -s "$d/fdv8.cubin" ] &&
    notes+=("N=$n, fdlink -v and -v --jobs 8: $(python3 "$here/cubinsame.py" "$d/fdv0.cubin" "$d/fdv8.cubin"); -v against the default: $(python3 "$here/cubinsame.py" "$d/fdlink.cubin" "$d/fdv0.cubin") (ptxas records -v)")
  FDLINK_PARTITION=0 run fdwhole_$n "$d/fdwhole.cubin" "$fdlink" link -arch=$arch --no-cache -o "$d/fdwhole.cubin" "${lto[@]}"
  row $n LTO-IR "fdlink, FDLINK_PARTITION=0 (nvJitLink's -split-compile, before issue 41)" "$d/fdwhole.cubin" $base "$d/raw.cubin" "$d/raw.out"
  [ "${BENCH9_QUICK:-0}" = 1 ] && continue
  # asked for (FDLINK_SPLIT_COMPILE_EXTENDED=1), a large LTO link gets -split-compile-extended=0
  # (isolated); where it kills nvJitLink, fdlink says so once and links with the default splits
  FDLINK_SPLIT_COMPILE_EXTENDED=1 run fdext_$n "$d/fdext.cubin" "$fdlink" link -arch=$arch --no-cache -o "$d/fdext.cubin" "${lto[@]}"
  row $n LTO-IR "fdlink, FDLINK_SPLIT_COMPILE_EXTENDED=1" "$d/fdext.cubin" $base "$d/raw.cubin" "$d/raw.out"
  grep -q "split-compile-extended" "$out/fdext_$n.log" &&
    echo "  fdlink: fell back: $(grep -m1 split-compile-extended "$out/fdext_$n.log")"
  run split_$n "$d/split.cubin" "$out/rawlink" "$d/split.cubin" -arch=$arch -lto -split-compile=0 "${lto[@]}"
  row $n LTO-IR "raw, -split-compile=0 (LTO only)" "$d/split.cubin" $base "$d/raw.cubin" "$d/raw.out"
  run both_$n "$d/both.cubin" "$out/rawlink" "$d/both.cubin" -arch=$arch -lto -split-compile=0 -Xptxas=--split-compile=0 "${lto[@]}"
  row $n LTO-IR "raw, fdlink's options (-split-compile=0 -Xptxas=--split-compile=0)" "$d/both.cubin" $base "$d/fdlink.cubin" "$d/raw.out"
  run ext_$n "$d/ext.cubin" "$out/rawlink" "$d/ext.cubin" -arch=$arch -lto -split-compile-extended=0 "${lto[@]}"
  row $n LTO-IR "raw, -split-compile-extended=0" "$d/ext.cubin" $base "$d/raw.cubin" "$d/raw.out"
  # determinism of the extended split at a fixed thread count: the same raw link again, and
  # fdlink's with FDLINK_SPLIT_COMPILE_EXTENDED=1 again; how the cubins differ (cubinsame.py:
  # bytes, and whether any code section differs or only the order of sections and symbols)
  if [ -n "$last" ]; then
    run ext2_$n "$d/ext2.cubin" "$out/rawlink" "$d/ext2.cubin" -arch=$arch -lto -split-compile-extended=0 "${lto[@]}"
    [ -n "$last" ] && notes+=("N=$n, raw -split-compile-extended=0 run twice: $(python3 "$here/cubinsame.py" "$d/ext.cubin" "$d/ext2.cubin")")
  fi
  if [ -s "$d/fdext.cubin" ]; then
    FDLINK_SPLIT_COMPILE_EXTENDED=1 run fdext2_$n "$d/fdext2.cubin" "$fdlink" link -arch=$arch --no-cache -o "$d/fdext2.cubin" "${lto[@]}"
    [ -n "$last" ] && notes+=("N=$n, fdlink with FDLINK_SPLIT_COMPILE_EXTENDED=1 run twice: $(python3 "$here/cubinsame.py" "$d/fdext.cubin" "$d/fdext2.cubin")")
  fi
  run one_$n "$d/one.cubin" "$fdlink" link -arch=$arch --no-cache --kernels-used k0000 -o "$d/one.cubin" "${lto[@]}"
  row $n LTO-IR "fdlink, --kernels-used k0000 (1 of 64)" "$d/one.cubin" $base "$d/raw.cubin" "$d/raw.out" k0000
  # PTX
  run raw_ptx_$n "$d/rawp.cubin" "$out/rawlink" "$d/rawp.cubin" -arch=$arch "${ptx[@]}"
  pbase=$last
  [ -n "$pbase" ] || { fail=1; continue; }
  "$out/verify" "$d/rawp.cubin" 64 "$d/rawp.out" || { fail=1; continue; }
  cmp -s "$d/rawp.out" "$d/raw.out" && pl="equal to LTO's" || pl="differ from LTO's (no LTO)"
  echo "| $n | PTX | raw nvJitLink, defaults | $pbase | 1.00x | | all 64 run, $pl |" >> "$table"
  echo "  raw nvJitLink PTX default: $pbase s"
  run fdlink_ptx_$n "$d/fdlinkp.cubin" "$fdlink" link -arch=$arch --no-cache -o "$d/fdlinkp.cubin" "${ptx[@]}"
  row $n PTX "fdlink, defaults" "$d/fdlinkp.cubin" $pbase "$d/rawp.cubin" "$d/rawp.out"
done
if [ ${#notes[@]} -gt 0 ]; then
  { echo; echo "Runs of one link compared:"; echo; printf -- '- %s\n' "${notes[@]}"; } >> "$table"
fi
echo
cat "$table"
exit $fail
