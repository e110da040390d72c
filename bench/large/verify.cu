// Benchmark 9's check of a cubin: verify CUBIN KERNELS OUT [ONLY]: runs kernels k0000..
// (or the one ONLY) of the generated program over 4096 inputs and writes their outputs to OUT,
// so that the outputs of every variant can be compared byte for byte. Exit 1 on a CUDA error or
// a device-side status (an output of -1).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "verify: %s: %s\n", #x, cudaGetErrorString(e_));                      \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    std::vector<char> image;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        image.insert(image.end(), buf, buf + n);
    fclose(f);
    int kernels = atoi(argv[2]);
    const int count = 4096;
    std::vector<float> in(count), out(count);
    for (int i = 0; i < count; i++)
        in[i] = (float)(i % 97) * 0.01f - 0.3f;
    cudaLibrary_t lib;
    CHECK(cudaLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    float *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, count * sizeof(float)));
    CHECK(cudaMalloc(&d_out, count * sizeof(float)));
    CHECK(cudaMemcpy(d_in, in.data(), count * sizeof(float), cudaMemcpyHostToDevice));
    FILE *o = fopen(argv[3], "wb");
    if (!o)
        return 1;
    for (int k = 0; k < kernels; k++) {
        char name[32];
        snprintf(name, sizeof name, "k%04d", k);
        if (argc > 4 && strcmp(argv[4], name) != 0)
            continue;
        cudaKernel_t kern;
        CHECK(cudaLibraryGetKernel(&kern, lib, name));
        int nn = count;
        void *args[] = {&d_out, &d_in, &nn};
        CHECK(cudaLaunchKernel((const void *)kern, dim3(count / 128), dim3(128), args, 0, 0));
        CHECK(cudaMemcpy(out.data(), d_out, count * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < count; i++)
            if (out[i] == -1.0f) {
                fprintf(stderr, "verify: %s: a device function returned an error\n", name);
                return 1;
            }
        fwrite(out.data(), sizeof(float), count, o);
    }
    fclose(o);
    CHECK(cudaLibraryUnload(lib));
    return 0;
}
