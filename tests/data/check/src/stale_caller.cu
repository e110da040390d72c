// A caller compiled against an old prototype of mul_f32_f32 that took a double (ABI-8).
extern "C" __device__ int mul_f32_f32(float *return_value, double a, float b);

extern "C" __global__ void stale_caller(float *out, double a, float b)
{
    float product;
    int status = mul_f32_f32(&product, a, b);
    out[0] = status ? 0.0f : product;
}
