extern "C" __device__ int offset(float *return_value, float x, float d)
{
    *return_value = x + d;
    return 0;
}
