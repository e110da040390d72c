/* nvJitLink, opened with dlopen the first time a link needs it. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libmemo.h"
#include "nvjl.h"

#ifndef FDLINK_CUDA_ROOT
#  define FDLINK_CUDA_ROOT "/usr/local/cuda"
#endif

#define PURPOSE "to link device code"

/*
 * Global state (with cache.c's memory tier and the memo below): the table of entry points,
 * filled once under pthread_once and read-only after, with the outcome of the load.
 */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error; /* why the load failed, copied to every caller */
    fdl__nvjl fn;
    int64_t load_start_ns; /* CLOCK_REALTIME when the load began (libmemo.h) */
    atomic_int tried;      /* the load has run (whatever its outcome) */
} g_nvjl = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {0}, 0, 0};

/* the toolkit's copy last, when the build knows where the toolkit is */
static const char *const lib_names[] = {"libnvJitLink.so.13", "libnvJitLink.so",
                                    sizeof FDLINK_CUDA_ROOT > 1 ? FDLINK_CUDA_ROOT
                                                          "/lib64/libnvJitLink.so.13"
                                                        : NULL,
                                    NULL};

/* What this process knows of nvJitLink's version without loading it (libmemo.h). */
static fdl__libmemo_mem g_memo = FDL__LIBMEMO_MEM_INIT;
static const fdl__libspec spec = {"nvJitLink", "FDLINK_NVJITLINK", lib_names, &g_memo};

static const fdl__symbol symbols[] = {
    {"nvJitLinkCreate", offsetof(fdl__nvjl, create), 0},
    {"nvJitLinkDestroy", offsetof(fdl__nvjl, destroy), 0},
    {"nvJitLinkAddData", offsetof(fdl__nvjl, add_data), 0},
    {"nvJitLinkComplete", offsetof(fdl__nvjl, complete), 0},
    {"nvJitLinkGetLinkedCubinSize", offsetof(fdl__nvjl, get_linked_cubin_size), 0},
    {"nvJitLinkGetLinkedCubin", offsetof(fdl__nvjl, get_linked_cubin), 0},
    {"nvJitLinkGetErrorLogSize", offsetof(fdl__nvjl, get_error_log_size), 0},
    {"nvJitLinkGetErrorLog", offsetof(fdl__nvjl, get_error_log), 0},
    {"nvJitLinkGetInfoLogSize", offsetof(fdl__nvjl, get_info_log_size), 0},
    {"nvJitLinkGetInfoLog", offsetof(fdl__nvjl, get_info_log), 0},
    {"nvJitLinkGetLinkedPtxSize", offsetof(fdl__nvjl, get_linked_ptx_size), 0},
    {"nvJitLinkGetLinkedPtx", offsetof(fdl__nvjl, get_linked_ptx), 0},
    {"nvJitLinkVersion", offsetof(fdl__nvjl, version), 1},
};

static void load(void)
{
    fdl_error *err = &g_nvjl.error;
    void *handle = NULL;
    fdl__nvjl fn;
    memset(&fn, 0, sizeof fn);
    g_nvjl.load_start_ns = fdl__libmemo_now();
    g_nvjl.status = fdl__dlopen_table(&handle, "FDLINK_NVJITLINK", lib_names, "nvJitLink", PURPOSE,
                                      symbols, sizeof symbols / sizeof symbols[0], &fn, err);
    if (g_nvjl.status == FDL_OK)
        g_nvjl.fn = fn;
    atomic_store(&g_nvjl.tried, 1);
}

const fdl__libspec *fdl__nvjl_spec(void)
{
    return &spec;
}

int fdl__nvjl_tried(void)
{
    return atomic_load(&g_nvjl.tried);
}

int fdl__nvjl_remember(const char *dir, unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    memset(id, 0, FDL__LIBMEMO_ID_SIZE);
    const fdl__nvjl *nv = NULL;
    unsigned major = 0, minor = 0;
    if (fdl__nvjl_get(&nv, NULL) != FDL_OK || !nv->version ||
        nv->version(&major, &minor) != NVJITLINK_SUCCESS)
        return 0;
    void *sym = NULL; /* POSIX: a data pointer can hold a function's address */
    memcpy(&sym, &nv->create, sizeof sym);
    return fdl__libmemo_record(&spec, dir, sym, g_nvjl.load_start_ns, major, minor, id);
}

int fdl__nvjl_get(const fdl__nvjl **out, fdl_error *err)
{
    *out = NULL;
    pthread_once(&g_nvjl.once, load);
    if (g_nvjl.status != FDL_OK) {
        if (err)
            *err = g_nvjl.error;
        return g_nvjl.status;
    }
    *out = &g_nvjl.fn;
    return FDL_OK;
}

const char *fdl__nvjl_result_name(int result)
{
    static const char *const names[] = {
        "NVJITLINK_SUCCESS",
        "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
        "NVJITLINK_ERROR_MISSING_ARCH",
        "NVJITLINK_ERROR_INVALID_INPUT",
        "NVJITLINK_ERROR_PTX_COMPILE",
        "NVJITLINK_ERROR_NVVM_COMPILE",
        "NVJITLINK_ERROR_INTERNAL",
        "NVJITLINK_ERROR_THREADPOOL",
        "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
        "NVJITLINK_ERROR_FINALIZE",
        "NVJITLINK_ERROR_NULL_INPUT",
        "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
        "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
        "NVJITLINK_ERROR_ARCH_MISMATCH",
        "NVJITLINK_ERROR_OUTDATED_LIBRARY",
        "NVJITLINK_ERROR_MISSING_FATBIN",
        "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
        "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
        "NVJITLINK_ERROR_LTO_NOT_ENABLED",
    };
    if (result < 0 || (size_t)result >= sizeof names / sizeof names[0])
        return "NVJITLINK_ERROR_?";
    return names[result];
}
