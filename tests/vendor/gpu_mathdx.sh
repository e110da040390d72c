#!/usr/bin/env bash
# GPU checks of the libmathdx-generated functions that vendor.sh libmathdx links (issue 34), run
# with fdlink run and compared with host references computed in double precision by Python (no
# NumPy needed):
#   potrf: cuSolverDx's Cholesky factorisation of a symmetric positive definite 32x32 matrix A:
#          info is 0, L (the lower triangle) satisfies L L^T = A, and L is the host's Cholesky
#          factor;
#   fft:   cuFFTDx's forward 64-point complex FFT of a known signal against a naive DFT.
# Exit 77 (skipped) without a GPU or without the cubins.
#   gpu_mathdx.sh potrf|fft FDLINK LIBMATHDX_WORKDIR WORKDIR
set -uo pipefail
check=$1 fdlink=$(readlink -f "$2") dir=$(readlink -m "$3") work=$(readlink -m "$4")
[ -f "$dir/$check.cubin" ] && [ -f "$dir/traits.sh" ] ||
  { echo "SKIP: no $dir/$check.cubin (run the vendor_libmathdx test first)"; exit 77; }
mkdir -p "$work" && cd "$work" || exit 1
. "$dir/traits.sh"
case $check in
  potrf)
    n=$potrf_n nn=$((potrf_n * potrf_n))
    # A = M M^T + n I, column-major (symmetric, so the order does not matter)
    N=$n python3 - <<'PY' || exit 1
import os, random, struct
random.seed(34)
n = int(os.environ["N"])
m = [[random.uniform(-1, 1) for _ in range(n)] for _ in range(n)]
a = [sum(m[i][k] * m[j][k] for k in range(n)) + (n if i == j else 0.0)
     for j in range(n) for i in range(n)]
open("a.f64", "wb").write(struct.pack("<%dd" % len(a), *a))
PY
    "$fdlink" run "$dir/potrf.cubin" -k potrf_kernel --block "$potrf_block" \
      --shared "$potrf_shared" "f64[$nn]@a.f64" "f64[$nn]" "i32[1]" --out 1=l.f64 --out 2=info.i32
    rc=$?
    [ $rc = 0 ] || exit $rc
    N=$n python3 - <<'PY'
import math, os, struct, sys
n = int(os.environ["N"])
a = struct.unpack("<%dd" % (n * n), open("a.f64", "rb").read())
out = struct.unpack("<%dd" % (n * n), open("l.f64", "rb").read())
info = struct.unpack("<i", open("info.i32", "rb").read())[0]
A = lambda i, j: a[j * n + i]
L = lambda i, j: out[j * n + i] if i >= j else 0.0          # the lower triangle, column-major
# L L^T against A, relative to A's largest element
scale = max(abs(x) for x in a)
llt = max(abs(sum(L(i, k) * L(j, k) for k in range(n)) - A(i, j))
          for i in range(n) for j in range(n)) / scale
# the host's Cholesky factor, in double precision
h = [[0.0] * n for _ in range(n)]
for j in range(n):
    d = A(j, j) - sum(h[j][k] ** 2 for k in range(j))
    h[j][j] = math.sqrt(d)
    for i in range(j + 1, n):
        h[i][j] = (A(i, j) - sum(h[i][k] * h[j][k] for k in range(j))) / h[j][j]
diff = max(abs(L(i, j) - h[i][j]) for i in range(n) for j in range(i + 1))
print(f"cuSolverDx POTRF {n}x{n}: info {info}, max |L L^T - A| / max |A| = {llt:.3e}, "
      f"max |L - L_host| = {diff:.3e}")
ok = info == 0 and llt <= 1e-13 and diff <= 1e-12
print("gpu potrf: " + ("passed" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
    ;;
  fft)
    n=$fft_n
    # x[t] = cos(2 pi 3 t / n) + 0.5 i sin(2 pi 7 t / n) + seeded noise; X[k] = sum x[t] e^(-2 pi i k t / n)
    N=$n python3 - <<'PY' || exit 1
import cmath, math, os, random, struct
random.seed(34)
n = int(os.environ["N"])
x = [complex(math.cos(2 * math.pi * 3 * t / n) + random.uniform(-0.1, 0.1),
             0.5 * math.sin(2 * math.pi * 7 * t / n) + random.uniform(-0.1, 0.1)) for t in range(n)]
X = [sum(x[t] * cmath.exp(-2j * math.pi * k * t / n) for t in range(n)) for k in range(n)]
flat = lambda v: [c for z in v for c in (z.real, z.imag)]
open("x.f64", "wb").write(struct.pack("<%dd" % (2 * n), *flat(x)))
open("expected.f64", "wb").write(struct.pack("<%dd" % (2 * n), *flat(X)))
PY
    "$fdlink" run "$dir/fft.cubin" -k fft_kernel --block "$fft_block" --shared "$fft_shared" \
      "f64[$((2 * n))]@x.f64" "f64[$((2 * n))]" --expect 1=expected.f64 --rtol 1e-12 --atol 1e-11
    rc=$?
    [ $rc = 0 ] && echo "gpu fft: passed ($n-point cuFFTDx $cufftdx_version against a naive DFT)"
    exit $rc
    ;;
  *) echo "gpu_mathdx: unknown check $check"; exit 2 ;;
esac
