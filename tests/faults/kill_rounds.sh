#!/usr/bin/env bash
# SIGKILL of `fdlink link`, `header` and `embed` at random moments, ROUNDS times each (default
# 100). Before each round the output holds an old, complete version; after the kill it must
# hold either that or the complete new one (byte for byte), and nothing else may be in the
# folder but the inputs. A temporary file can only be left by a kill between the two calls that
# name the finished temporary and rename it into place; such a file is counted, and must be gone
# after the next write of the output (fdlink removes the temporaries of writers that died).
#   kill_rounds.sh FDLINK DATA_DIR [ROUNDS]
set -uo pipefail
fdlink=$(realpath "$1") data=$(realpath "$2") rounds=${3:-100}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$data/link/caller.ptx" "$data/link/mul.ptx" "$data/check/functions.decl" "$work/"
# a declaration file big enough that writing its header takes a while
for i in $(seq 1 3000); do echo "f$i: float32(CPointer(float32), int32, float64)"; done > "$work/big.decl"
cd "$work" || exit 1
partial=0 strays=0 survived=0 total=0
# one COMMAND... writes OUT; learn the new output and how long a run takes
one() {
  local name=$1 out=$2; shift 2
  "$@" >/dev/null 2>&1 || { echo "kill_rounds: $name does not run: $*" >&2; exit 1; }
  cp "$out" "new.$name"
  echo "old $name" > "old.$name"
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>&1
  end=$(date +%s%N)
  local span=$(( (end - start) / 1000 ))   # microseconds
  for r in $(seq 1 "$rounds"); do
    total=$((total + 1))
    cp "old.$name" "$out"
    "$@" >/dev/null 2>&1 &
    local pid=$!
    local delay=$(( RANDOM * 32768 + RANDOM ))
    delay=$(( delay % (span + span / 4 + 1) ))
    sleep "$(printf '0.%06d' "$delay")"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if ! cmp -s "$out" "old.$name" && ! cmp -s "$out" "new.$name"; then
      partial=$((partial + 1))
      echo "kill_rounds: $name round $r: $out is neither the old nor the new output" >&2
    fi
    local left
    left=$(ls -A | grep -v -x -e caller.ptx -e mul.ptx -e functions.decl -e big.decl \
           -e "$out" -e "old.$name" -e "new.$name" -e 'old\..*' -e 'new\..*' || true)
    if [ -n "$left" ]; then
      strays=$((strays + 1)); [ -n "${FDLINK_VERBOSE:-}" ] && echo "kill_rounds: $name round $r left $left" >&2
      cp "old.$name" "$out"
      "$@" >/dev/null 2>&1
      if [ -n "$(ls -A | grep -F -x "$left" || true)" ]; then
        survived=$((survived + 1))
        echo "kill_rounds: $name round $r: left $left, still there after the next write" >&2
        rm -f $left
      fi
    fi
  done
  rm -f "$out"
}
one header out.cuh "$fdlink" header big.decl -o out.cuh
one embed out.c "$fdlink" embed -o out.c caller.ptx mul.ptx big.decl
one link app.cubin "$fdlink" link -arch=sm_90 -o app.cubin caller.ptx mul.ptx
echo "kill_rounds: $total SIGKILLs (header, embed, link x $rounds): $partial partial outputs, $strays rounds left a complete temporary, $survived survived the next write"
[ "$partial" = 0 ] && [ "$survived" = 0 ]
