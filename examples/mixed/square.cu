extern "C" __device__ int square(float *return_value, float x)
{
    *return_value = x * x;
    return 0;
}
