#!/usr/bin/env bash
# The nvcc corpus (issue 34): builds device code in one nvcc mode for every real architecture
# this nvcc knows (nvcc --list-gpu-code), then requires that `fdlink inspect` accepts every image
# (the ELF validation is never stricter than the linker) and that `fdlink link` with nvJitLink
# links it for every architecture, the output inspectable too. Nothing is committed: the corpus
# is built here, at test time, by the toolkit under test.
#   corpus.sh MODE SRCDIR WORKDIR FDLINK NVCC
set -uo pipefail
mode=$1 src=$(readlink -f "$2") work=$(readlink -m "$3/$1") fdlink=$(readlink -f "$4") nvcc=$(command -v "$5")
rm -rf "$work" && mkdir -p "$work" || exit 1
cd "$work" || exit 1
archs=$("$nvcc" --list-gpu-code | sed -n 's/^sm_\([0-9]*[a-z]*\)$/\1/p' | tr '\n' ' ')
[ -n "$archs" ] || { echo "corpus: $nvcc --list-gpu-code lists no architecture"; exit 1; }
failed=0
fail() { echo "corpus $mode: FAILED: $*"; failed=1; }

# nvcc $flags for every architecture (code=sm_NN, or code=lto_NN with -dlto) into one fatbin
gencodes() {
  local code=$1 g=()
  for a in $archs; do g+=("-gencode=arch=compute_$a,code=${code}_$a"); done
  echo "${g[@]}"
}
build() { # OUT KIND(fatbin|dc|lib|cubin) CODE FLAGS... -- SOURCES...
  local out=$1 kind=$2 code=$3; shift 3
  local flags=() srcs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  for s in "$@"; do srcs+=("$src/$s"); done
  # shellcheck disable=SC2046
  if ! "$nvcc" --threads 2 "-$kind" $(gencodes "$code") "${flags[@]}" -o "$out" "${srcs[@]}" \
       >"$out.log" 2>&1; then
    cat "$out.log"; fail "nvcc -$kind ${flags[*]} $*"; return 1
  fi
}
inspect() { # FILE: accepted, every image
  local out
  out=$(basename "$1").inspect
  if ! "$fdlink" inspect "$1" >"$out" 2>&1; then
    cat "$out"; fail "fdlink inspect $1"
  fi
}
link_all() { # FLAGS... -- INPUTS...: linked for every architecture, the cubin inspectable
  local flags=() ok=0
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  for a in $archs; do
    local out="link_sm_$a.cubin"
    if "$fdlink" link "-arch=sm_$a" --no-cache "${flags[@]}" -o "$out" "$@" >"$out.log" 2>&1 &&
       "$fdlink" inspect "$out" >"$out.inspect" 2>&1; then
      ok=$((ok + 1))
    else
      cat "$out.log" "$out.inspect" 2>/dev/null; fail "fdlink link -arch=sm_$a ${flags[*]} $*"
    fi
  done
  echo "corpus $mode: linked $* for $ok architectures"
}

