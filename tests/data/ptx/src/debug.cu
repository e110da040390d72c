// Scanner fixture: device code built with -G, so the PTX carries .file/.loc directives and DWARF
// .section blocks, next to a global array with an initialiser and a kernel with several parameters.
extern "C" __device__ int scale(float *return_value, float x, int n);

__device__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};

extern "C" __device__ int twice(float *return_value, float x)
{
    *return_value = 2.0f * x + table[1];
    return 0;
}

extern "C" __global__ void apply(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float r;
        int status = scale(&r, in[i], n);
        status |= twice(&r, r);
        out[i] = status ? 0.0f : r;
    }
}
