#!/usr/bin/env bash
# 16 concurrent writers of the same output, ROUNDS times (default 5) for each of `fdlink
# header`, `embed` and `link`: every writer succeeds, the output is always one complete output
# (byte for byte what a single run writes), and no temporary file is left.
#   concurrent.sh FDLINK DATA_DIR [ROUNDS]
set -uo pipefail
fdlink=$(realpath "$1") data=$(realpath "$2") rounds=${3:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$data/link/caller.ptx" "$data/link/mul.ptx" "$work/"
for i in $(seq 1 2000); do echo "f$i: float32(CPointer(float32), int32)"; done > "$work/big.decl"
cd "$work" || exit 1
bad=0 runs=0
race() {
  local name=$1 out=$2; shift 2
  "$@" >/dev/null 2>&1 || { echo "concurrent: $name does not run" >&2; exit 1; }
  mv "$out" "want.$name"
  for r in $(seq 1 "$rounds"); do
    local pids=()
    for w in $(seq 1 16); do
      "$@" >/dev/null 2>"err.$w" &
      pids+=($!)
    done
    for w in $(seq 1 16); do
      runs=$((runs + 1))
      if ! wait "${pids[$((w - 1))]}"; then
        bad=$((bad + 1))
        echo "concurrent: $name round $r writer $w failed: $(cat "err.$w")" >&2
      fi
      rm -f "err.$w"
    done
    if ! cmp -s "$out" "want.$name"; then
      bad=$((bad + 1))
      echo "concurrent: $name round $r: the output is not one complete output" >&2
    fi
    local left
    left=$(ls -A | grep -v -x -e caller.ptx -e mul.ptx -e big.decl -e "$out" -e 'want\..*' || true)
    if [ -n "$left" ]; then
      bad=$((bad + 1))
      echo "concurrent: $name round $r left: $left" >&2
      rm -f $left
    fi
    rm -f "$out"
  done
}
race header out.cuh "$fdlink" header big.decl -o out.cuh
race embed out.c "$fdlink" embed -o out.c caller.ptx mul.ptx big.decl
race link app.cubin "$fdlink" link -arch=sm_90 -o app.cubin caller.ptx mul.ptx
echo "concurrent: 16 writers x $rounds rounds x 3 commands ($runs runs): $bad failures"
[ "$bad" = 0 ]
