// A caller compiled against the declared prototypes: its .extern references conform (ABI-8).
extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b);
extern "C" __device__ int sum_reduce(float *return_value, float *array, int n);

extern "C" __global__ void caller(float *out, float *in, int n)
{
    float product, sum;
    int s1 = mul_f32_f32(&product, in[0], in[1]);
    int s2 = sum_reduce(&sum, in, n);
    out[0] = (s1 || s2) ? 0.0f : product + sum;
}
