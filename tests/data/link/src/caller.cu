// Caller kernel for the link fixtures: out[i] = a[i] * b[i] through the foreign function
// mul_f32_f32 (defined in mul.cu), reached at link time.
// Regenerate: nvcc -ptx -rdc=true -arch=compute_75 -o ../caller.ptx caller.cu
extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b);

extern "C" __global__ void multiply_vectors(float *out, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float r;
    int status = mul_f32_f32(&r, a[i], b[i]);
    out[i] = status == 0 ? r : __int_as_float(0x7fc00000);
}
