#!/usr/bin/env bash
# Version pairs (issue 40): the toolkit's nvJitLink against NVRTC 13.5's LTO-IR and PTX (named:
# "LTO-IR made by CUDA 13.5 ... cannot be linked by nvJitLink 13.0"), and, with the 13.5 wheels
# (nvidia-nvjitlink, nvidia-cuda-nvrtc; tests/run.sh installs them into <build>/cu135), both ways:
# NVRTC 13.5 into nvJitLink 13.0 refused by name, NVRTC 13.0 into nvJitLink 13.5 linked, 13.5's
# own cubins (tables at 4 and 6 mod 8) inspected, linked as inputs and cached.
# usage: skew.sh toolkit|wheels FDLINK DATA WHEELDIR OUT   (exit 77: skipped)
set -uo pipefail
mode=$1 fdlink=$2 data=$3 wheels=$4 out=$5
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export FDLINK_CACHE_DIR=$out/cache
unset FDLINK_NVJITLINK FDLINK_NVRTC
fail=0
check() { # check NAME WANT-RC REGEX command...
  local name=$1 want=$2 re=$3; shift 3
  "$@" >stdout 2>stderr; local rc=$?
  if [ "$rc" != "$want" ] || { [ -n "$re" ] && ! grep -Eq -- "$re" stderr stdout; }; then
    echo "FAIL $name: exit $rc (want $want), stderr:"; cat stderr; fail=1
  else
    echo "ok   $name"
  fi
}
# the toolkit's nvJitLink: its version from doctor ("nvjitlink    PATH, 13.0")
jl=$("$fdlink" doctor 2>/dev/null | sed -n 's/^nvjitlink  *\(.*\), \([0-9]*\.[0-9]*\)$/\2/p')
tkjl=$("$fdlink" doctor 2>/dev/null | sed -n 's/^nvjitlink  *\(.*\), \([0-9]*\.[0-9]*\)$/\1/p')
tkrtc=$("$fdlink" doctor 2>/dev/null | sed -n 's/^nvrtc  *\(.*\), \([0-9]*\.[0-9]*\)$/\1/p')
case $mode in
toolkit)
  case $jl in 13.[0-4]) ;; *) echo "SKIP: the toolkit's nvJitLink is '$jl', not 13.0 to 13.4"; exit 77 ;; esac
  msg="cannot be linked by nvJitLink $jl \\(.*libnvJitLink[^)]*\\): use nvJitLink 13\\.5 or later \\(FDLINK_NVJITLINK, or the cu13 extra\\)$"
  check ltoir_named 1 "^fdlink: .*twice\\.ltoir: error: LTO-IR made by CUDA 13\\.5 \\(NVVM IR 2\\.131\\) $msg" \
    "$fdlink" link -arch=sm_90 -o a.cubin "$data/twice.ltoir"
  check ptx_named 1 "^fdlink: .*twice\\.ptx: error: PTX ISA 9\\.5 \\(\\.version 9\\.5\\) $msg" \
    "$fdlink" link -arch=sm_90 -o a.cubin "$data/twice.ptx"
  check json_code 1 '"code": "version-skew"' \
    "$fdlink" link -arch=sm_90 --diagnostics-format=json -o a.cubin "$data/twice.ltoir"
  [ ! -e a.cubin ] || { echo "FAIL: a refused link wrote its output"; fail=1; }
  ;;
wheels)
  jl135=$wheels/nvidia/cu13/lib/libnvJitLink.so.13 rtc135=$wheels/nvidia/cu13/lib/libnvrtc.so.13
  [ -f "$jl135" ] && [ -f "$rtc135" ] || { echo "SKIP: no 13.5 wheels in $wheels"; exit 77; }
  case $jl in 13.[0-4]) ;; *) echo "SKIP: the toolkit's nvJitLink is '$jl'"; exit 77 ;; esac
  # NVRTC 13.5 compiles, nvJitLink 13.0 links: refused by name, NVRTC named
  check nvrtc135_into_nvjitlink130 1 "error: LTO-IR made by NVRTC 13\\.5 \\(NVVM IR 2\\.131\\) cannot be linked by nvJitLink $jl" \
    env FDLINK_NVRTC="$rtc135" FDLINK_NVJITLINK="$tkjl" "$fdlink" link -arch=sm_90 -o a.cubin "$data/twice.cu"
  check nvrtc135_into_nvjitlink130_no_lto 1 "error: PTX ISA 9\\.5 \\(\\.version 9\\.5\\) cannot be linked by nvJitLink $jl" \
    env FDLINK_NVRTC="$rtc135" FDLINK_NVJITLINK="$tkjl" "$fdlink" link --no-lto -arch=sm_90 -o a.cubin "$data/twice.cu"
  # one of the pair named: the other from its folder, the same release (nothing refused)
  check nvrtc135_paired 0 '' \
    env FDLINK_NVRTC="$rtc135" "$fdlink" link -arch=sm_90 -o p.cubin "$data/twice.cu"
  check doctor_paired 0 "nvjitlink +$jl135, 13\\.5" env FDLINK_NVRTC="$rtc135" "$fdlink" doctor
  grep -q "FDLINK_NVJITLINK" stdout && { echo "FAIL: doctor lists the variable it set itself"; fail=1; }
  # the other way: the toolkit's NVRTC, nvJitLink 13.5
  check nvrtc130_into_nvjitlink135 0 '' \
    env FDLINK_NVJITLINK="$jl135" FDLINK_NVRTC="$tkrtc" "$fdlink" link -arch=sm_90 -o b.cubin "$data/twice.cu"
  check ltoir135_into_nvjitlink135 0 '' \
    env FDLINK_NVJITLINK="$jl135" "$fdlink" link -arch=sm_90 -o c.cubin "$data/twice.ltoir"
  # 13.5's cubins: made, inspected, cached (the second link a hit), linked as an input
  for a in sm_80 sm_90 sm_100 sm_120; do
    check "inspect_135_$a" 0 "kernel +twice" sh -c "FDLINK_NVJITLINK='$jl135' FDLINK_NVRTC='$rtc135' \
      '$fdlink' link -arch=$a -o t_$a.cubin '$data/twice.cu' && '$fdlink' inspect t_$a.cubin"
  done
  # (before issue 40 the cache refused such a cubin without a word: every link a miss)
  check cache_miss_135 0 'cache: miss' env FDLINK_NVJITLINK="$jl135" FDLINK_NVRTC="$rtc135" \
    "$fdlink" link -v -arch=sm_100 -o t1.cubin "$data/twice.cu"
  check cache_hit_135 0 'cache: hit' env FDLINK_NVJITLINK="$jl135" FDLINK_NVRTC="$rtc135" \
    "$fdlink" link -v -arch=sm_100 -o t2.cubin "$data/twice.cu"
  cmp -s t1.cubin t2.cubin || { echo "FAIL: the hit differs from the link"; fail=1; }
  check relocatable_135_input 0 'kernel +run' sh -c "FDLINK_NVJITLINK='$jl135' FDLINK_NVRTC='$rtc135' \
    '$fdlink' link -arch=sm_100 -o r.cubin '$data/run_scale.cu' '$data/scale_sm100_rdc.cubin' \
    && '$fdlink' inspect r.cubin"
  # fdlink doctor names the pair's disagreement
  check doctor_pair 1 "nvrtc and nvjitlink: NVRTC 13\\.5 and nvJitLink $jl disagree" \
    env FDLINK_NVRTC="$rtc135" FDLINK_NVJITLINK="$tkjl" "$fdlink" doctor
  ;;
esac
exit $fail
