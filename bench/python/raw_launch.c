/*
 * The C anchor of bench/python/bench_python.py's launch figure: raw cuLaunchKernel, as
 * fdlink-bench's benchmark 3 measures it (bench/launch.c): the kernel's CUfunction from a cubin,
 * N back-to-back one-thread launches of a 4-argument kernel and one synchronisation, timed on the
 * host clock. No fdlink, no Python: libcuda opened with dlopen, the few entry points by name.
 *
 * usage: raw_launch CUBIN KERNEL LAUNCHES SAMPLES
 * prints one line per sample, `sample US_PER_LAUNCH`; exit 1 on any driver error (named).
 * Built by bench_python.py with the host's C compiler (cc -O2 raw_launch.c -ldl).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

static void *lib;

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "raw_launch: libcuda has no %s\n", name);
        exit(1);
    }
    return p;
}

#define CHECK(call, what)                                                                          \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != 0) {                                                                             \
            fprintf(stderr, "raw_launch: %s failed (CUresult %d)\n", what, r_);                    \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: raw_launch CUBIN KERNEL LAUNCHES SAMPLES\n");
        return 2;
    }
    long launches = atol(argv[3]), samples = atol(argv[4]);
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *image = malloc((size_t)size + 1);
    if (!image || fread(image, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "raw_launch: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "raw_launch: %s\n", dlerror());
        return 1;
    }
    CUresult (*cuInit)(unsigned) = (CUresult(*)(unsigned))sym("cuInit");
    CUresult (*cuDeviceGet)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))sym("cuDeviceGet");
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))sym("cuDevicePrimaryCtxRetain");
    CUresult (*cuCtxSetCurrent)(CUcontext) = (CUresult(*)(CUcontext))sym("cuCtxSetCurrent");
    CUresult (*cuModuleLoadData)(CUmodule *, const void *) =
        (CUresult(*)(CUmodule *, const void *))sym("cuModuleLoadData");
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))sym("cuModuleGetFunction");
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))sym("cuMemAlloc_v2");
    CUresult (*cuCtxSynchronize)(void) = (CUresult(*)(void))sym("cuCtxSynchronize");
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, void *, void **, void **) =
        (CUresult(*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, void *, void **, void **))sym("cuLaunchKernel");
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr out, a, b;
    CHECK(cuInit(0), "cuInit");
    CHECK(cuDeviceGet(&dev, 0), "cuDeviceGet");
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    CHECK(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    CHECK(cuModuleLoadData(&mod, image), "cuModuleLoadData");
    CHECK(cuModuleGetFunction(&fn, mod, argv[2]), "cuModuleGetFunction");
    CHECK(cuMemAlloc(&out, 1024), "cuMemAlloc");
    CHECK(cuMemAlloc(&a, 1024), "cuMemAlloc");
    CHECK(cuMemAlloc(&b, 1024), "cuMemAlloc");
    int n = 256;
    void *params[4] = {&out, &a, &b, &n};
    for (long i = 0; i < 1000; i++) /* warm-up */
        CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
    CHECK(cuCtxSynchronize(), "cuCtxSynchronize");
    for (long s = 0; s < samples; s++) {
        double t0 = now_us();
        for (long i = 0; i < launches; i++)
            CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
        CHECK(cuCtxSynchronize(), "cuCtxSynchronize");
        printf("sample %.4f\n", (now_us() - t0) / (double)launches);
    }
    free(image);
    return 0;
}
