// Caller kernels of the showcase. They see the foreign functions only through the prototypes of
// the generated header (force-included) and reach them at link time.

// out[i] = a[i] * b[i] through mul_f32_f32 (Numba's multiply_vectors example)
extern "C" __global__ void multiply_vectors(float *out, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float r;
    int status = mul_f32_f32(&r, a[i], b[i]);
    out[i] = status == 0 ? r : __int_as_float(0x7fc00000);
}

// sums[row] = sum of data[row * row_len .. row * row_len + row_len) through sum_reduce, which is
// handed a pointer into device memory (Numba's sum_reduce example, one row per thread)
extern "C" __global__ void sum_rows(float *sums, float *data, int rows, int row_len)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows)
        return;
    float r;
    int status = sum_reduce(&r, data + (long long)row * row_len, row_len);
    sums[row] = status == 0 ? r : __int_as_float(0x7fc00000);
}

// out[i] = a[i] + b[i] through the C-ABI function add_cabi
extern "C" __global__ void add_vectors_u32(unsigned int *out, const unsigned int *a,
                                           const unsigned int *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = add_cabi(a[i], b[i]);
}
