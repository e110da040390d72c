// lerpf(a, b, t): a + t (b - a)
extern "C" __device__ int lerpf(float *return_value, float a, float b, float t)
{
    *return_value = a + t * (b - a);
    return 0;
}
