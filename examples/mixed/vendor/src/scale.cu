// The source of vendor/scale.sm_90.cubin, kept for reference only: the build never compiles it,
// it links the cubin as shipped. Made with (CUDA 13.0), in vendor/:
//     nvcc -cubin -rdc=true -arch=sm_90 -o scale.sm_90.cubin src/scale.cu
extern "C" __device__ int scale(float *return_value, float x, float k)
{
    *return_value = x * k;
    return 0;
}
