// Callers of the library, and a kernel that launches a child kernel (dynamic parallelism, which
// needs the device runtime: linked with -lcudadevrt).

extern "C" __global__ void shade(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s, r;
    if (smoothstepf(&s, -1.0f, 1.0f, in[i]) != 0 || lerpf(&r, 10.0f, 20.0f, s) != 0)
        r = -1.0f;
    out[i] = r;
}

extern "C" __global__ void child(unsigned int *out, unsigned int base)
{
    unsigned int i = base + threadIdx.x;
    out[i] = 2u * i + 1u;
}

// One thread per block launches a child grid of 256 threads for its slice.
extern "C" __global__ void parent(unsigned int *out)
{
    if (threadIdx.x == 0)
        child<<<1, 256>>>(out, blockIdx.x * 256u);
}
