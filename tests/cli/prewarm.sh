#!/usr/bin/env bash
# Warm deployments (issue 40; label cli): `fdlink prewarm --bundle` makes a manifest's links (the
# showcase's library and callers, device/, as a fatbin and as a cubin) into a bundle; imported
# into a fresh cache, the same links run with FDLINK_REQUIRE_WARM=1 and pass, writing what a cold
# link writes; one source changed, the link fails, naming it and the key; prewarm into the cache
# itself; a bad manifest line is named. Skips (77) without nvJitLink or NVRTC.
# usage: prewarm.sh FDLINK SOURCE_DIR
set -uo pipefail
fdlink=$1 src=$2
dir=$(mktemp -d)
[ -n "${FDLINK_KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
fail=0
export FDLINK_CACHE_REMOTE=
unset FDLINK_REQUIRE_WARM
mkdir -p "$dir/proj" "$dir/fresh" "$dir/cold"
cp "$src/device/functions.decl" "$src/device/src/functions.cu" "$src/device/src/callers.cu" "$dir/proj/"
cat > "$dir/proj/app.manifest" <<'M'
# the showcase's links: a fatbin for the GPUs of today and tomorrow, and a cubin
-arch=sm_80,sm_90,compute_90 --decl functions.decl functions.cu callers.cu -o app.fatbin
  -arch=sm_90 --decl "functions.decl" functions.cu callers.cu -o app.cubin   
M
cd "$dir" || exit 1
if ! FDLINK_CACHE_DIR=$dir/unused "$fdlink" prewarm --bundle warm.bundle proj/app.manifest > out.txt 2> err.txt; then
  grep -qE "nvJitLink|NVRTC|libnvrtc|libnvJitLink" err.txt && { echo "no nvJitLink or NVRTC: skipped"; exit 77; }
  echo "FAIL: prewarm"; cat err.txt; exit 1
fi
grep -qE "^prewarmed 2 links into warm.bundle \([0-9]+ entries\)$" out.txt || { echo "FAIL: prewarm's line"; cat out.txt; fail=1; }
[ ! -e proj/app.fatbin ] && [ ! -e proj/app.cubin ] || { echo "FAIL: prewarm wrote an output"; fail=1; }
[ ! -e unused ] || { echo "FAIL: prewarm --bundle used the cache directory"; fail=1; }
export FDLINK_CACHE_DIR=$dir/fresh
"$fdlink" cache import warm.bundle > /dev/null || { echo "FAIL: import"; fail=1; }
# the deployment: the same links, warm, required
cd proj || exit 1
for args in "-arch=sm_80,sm_90,compute_90 -o app.fatbin" "-arch=sm_90 -o app.cubin"; do
  # shellcheck disable=SC2086
  FDLINK_REQUIRE_WARM=1 "$fdlink" link $args --decl functions.decl functions.cu callers.cu 2> warm.txt ||
    { echo "FAIL: warm link $args"; cat warm.txt; fail=1; }
done
# what a cold link makes, byte for byte
FDLINK_CACHE_DIR=$dir/cold "$fdlink" link -arch=sm_80,sm_90,compute_90 --decl functions.decl functions.cu callers.cu -o ../cold.fatbin &&
  cmp -s app.fatbin ../cold.fatbin || { echo "FAIL: the warm fatbin differs from a cold link's"; fail=1; }
# one source changed: the deployment is not warm, and says what missed
echo "// changed" >> functions.cu
FDLINK_REQUIRE_WARM=1 "$fdlink" link -arch=sm_90 --decl functions.decl functions.cu callers.cu -o changed.cubin 2> cold.txt
rc=$?
[ "$rc" = 1 ] && [ ! -e changed.cubin ] && [ "$(wc -l < cold.txt)" = 1 ] &&
  grep -qE "^fdlink: functions.cu: error: cache miss: the NVRTC compile of functions.cu for sm_90 \(key [0-9a-f]{32}\) is not in the cache, and FDLINK_REQUIRE_WARM forbids making it$" cold.txt ||
  { echo "FAIL: a changed source under FDLINK_REQUIRE_WARM=1 (exit $rc)"; cat cold.txt; fail=1; }
# another option: the compiles are warm, the link is not, and is named
FDLINK_REQUIRE_WARM=1 "$fdlink" link -arch=sm_90 --maxrregcount 32 --decl functions.decl callers.cu -o other.cubin 2> link.txt
grep -qE "^fdlink: error: cache miss: the link of callers.cu for sm_90 \(key [0-9a-f]{32}\) is not in the cache, and FDLINK_REQUIRE_WARM forbids making it$" link.txt ||
  { echo "FAIL: a link that missed"; cat link.txt; fail=1; }
cd .. || exit 1
# prewarm into the cache itself, then warm
FDLINK_CACHE_DIR=$dir/c2 "$fdlink" prewarm proj/app.manifest > out2.txt 2>&1 && grep -qx "prewarmed 2 links" out2.txt ||
  { echo "FAIL: prewarm into the cache"; cat out2.txt; fail=1; }
(cd proj && FDLINK_CACHE_DIR=$dir/c2 FDLINK_REQUIRE_WARM=1 "$fdlink" link -arch=sm_90 --decl functions.decl functions.cu callers.cu -o app2.cubin) ||
  { echo "FAIL: warm after prewarm into the cache"; fail=1; }
# a bad manifest: the line is named
printf -- '-arch=sm_90 functions.cu\n-arch=sm_90 "open\n' > proj/bad.manifest
"$fdlink" prewarm proj/bad.manifest > /dev/null 2> bad.txt; rc=$?
[ "$rc" = 1 ] && [ "$(cat bad.txt)" = "fdlink: proj/bad.manifest:2: error: a quote left open" ] ||
  { echo "FAIL: bad manifest (exit $rc)"; cat bad.txt; fail=1; }
printf -- '-arch=sm_90 nothere.cu\n' > proj/missing.manifest
"$fdlink" prewarm proj/missing.manifest > /dev/null 2> missing.txt; rc=$?
[ "$rc" = 1 ] && grep -q "nothere.cu" missing.txt && grep -qx "fdlink: note: in the link of proj/missing.manifest:1" missing.txt ||
  { echo "FAIL: a missing input (exit $rc)"; cat missing.txt; fail=1; }
[ "$fail" = 0 ] && echo "prewarm: clean"
exit "$fail"
