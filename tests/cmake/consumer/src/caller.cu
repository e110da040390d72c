// out[i] = offset(scale(in[i], k), d), through two foreign functions of two source files.
extern "C" __global__ void scale_offset(float *out, const float *in, float k, float d, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float s, r;
    if (scale(&s, in[i], k) != 0 || offset(&r, s, d) != 0)
        r = -1.0f;
    out[i] = r;
}
