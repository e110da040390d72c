// A caller of globals.cu's device function, compiled separately.
extern "C" __device__ float corpus_scale(float x);

extern "C" __global__ void corpus_caller(float *out)
{
    out[threadIdx.x] = corpus_scale((float)threadIdx.x);
}
