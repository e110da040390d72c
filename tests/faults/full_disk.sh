#!/usr/bin/env bash
# A full file system: a 256 KiB tmpfs, filled to the last block, receives the outputs of `fdlink
# header`, `embed` and `link`. Each must fail with exit 1 and one
# line naming the output and ENOSPC, leave no file (no partial output, no temporary), and leave an
# existing output as it was. Needs root (mount); exits 77 (skipped) where mounting is not
# permitted.
#   full_disk.sh FDLINK DATA_DIR
set -uo pipefail
fdlink=$(realpath "$1") data=$(realpath "$2")
work=$(mktemp -d)
mnt=$work/full
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=256k tmpfs "$mnt" 2>/dev/null; then
  echo "full_disk: cannot mount a tmpfs here (not root, or not permitted): skipped"
  rm -rf "$work"
  exit 77
fi
trap 'umount "$mnt"; rm -rf "$work"' EXIT
cp "$data/link/caller.ptx" "$data/link/mul.ptx" "$work/"
for i in $(seq 1 3000); do echo "f$i: float32(CPointer(float32), int32)"; done > "$work/big.decl"
cd "$work" || exit 1
echo "old" > "$mnt/keep.cuh"
dd if=/dev/zero of="$mnt/filler" bs=4k status=none 2>/dev/null  # until no space is left
bad=0
check() {
  local name=$1 out=$2; shift 2
  "$@" >out.txt 2>err.txt
  local rc=$?
  local lines
  lines=$(wc -l < err.txt)
  if [ "$rc" != 1 ] || [ "$lines" != 1 ] || ! grep -q "No space left on device" err.txt ||
     ! grep -qF "$out" err.txt || [ -s out.txt ]; then
    bad=$((bad + 1))
    echo "full_disk: $name: exit $rc, $lines lines: $(cat err.txt)" >&2
  else
    echo "full_disk: $name: $(cat err.txt)"
  fi
  local left
  left=$(ls -A "$mnt" | grep -v -x -e filler -e keep.cuh || true)
  if [ -n "$left" ]; then
    bad=$((bad + 1))
    echo "full_disk: $name left: $left" >&2
    (cd "$mnt" && rm -f $left)
  fi
}
check header "$mnt/out.cuh" "$fdlink" header big.decl -o "$mnt/out.cuh"
check "header over an existing output" "$mnt/keep.cuh" "$fdlink" header big.decl -o "$mnt/keep.cuh"
[ "$(cat "$mnt/keep.cuh")" = old ] || { bad=$((bad + 1)); echo "full_disk: keep.cuh changed" >&2; }
check embed "$mnt/out.c" "$fdlink" embed -o "$mnt/out.c" big.decl
check link "$mnt/app.cubin" "$fdlink" link -arch=sm_90 -o "$mnt/app.cubin" caller.ptx mul.ptx
echo "full_disk: 4 writes to a full tmpfs: $bad failures"
[ "$bad" = 0 ]
