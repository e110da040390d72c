// CUDA C compiled at run time with NVRTC: BLOCK_SIZE comes from the host program (-D), and the
// results prove its value. out[b] = BLOCK_SIZE * (in[b * BLOCK_SIZE] + ... ), the product taken
// by the foreign function mul_f32_f32 (linked from another input).
#ifndef BLOCK_SIZE
#error "BLOCK_SIZE must be defined (-DBLOCK_SIZE=N)"
#endif

extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b);

extern "C" __global__ void block_sum(float *out, const float *in)
{
    __shared__ float part[BLOCK_SIZE];
    part[threadIdx.x] = in[blockIdx.x * BLOCK_SIZE + threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.0f;
        for (int i = 0; i < BLOCK_SIZE; i++)
            total += part[i];
        float r;
        out[blockIdx.x] = mul_f32_f32(&r, total, (float)BLOCK_SIZE) == 0 ? r : -1.0f;
    }
}
