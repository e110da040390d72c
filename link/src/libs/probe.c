/*
 * Probes for `fdlink doctor` (abi/src/probe.h): nvJitLink, libcudadevrt.a, the toolkit and its
 * PTX ISA, and what fdlink was built with. NVRTC and libzstd are probed where they are loaded.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Only CUDA_VERSION: the version of the headers fdlink is built with. */
#include <cuda.h>

#include "internal.h"
#include "libs.h"
#include "nvjl.h"
#include "probe.h"

#ifndef FDLINK_CUDA_ROOT
#  define FDLINK_CUDA_ROOT "/usr/local/cuda"
#endif

static void probe_init(fdl__lib_probe *out)
{
    memset(out, 0, sizeof *out);
    out->major = out->minor = -1;
}

void fdl__probe_nvjl(fdl__lib_probe *out)
{
    probe_init(out);
    const fdl__nvjl *jl = NULL;
    out->status = fdl__nvjl_get(&jl, &out->error);
    if (out->status != FDL_OK)
        return;
    void (*any)(void) = NULL;
    memcpy(&any, &jl->create, sizeof any);
    fdl__library_of(any, out->path, sizeof out->path);
    unsigned major = 0, minor = 0;
    if (jl->version && jl->version(&major, &minor) == NVJITLINK_SUCCESS) {
        out->major = (int)major;
        out->minor = (int)minor;
    }
}

/* CUDA_VERSION from a cuda.h: `#define CUDA_VERSION 13000`; 0 when it has none. */
static int header_version(const char *path)
{
    char *text = NULL;
    size_t size = 0;
    if (fdl__read_file(path, &text, &size, NULL) != FDL_OK)
        return 0;
    int version = 0;
    const char *key = "#define CUDA_VERSION ";
    const char *p = strstr(text, key);
    if (p) {
        long v = strtol(p + strlen(key), NULL, 10);
        if (v > 0 && v < 1000000)
            version = (int)v;
    }
    free(text);
    return version;
}

void fdl__probe_toolkit(fdl__toolkit_probe *out)
{
    memset(out, 0, sizeof *out);
    const char *roots[4];
    size_t n = fdl__cuda_roots(roots, 4);
    for (size_t i = 0; i < n; i++) {
        char header[FDL__PROBE_PATH_MAX];
        struct stat st;
        int len = snprintf(header, sizeof header, "%s/include/cuda.h", roots[i]);
        if (len <= 0 || (size_t)len >= sizeof header || stat(header, &st) != 0)
            continue;
        snprintf(out->root, sizeof out->root, "%s", roots[i]);
        out->version = header_version(header);
        len = snprintf(out->nvcc, sizeof out->nvcc, "%s/bin/nvcc", roots[i]);
        if (len <= 0 || (size_t)len >= sizeof out->nvcc || access(out->nvcc, X_OK) != 0)
            out->nvcc[0] = '\0';
        _Static_assert(FDL__PROBE_PATH_MAX == FDL__CUDA_PATH_MAX &&
                           sizeof out->include / sizeof out->include[0] == FDL__CUDA_INCLUDE_MAX,
                       "the probe holds what fdl__cuda_include_dirs gives");
        out->ninclude = fdl__cuda_include_dirs(out->include, FDL__CUDA_INCLUDE_MAX,
                                               out->include_from, sizeof out->include_from);
        return;
    }
}

void fdl__probe_cudadevrt(fdl__lib_probe *out, const fdl__toolkit_probe *tk)
{
    probe_init(out);
    if (!fdl__cuda_find(out->path, sizeof out->path, "lib64/libcudadevrt.a")) {
        out->status = fdl__fail(&out->error, FDL_ENOTFOUND,
                                "libcudadevrt.a not found in the toolkit (lib64/libcudadevrt.a "
                                "under FDLINK_CUDA_ROOT, CUDA_PATH, %s or /usr/local/cuda)",
                                FDLINK_CUDA_ROOT);
        return;
    }
    if (tk && tk->version) {
        out->major = tk->version / 1000;
        out->minor = tk->version % 1000 / 10;
    }
}

int fdl__ptx_isa_of_cuda(int v)
{
    /* the PTX ISA of each CUDA release (the PTX ISA document's release notes) */
    static const int table[][2] = {
        {11000, 70}, {11010, 71}, {11020, 72}, {11030, 73}, {11040, 74}, {11050, 75},
        {11060, 76}, {11070, 77}, {11080, 78}, {12000, 80}, {12010, 81}, {12020, 82},
        {12030, 83}, {12040, 84}, {12050, 85}, {12060, 85}, {12080, 87}, {12090, 88},
        {13000, 90}, {13010, 91},
    };
    int isa = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (v >= table[i][0])
            isa = table[i][1];
    return isa;
}

int fdl__build_cuda_version(void)
{
    return CUDA_VERSION;
}

const char *fdl__build_cuda_root(void)
{
    return FDLINK_CUDA_ROOT;
}
