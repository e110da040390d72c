// Benchmark 4's caller: one kernel that calls the 16 foreign functions of link16.decl in turn.
extern "C" __global__ void link_chain(float *out, const float *xs, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = xs[i], acc = x, r = 0.0f;
    int status = 0;
#define STEP(k)                                                                                  \
    status |= link_f##k(&r, acc, x);                                                             \
    acc = r;
    STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
    STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)
#undef STEP
    out[i] = status == 0 ? acc : __int_as_float(0x7fc00000);
}
