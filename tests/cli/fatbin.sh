#!/usr/bin/env bash
# Fat binaries (issue 40; label cli): `fdlink link -arch=sm_80,sm_90 -arch=compute_90` makes one
# fatbin whose entries are, byte for byte, what the single-architecture links make (the cubins;
# the PTX of --emit-ptx, NUL-terminated and padded); `fdlink inspect` reads it, and cuobjdump
# (where there is one: PATH, FDLINK_CUOBJDUMP, or the build's vendor wheels) lists every entry
# and extracts them equal; a second run is all cache hits; the usages it refuses say why.
# Skips (77) without nvJitLink or NVRTC.
# usage: fatbin.sh FDLINK BUILD_DIR
set -uo pipefail
fdlink=$1 build=$2
dir=$(mktemp -d)
[ -n "${FDLINK_KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
fail=0
export FDLINK_CACHE_DIR=$dir/cache FDLINK_CACHE_REMOTE=
cd "$dir" || exit 1
cat > k.cu <<'CU'
extern "C" __global__ void arch_of(int *out) { out[threadIdx.x] = __CUDA_ARCH__ + (int)threadIdx.x; }
CU
if ! "$fdlink" link -arch=sm_80,sm_90 -arch=compute_90 -v k.cu -o app.fatbin 2> link.txt; then
  grep -qE "nvJitLink|NVRTC|libnvrtc|libnvJitLink" link.txt && { echo "no nvJitLink or NVRTC: skipped"; exit 77; }
  cat link.txt; exit 1
fi
grep -q "fdlink: fatbin: 3 entries (sm_80, sm_90, compute_90) into app.fatbin" link.txt ||
  { echo "FAIL: -v's fatbin line"; cat link.txt; fail=1; }
[ "$(grep -c 'cache: miss, linked' link.txt)" = 2 ] || { echo "FAIL: two links, each cached"; cat link.txt; fail=1; }
# the single-architecture links (-v as above: it puts ptxas's -v in the cubin's note)
"$fdlink" link -v -arch=sm_80 k.cu -o a80.cubin 2> /dev/null || fail=1
"$fdlink" link -v -arch=sm_90 k.cu --emit-ptx=a90.ptx -o a90.cubin 2> /dev/null || fail=1
# the entries, read with the layout nvcc's fatbinary writes
python3 - app.fatbin a80.cubin a90.cubin a90.ptx <<'PY' || fail=1
import struct, sys
d = open(sys.argv[1], 'rb').read()
want = [(2, 80, open(sys.argv[2], 'rb').read()), (2, 90, open(sys.argv[3], 'rb').read()),
        (1, 90, open(sys.argv[4], 'rb').read())]
magic, ver, hs, body = struct.unpack_from('<IHHQ', d, 0)
assert (magic, ver, hs, body) == (0xBA55ED50, 1, 16, len(d) - 16), (hex(magic), ver, hs, body)
at = 16
for kind, arch, data in want:
    k, _, hsize, psize = struct.unpack_from('<HHIQ', d, at)
    a, = struct.unpack_from('<I', d, at + 28)
    flags, = struct.unpack_from('<Q', d, at + 40)
    payload = d[at + hsize: at + hsize + psize]
    assert (k, a, flags) == (kind, arch, 0x11), (k, a, hex(flags))
    assert payload[:len(data)] == data, f"entry {kind}/{arch}: bytes differ from the single link's"
    assert payload[len(data):] == b'\0' * (psize - len(data)), "padding"
    at += hsize + psize
assert at == len(d)
print("fatbin entries: byte-equal to the single links")
PY
"$fdlink" inspect app.fatbin > inspect.txt 2>&1 || { echo "FAIL: inspect"; cat inspect.txt; fail=1; }
grep -q "app.fatbin: fatbin, 3 images" inspect.txt && grep -q "sm_80 cubin (executable" inspect.txt &&
  grep -q "sm_90 cubin (executable" inspect.txt && grep -q "compute_90 ptx (PTX" inspect.txt ||
  { echo "FAIL: inspect's images"; cat inspect.txt; fail=1; }
cuobjdump=${FDLINK_CUOBJDUMP:-$(command -v cuobjdump || true)}
[ -n "$cuobjdump" ] || cuobjdump=$(ls "$build"/vendor-tools/nvidia/cu*/bin/cuobjdump 2>/dev/null | head -1)
if [ -n "$cuobjdump" ] && [ -x "$cuobjdump" ]; then
  "$cuobjdump" -lelf -lptx app.fatbin > list.txt 2>&1 || { echo "FAIL: cuobjdump"; cat list.txt; fail=1; }
  [ "$(cat list.txt)" = "ELF file    1: app.1.sm_80.cubin
ELF file    2: app.2.sm_90.cubin
PTX file    1: app.1.sm_90.ptx" ] || { echo "FAIL: cuobjdump's list"; cat list.txt; fail=1; }
  mkdir x && (cd x && "$cuobjdump" -xelf all ../app.fatbin > /dev/null && "$cuobjdump" -xptx all ../app.fatbin > /dev/null) ||
    { echo "FAIL: cuobjdump -xelf/-xptx"; fail=1; }
  cmp -s x/app.1.sm_80.cubin a80.cubin && cmp -s x/app.2.sm_90.cubin a90.cubin ||
    { echo "FAIL: cuobjdump's cubins differ from the single links'"; fail=1; }
  echo "cuobjdump: $(wc -l < list.txt) entries listed"
else
  echo "no cuobjdump: its listing not checked"
fi
# again: every link from the cache, the same bytes
"$fdlink" link -arch=sm_80,sm_90,compute_90 -v k.cu -o again.fatbin 2> again.txt || fail=1
[ "$(grep -c 'cache: hit' again.txt)" = 2 ] || { echo "FAIL: the second run's hits"; cat again.txt; fail=1; }
cmp -s app.fatbin again.fatbin || { echo "FAIL: the second fatbin differs"; fail=1; }
# compute_NN alone: a fatbin of PTX
"$fdlink" link --arch compute_80 k.cu -o ptx.fatbin && "$fdlink" inspect ptx.fatbin | grep -q "compute_80 ptx" ||
  { echo "FAIL: compute_80 alone"; fail=1; }
# what is refused, and why (exit 2, one line)
refuse() {
  local want=$1; shift
  "$fdlink" link "$@" k.cu -o bad.fatbin > out.txt 2> err.txt; local rc=$?
  if [ "$rc" != 2 ] || [ "$(cat err.txt)" != "fdlink: error: $want (see 'fdlink link --help')" ] ||
     [ -e bad.fatbin ]; then
    echo "FAIL: link $* (exit $rc)"; cat err.txt; fail=1
  fi
}
refuse "sm_90a in a fatbin: fdlink writes fatbins of sm_NN and compute_NN (link sm_90a on its own into a cubin)" -arch=sm_80,sm_90a
refuse "-arch=native names one architecture: not in a list of several" -arch=sm_80,native
refuse "invalid architecture 'sm_8' (expected sm_NN or compute_NN, e.g. sm_90)" -arch=sm_80,sm_8
refuse "invalid architecture list 'sm_80,,sm_90' (expected e.g. sm_80,sm_90,compute_90)" -arch=sm_80,,sm_90
refuse "invalid architecture list 'sm_80,' (expected e.g. sm_80,sm_90,compute_90)" -arch=sm_80,
refuse "--emit-ptx with several architectures: name compute_NN in -arch to put the post-LTO PTX in the fatbin" -arch=sm_80,sm_90 --emit-ptx=x.ptx
refuse "a fatbin is linked by nvjitlink: the culink backend links one architecture, on its GPU" -arch=sm_80,sm_90 --backend=culink
[ "$fail" = 0 ] && echo "fatbin: clean"
exit "$fail"
