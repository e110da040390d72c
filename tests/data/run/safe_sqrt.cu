// A foreign device function of the Numba ABI that can fail (ABI-2: int status, 0 = success):
// compiled with NVRTC by `fdlink run --map safe_sqrt` (tests/cli/cases_run.cmake).
extern "C" __device__ int safe_sqrt(float *ret, float x)
{
    if (x != x)
        return 2;
    if (x < 0.0f)
        return 1;
    *ret = sqrtf(x);
    return 0;
}
