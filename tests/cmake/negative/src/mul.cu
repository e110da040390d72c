// Disagrees with its declaration: the second parameter is a double, not a float32.
extern "C" __device__ int mul_f32_f32(float *return_value, float a, double b)
{
    *return_value = a * (float)b;
    return 0;
}
