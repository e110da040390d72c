#!/usr/bin/env bash
# The partitioned link's test program (issue 41): gen.sh DIR [TABLE] writes DIR/data.cu (a
# __device__ counter, a static __device__ word, a __constant__ and a table whose initializer makes
# the LTO-IR large enough to be partitioned) and DIR/kernels.cu (32 kernels k00..k31, then two
# instances of a template kernel: the partition's 16 groups hold two or three each, k00 in the
# first, k31 in another).
set -eu
d=$1
t=${2:-16384} # 16384: 88 KB of LTO-IR, partitioned; 16: a small program, never partitioned
mkdir -p "$d"
{
  echo '__device__ unsigned int counter;'
  echo '__constant__ float scale = 2.0f;'
  printf '__device__ float table[%d] = {' "$t"
  for ((i = 0; i < t; i++)); do printf '%d.%03df,' $((i % 97)) $((i * 7 % 1000)); done
  echo '};'
  echo 'static __device__ unsigned int hidden;'
  echo 'extern "C" __device__ void put_hidden(unsigned int v) { hidden = v; }'
  echo 'extern "C" __device__ unsigned int get_hidden(void) { return hidden; }'
  echo '// kept a function (an internal .func of every group, renamed apart by the merge)'
  echo 'extern "C" __device__ __noinline__ float shape(float x) { return x * x + 1.0f; }'
} > "$d/data.cu"
{
  echo 'extern __device__ unsigned int counter;'
  echo 'extern __constant__ float scale;'
  echo "extern __device__ float table[$t];"
  echo 'extern "C" __device__ void put_hidden(unsigned int v);'
  echo 'extern "C" __device__ unsigned int get_hidden(void);'
  echo 'extern "C" __device__ float shape(float x);'
  for ((k = 0; k < 32; k++)); do
    printf 'extern "C" __global__ void k%02d(float *out, unsigned int *word, int n)\n{\n' $k
    echo '    int i = blockIdx.x * blockDim.x + threadIdx.x;'
    case $k in
      0) echo '    if (i == 0) { counter = 12345u; put_hidden(777u); }' ;;
      31) echo '    if (i == 0) { word[0] = counter; word[1] = get_hidden(); }' ;;
      *) echo '    if (i == 0) atomicAdd(&counter, 1u);' ;;
    esac
    printf '    if (i < n) out[i] = shape(sinf(table[(i * %d) %% %d] * scale)) + %d.0f;\n}\n' $((k * 31 + 1)) "$t" $k
  done
  # two instances of a template kernel: mangled names, .weak entries
  echo 'template <int K> __global__ void kt(float *out) { out[threadIdx.x] = K * table[threadIdx.x]; }'
  echo 'template __global__ void kt<1>(float *);'
  echo 'template __global__ void kt<2>(float *);'
} > "$d/kernels.cu"
