// The caller of a cuFFTDx forward complex FFT that libmathdx generated (tests/vendor/
// mathdx_gen.c), its register API: each thread holds FFT_EPT elements, element i of thread t is
// x[t + i FFT_STRIDE], in and out; smem is the FFT's shared scratch. Compiled by fdlink (NVRTC,
// LTO-IR) and linked with the FFT's LTO-IR. FFT_STORAGE, FFT_EPT and FFT_STRIDE come from the
// generator's traits (-D).
extern "C" __device__ void dx_fft(double2 *rmem, double2 *smem);

extern "C" __global__ void fft_kernel(const double2 *in, double2 *out)
{
    extern __shared__ __align__(16) double2 smem[];
    double2 rmem[FFT_STORAGE];
    for (int i = 0; i < FFT_EPT; i++)
        rmem[i] = in[threadIdx.x + i * FFT_STRIDE];
    dx_fft(rmem, smem);
    for (int i = 0; i < FFT_EPT; i++)
        out[threadIdx.x + i * FFT_STRIDE] = rmem[i];
}