case $mode in
  rdc) # separate compilation: every variable kind, textures, cooperative groups, a caller
    build globals.fatbin fatbin sm -rdc=true -- globals.cu &&
      build caller.fatbin fatbin sm -rdc=true -- caller.cu &&
      build textures.fatbin fatbin sm -rdc=true -- textures.cu &&
      build coop.fatbin fatbin sm -rdc=true -- coop.cu || exit 1
    for f in globals caller textures coop; do inspect $f.fatbin; done
    link_all -- caller.fatbin globals.fatbin textures.fatbin coop.fatbin
    # inspect --code: the kernel and the function, the variables only counted
    "$fdlink" inspect --code globals.fatbin >code.txt 2>&1 || fail "inspect --code"
    grep -q "kernel    corpus_globals" code.txt && grep -q "function  corpus_scale" code.txt &&
      grep -q "    variables: [1-9][0-9]* (" code.txt && ! grep -q "^    variable  " code.txt ||
      { head -20 code.txt; fail "inspect --code shows what it should not"; }
    # the issue's one-line reproduction, a lone cubin
    echo '__device__ int counter;' >counter.cu
    "$nvcc" -rdc=true -cubin -arch=sm_90 -o counter.cubin counter.cu || fail "nvcc counter.cu"
    inspect counter.cubin
    ;;
  debug) # -G: DWARF sections, aliased .nv.merc.* copies
    build globals.fatbin fatbin sm -rdc=true -G -- globals.cu &&
      build coop.fatbin fatbin sm -rdc=true -G -- coop.cu || exit 1
    inspect globals.fatbin; inspect coop.fatbin
    link_all -g -- globals.fatbin coop.fatbin
    ;;
  lineinfo)
    build globals.fatbin fatbin sm -rdc=true -lineinfo -- globals.cu || exit 1
    inspect globals.fatbin
    link_all --lineinfo -- globals.fatbin
    ;;
  whole) # whole-program (no -rdc) cubins, executable as they are
    build globals.fatbin fatbin sm -- globals.cu &&
      build textures.fatbin fatbin sm -- textures.cu &&
      build coop.fatbin fatbin sm -- coop.cu || exit 1
    for f in globals textures coop; do inspect $f.fatbin; done
    for a in $archs; do
      "$nvcc" -cubin -arch=sm_$a -o "globals_sm_$a.cubin" "$src/globals.cu" || fail "nvcc -cubin sm_$a"
      inspect "globals_sm_$a.cubin"
      # fdlink run reads the kernel's parameters from .nv.info before it needs a GPU (no driver
      # here, on purpose): corpus_globals(float *, int) takes 8 and 4 bytes
      FDLINK_LIBCUDA=/nonexistent/libcuda.so.1 "$fdlink" run "globals_sm_$a.cubin" \
        -k corpus_globals f32[4] f64:1 >run_$a.log 2>&1
      rc=$?
      [ $rc = 2 ] && grep -q "parameter 1 of kernel corpus_globals takes 4" run_$a.log ||
        { cat run_$a.log; fail "run's parameter check for sm_$a (exit $rc)"; }
    done
    ;;
  dlto) # LTO-IR for every architecture, linked with link-time optimisation
    build globals.fatbin fatbin lto -rdc=true -- globals.cu &&
      build caller.fatbin fatbin lto -rdc=true -- caller.cu || exit 1
    inspect globals.fatbin; inspect caller.fatbin
    link_all --lto -- caller.fatbin globals.fatbin
    ;;
  object) # host objects (nvcc -dc) and a static library (nvcc -lib) of every architecture
    build globals.o dc sm -- globals.cu &&
      build caller.o dc sm -- caller.cu &&
      build globals.a lib sm -rdc=true -- globals.cu textures.cu coop.cu || exit 1
    inspect globals.o; inspect caller.o; inspect globals.a
    link_all -- caller.o globals.a
    ;;
  cudadevrt) # dynamic parallelism with the toolkit's libcudadevrt
    build dynpar.fatbin fatbin sm -rdc=true -- dynpar.cu || exit 1
    inspect dynpar.fatbin
    devrt=$(dirname "$(dirname "$(readlink -f "$nvcc")")")/lib64/libcudadevrt.a
    [ -f "$devrt" ] || { echo "corpus: no $devrt"; exit 1; }
    inspect "$devrt"
    # libcudadevrt has no cubin for every architecture (CUDA 13.0: none for sm_87, sm_88), and
    # neither nvcc nor nvJitLink can link it for those: link for the ones it has
    has=$(sed -n 's/^  [^ ]*: sm_\([0-9]*[a-z]*\) cubin .*/\1/p' libcudadevrt.a.inspect)
    keep=""
    for a in $archs; do
      if echo "$has" | grep -qx "$a"; then keep="$keep $a"; else echo "corpus $mode: libcudadevrt has no sm_$a cubin"; fi
    done
    archs=$keep
    link_all -lcudadevrt -- dynpar.fatbin
    ;;
  *) echo "corpus: unknown mode $mode"; exit 2 ;;
esac
[ $failed = 0 ] && echo "corpus $mode: every image accepted and linked ($archs)"
exit $failed
