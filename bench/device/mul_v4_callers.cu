// multiply_vectors with 16-byte accesses: each thread multiplies four floats through the same
// foreign function mul_f32_f32 (device/functions.decl), so that memory, not the access width,
// sets the pace; LTO inlines the four calls.
extern "C" __global__ void multiply_vectors_v4(float4 *out, const float4 *a, const float4 *b,
                                               int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4)
        return;
    float4 x = a[i], y = b[i], r;
    int status = mul_f32_f32(&r.x, x.x, y.x) | mul_f32_f32(&r.y, x.y, y.y) |
                 mul_f32_f32(&r.z, x.z, y.z) | mul_f32_f32(&r.w, x.w, y.w);
    if (status != 0)
        r.x = r.y = r.z = r.w = __int_as_float(0x7fc00000);
    out[i] = r;
}
