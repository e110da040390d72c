// A kernel that launches a kernel (CUDA dynamic parallelism): needs relocatable device code and
// the device runtime, libcudadevrt.a. Each block's thread 0 launches child<<<1, 32>>>, which
// writes out[base + i] = 3 * (base + i) + 1 for its 32 elements.
extern "C" __global__ void child(int *out, int base, int n)
{
    int i = base + (int)threadIdx.x;
    if (i < n)
        out[i] = 3 * i + 1;
}

extern "C" __global__ void launch_child(int *out, int n)
{
    int base = (int)blockIdx.x * 32;
    if (threadIdx.x == 0 && base < n)
        child<<<1, 32>>>(out, base, n);
}
