// CUDA C that compiles with one warning (NVRTC's 177-D): shown, hidden by -w, an error with
// -Werror, left out by --diag-suppress=177.
extern "C" __device__ int copy_i32(int *ret, int x)
{
    int unused;
    *ret = x;
    return 0;
}
