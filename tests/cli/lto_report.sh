#!/usr/bin/env bash
# The LTO report (issue 32; label cli): `fdlink link --lto-report` notes, in text and JSON, and
# `fdlink inspect --decl` of the linked cubins: mul_f32_f32 inlined when both inputs are LTO-IR,
# a real call when its definition is PTX. Skips (77) without nvJitLink.
# usage: lto_report.sh FDLINK FIXTURES DECL
set -uo pipefail
fdlink=$1 fx=$2 decl=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
link() { "$fdlink" link --no-cache -arch=sm_90 --decl "$decl" --lto-report "$@"; }
if ! link -o "$dir/lto.cubin" "$fx/caller.ltoir" "$fx/mul.ltoir" 2> "$dir/lto.txt"; then
  grep -q nvJitLink "$dir/lto.txt" && { echo "no nvJitLink: skipped"; exit 77; }
  cat "$dir/lto.txt"; exit 1
fi
grep -q "note: mul_f32_f32: every call inlined (LTO left no function of that name in the cubin) \[lto-report\]" "$dir/lto.txt" ||
  { echo "FAIL: text note"; cat "$dir/lto.txt"; fail=1; }
link -o "$dir/ptx.cubin" --diagnostics-format=json --diagnostics-output="$dir/ptx.json" \
  "$fx/caller.ltoir" "$fx/mul.ptx" 2> /dev/null || { echo "FAIL: mixed link"; fail=1; }
grep -q '"lto-report"' "$dir/ptx.json" && grep -q 'calls stay calls: defined in [^"]*mul.ptx (PTX), which does not join LTO' "$dir/ptx.json" ||
  { echo "FAIL: JSON note"; cat "$dir/ptx.json"; fail=1; }
"$fdlink" inspect --decl "$decl" "$dir/lto.cubin" "$dir/ptx.cubin" > "$dir/inspect.txt" 2>&1 || { echo "FAIL: inspect"; fail=1; }
grep -q "lto: mul_f32_f32: every call inlined" "$dir/inspect.txt" &&
  grep -q "lto: mul_f32_f32: kept as a function: its calls are calls" "$dir/inspect.txt" ||
  { echo "FAIL: inspect --decl"; cat "$dir/inspect.txt"; fail=1; }
[ "$fail" = 0 ] && echo "lto report: clean"
exit "$fail"
