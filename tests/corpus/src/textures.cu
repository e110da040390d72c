// Texture and surface objects, read and written from a kernel.
extern "C" __global__ void corpus_textures(cudaTextureObject_t tex, cudaSurfaceObject_t surf,
                                           float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = tex1Dfetch<float>(tex, i) + tex2D<float>(tex, (float)i, 0.5f);
        surf2Dwrite(v, surf, i * (int)sizeof(float), 0);
        out[i] = v;
    }
}
