// A foreign function that reports invalid input through its status (ABI-2): 0 = success.
extern "C" __device__ int safe_sqrt(float *return_value, float x)
{
    if (x < 0.0f)
        return 1;
    *return_value = sqrtf(x);
    return 0;
}
