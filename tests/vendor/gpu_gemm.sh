#!/usr/bin/env bash
# GPU check of the cuBLASDx GEMM that vendor.sh mathdx links (issue 34): run it with fdlink run on
# A, B, C from files, and compare C with a host reference computed in double precision by
# Python (no NumPy needed). Exit 77 (skipped) without a GPU or without the cubin.
#   gpu_gemm.sh FDLINK CUBIN WORKDIR
set -uo pipefail
fdlink=$(readlink -f "$1") cubin=$2 work=$(readlink -m "$3")
[ -f "$cubin" ] || { echo "SKIP: no $cubin (run the vendor_mathdx test first)"; exit 77; }
mkdir -p "$work" && cd "$work" || exit 1
# A row-major, B and C column-major, 32x32 each (cuBLASDx's Arrangement<row_major, col_major>,
# C column-major by default); alpha 1.5, beta 0.25
python3 - <<'PY' || exit 1
import random, struct
random.seed(34)
n = 32
a = [random.uniform(-1, 1) for _ in range(n * n)]
b = [random.uniform(-1, 1) for _ in range(n * n)]
c = [random.uniform(-1, 1) for _ in range(n * n)]
alpha, beta = 1.5, 0.25
A = lambda i, k: a[i * n + k]        # row-major
B = lambda k, j: b[j * n + k]        # column-major
out = [0.0] * (n * n)
for j in range(n):
    for i in range(n):
        s = sum(A(i, k) * B(k, j) for k in range(n))
        out[j * n + i] = alpha * s + beta * c[j * n + i]   # column-major
for name, v in (("a", a), ("b", b), ("c", c), ("expected", out)):
    open(name + ".f64", "wb").write(struct.pack("<%dd" % len(v), *v))
PY
# 3 matrices of 32x32 doubles in shared memory, 16-byte aligned
"$fdlink" run "$cubin" -k dx_gemm --grid 1 --block 256 --shared 24576 \
  f64[1024]@a.f64 f64[1024]@b.f64 f64[1024]@c.f64 f64:1.5 f64:0.25 \
  --expect 2=expected.f64 --rtol 1e-12 --atol 1e-12
