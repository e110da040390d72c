# Benchmark 9's program: gen.py N K FILES DIR writes N foreign functions (Numba ABI: loops of
# fmaf, sinf and cosf) spread over FILES sources f0.cu.., and kernels.cu with K kernels k0000..,
# each calling its own N/K of them in a chain. Kernel names are zero-padded: nvJitLink's
# -kernels-used matches names by prefix (k1 would keep k10..k19 too).
import sys, os
n, k, files, d = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
os.makedirs(d, exist_ok=True)
per = n // k
for f in range(files):
    with open(f"{d}/f{f}.cu", "w") as o:
        for i in range(f, n, files):
            o.write(f'''extern "C" __device__ int g{i}(float *ret, float x)
{{
    float a = x;
    for (int j = 0; j < {6 + i % 5}; ++j)
        a = fmaf(a, sinf(a + {0.1 + i * 0.001:.4f}f * j), cosf(a * {0.5 + (i % 7) * 0.01:.3f}f));
    *ret = a;
    return 0;
}}
''')
with open(f"{d}/kernels.cu", "w") as o:
    for i in range(n):
        o.write(f'extern "C" __device__ int g{i}(float *ret, float x);\n')
    for j in range(k):
        o.write(f'extern "C" __global__ void k{j:04d}(float *out, const float *in, int n)\n{{\n'
                '    int t = blockIdx.x * blockDim.x + threadIdx.x;\n    if (t >= n) return;\n'
                '    float v = in[t], r = 0.0f;\n    int st = 0;\n')
        for i in range(j * per, (j + 1) * per):
            o.write(f'    st |= g{i}(&r, v); v = r;\n')
        o.write('    out[t] = st ? -1.0f : v;\n}\n')
