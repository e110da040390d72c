// Benchmark 4's foreign functions (Numba ABI): link_fK(acc, x) = acc * x + (K + 1), K = 0..15,
// declared in link16.decl. Linked, with link16_callers.cu, from PTX and from LTO-IR.
#define FOREIGN(k)                                                                               \
    extern "C" __device__ int link_f##k(float *return_value, float acc, float x)                 \
    {                                                                                            \
        *return_value = __fmaf_rn(acc, x, (float)(k) + 1.0f);                                    \
        return 0;                                                                                \
    }

FOREIGN(0) FOREIGN(1) FOREIGN(2) FOREIGN(3) FOREIGN(4) FOREIGN(5) FOREIGN(6) FOREIGN(7)
FOREIGN(8) FOREIGN(9) FOREIGN(10) FOREIGN(11) FOREIGN(12) FOREIGN(13) FOREIGN(14) FOREIGN(15)
