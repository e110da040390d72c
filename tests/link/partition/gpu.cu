// The partitioned link on a GPU (run.sh, test partition_gpu): gpu PARTITIONED.cubin WHOLE.cubin
// runs kernels k00..k31 of gen.sh's program from each cubin and compares their outputs; then, in
// the partitioned cubin, k00 (the first group) sets the counter and the static word and k31 (the
// last group) reads them back: one definition each, shared by both groups. Exit 1 on a failure.
#include <cstdio>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                  \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "gpu: %s: %s\n", #x, cudaGetErrorString(e_));                         \
            return 1;                                                                             \
        }                                                                                         \
    } while (0)

static int load(const char *path, cudaLibrary_t *lib)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1;
    std::vector<char> image;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        image.insert(image.end(), buf, buf + n);
    fclose(f);
    CHECK(cudaLibraryLoadData(lib, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    return 0;
}

// every kernel of @p lib over n outputs into @p all (32 * n floats); the words of k31 into @p words
static int run_all(cudaLibrary_t lib, int n, std::vector<float> &all, unsigned *words)
{
    float *d_out;
    unsigned *d_word;
    CHECK(cudaMalloc(&d_out, n * sizeof(float)));
    CHECK(cudaMalloc(&d_word, 2 * sizeof(unsigned)));
    all.assign(32 * (size_t)n, 0.0f);
    for (int k = 0; k < 32; k++) {
        char name[8];
        snprintf(name, sizeof name, "k%02d", k);
        cudaKernel_t kern;
        CHECK(cudaLibraryGetKernel(&kern, lib, name));
        void *args[] = {&d_out, &d_word, &n};
        CHECK(cudaLaunchKernel((const void *)kern, dim3((n + 127) / 128), dim3(128), args, 0, 0));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(&all[(size_t)k * n], d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    }
    CHECK(cudaMemcpy(words, d_word, 2 * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_word));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    cudaLibrary_t part, whole;
    if (load(argv[1], &part) || load(argv[2], &whole))
        return 1;
    const int n = 4096;
    std::vector<float> a, b;
    unsigned wa[2], wb[2];
    if (run_all(part, n, a, wa) || run_all(whole, n, b, wb))
        return 1;
    int fail = 0;
    if (memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
        fprintf(stderr, "gpu: the kernels' outputs differ from the unpartitioned cubin's\n");
        fail = 1;
    } else {
        printf("gpu: all 32 kernels' outputs equal to the unpartitioned cubin's\n");
    }
    // k00 set counter = 12345 and the static word = 777 before k01..k30 added 30 to the counter
    if (wa[0] != 12345u + 30u || wa[1] != 777u || wa[0] != wb[0] || wa[1] != wb[1]) {
        fprintf(stderr, "gpu: k31 read counter %u, static word %u (unpartitioned: %u, %u; expected "
                        "12375, 777)\n", wa[0], wa[1], wb[0], wb[1]);
        fail = 1;
    } else {
        printf("gpu: k31 (last group) sees k00's (first group) counter and static word\n");
    }
    return fail;
}
