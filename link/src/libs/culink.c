/*
 * The driver's linker (cuLink*) and the current context's device, from libcuda loaded here with
 * dlopen: link/ does not depend on host/ (dependencies point abi <- link <- host). The driver's
 * state is shared all the same: a second dlopen of libcuda.so.1 returns the library host/ opened,
 * so the context fdl_device_open made current is the one seen here.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Only the types: the functions are looked up with dlsym. */
#include <cuda.h>

#include "internal.h"
#include "libs.h"

/* Size of each cuLink log buffer; the driver writes at most this much. */
#define LOG_BYTES ((size_t)1 << 20)

typedef struct cu_fn {
    CUresult (*ctx_get_current)(CUcontext *ctx);
    CUresult (*ctx_get_device)(CUdevice *dev);
    CUresult (*device_get_attribute)(int *value, CUdevice_attribute attr, CUdevice dev);
    CUresult (*link_create)(unsigned n, CUjit_option *opts, void **values, CUlinkState *state);
    CUresult (*link_add_data)(CUlinkState state, CUjitInputType type, void *data, size_t size,
                              const char *name, unsigned n, CUjit_option *opts, void **values);
    CUresult (*link_complete)(CUlinkState state, void **cubin, size_t *size);
    CUresult (*link_destroy)(CUlinkState state);
    CUresult (*get_error_name)(CUresult result, const char **name); /* optional */
} cu_fn;

/* Global state: the entry points, filled once under pthread_once and read-only after. */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    cu_fn fn;
} g_cu = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {0}};

#define PURPOSE "for the culink backend and for arch \"native\""

static void cu_load(void)
{
    fdl_error *err = &g_cu.error;
    void *h = NULL;
    const char *const names[] = {"libcuda.so.1", NULL};
    static const fdl__symbol symbols[] = {
        {"cuCtxGetCurrent", offsetof(cu_fn, ctx_get_current), 0},
        {"cuCtxGetDevice", offsetof(cu_fn, ctx_get_device), 0},
        {"cuDeviceGetAttribute", offsetof(cu_fn, device_get_attribute), 0},
        {"cuLinkCreate_v2", offsetof(cu_fn, link_create), 0},
        {"cuLinkAddData_v2", offsetof(cu_fn, link_add_data), 0},
        {"cuLinkComplete", offsetof(cu_fn, link_complete), 0},
        {"cuLinkDestroy", offsetof(cu_fn, link_destroy), 0},
        {"cuGetErrorName", offsetof(cu_fn, get_error_name), 1},
    };
    cu_fn fn;
    memset(&fn, 0, sizeof fn);
    g_cu.status = fdl__dlopen_table(&h, "FDLINK_LIBCUDA", names, "the CUDA driver", PURPOSE,
                                    symbols, sizeof symbols / sizeof symbols[0], &fn, err);
    if (g_cu.status == FDL_OK)
        g_cu.fn = fn;
}

int fdl__cu_load(fdl_error *err)
{
    pthread_once(&g_cu.once, cu_load);
    if (g_cu.status != FDL_OK && err)
        *err = g_cu.error;
    return g_cu.status;
}

const char *fdl__cu_result_name(int result, char *buf, size_t size)
{
    const char *name = NULL;
    if (g_cu.status == FDL_OK && g_cu.fn.get_error_name &&
        g_cu.fn.get_error_name((CUresult)result, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(buf, size, "CUDA_ERROR_%d", result);
    return buf;
}

/* Whether the calling thread has a current context (*has 0 or 1). @return FDL_OK or the error */
static int current_context(int *has, fdl_error *err)
{
    *has = 0;
    int rc = fdl__cu_load(err);
    if (rc != FDL_OK)
        return rc;
    CUcontext ctx = NULL;
    CUresult r = g_cu.fn.ctx_get_current(&ctx);
    if (r == CUDA_ERROR_NOT_INITIALIZED || r == CUDA_ERROR_DEINITIALIZED ||
        (r == CUDA_SUCCESS && !ctx))
        return FDL_OK;
    if (r == CUDA_ERROR_STUB_LIBRARY) {
        rc = fdl__fail(err, FDL_ENODEVICE, "libcuda is the CUDA toolkit's stub, not a driver: no "
                                           "CUDA driver is installed");
        if (err)
            err->backend_code = (int)r;
        return rc;
    }
    if (r != CUDA_SUCCESS) {
        char buf[32];
        rc = fdl__fail(err, FDL_ECUDA, "cuCtxGetCurrent failed: %s",
                       fdl__cu_result_name((int)r, buf, sizeof buf));
        if (err)
            err->backend_code = (int)r;
        return rc;
    }
    *has = 1;
    return FDL_OK;
}

int fdl__cu_require_context(fdl_error *err)
{
    int has;
    int rc = current_context(&has, err);
    if (rc != FDL_OK)
        return rc;
    if (!has)
        return fdl__fail(err, FDL_EINVAL, "the culink backend needs a current CUDA context (open "
                                          "a device first) or use nvjitlink");
    return FDL_OK;
}

int fdl__cu_current_cc(int *cc, fdl_error *err)
{
    *cc = 0;
    int has;
    int rc = current_context(&has, err);
    if (rc != FDL_OK)
        return rc;
    if (!has)
        return fdl__fail(err, FDL_ENODEVICE, "arch \"native\" needs a current CUDA context (open "
                                             "a device first) or give sm_NN");
    CUdevice dev = 0;
    int major = 0, minor = 0;
    CUresult r = g_cu.fn.ctx_get_device(&dev);
    if (r == CUDA_SUCCESS)
        r = g_cu.fn.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                         dev);
    if (r == CUDA_SUCCESS)
        r = g_cu.fn.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                         dev);
    if (r != CUDA_SUCCESS) {
        char buf[32];
        fdl__fail(err, FDL_ECUDA, "cannot read the current device's compute capability: %s",
                  fdl__cu_result_name((int)r, buf, sizeof buf));
        if (err)
            err->backend_code = (int)r;
        return FDL_ECUDA;
    }
    *cc = major * 10 + minor;
    return FDL_OK;
}

/* ---- cuLink ---------------------------------------------------------------------------------- */

#define MAX_JIT_OPTIONS 16

struct fdl__culink_state {
    CUlinkState state;
    /* Option arrays and log buffers: the driver writes the logs (and the sizes in the value
     * array) during every call, so all of them live until after cuLinkDestroy. */
    CUjit_option opt[MAX_JIT_OPTIONS];
    void *val[MAX_JIT_OPTIONS];
    unsigned nopt;
    char *info;
    char *error;
};

static void push(fdl__culink_state *st, CUjit_option o, void *v)
{
    st->opt[st->nopt] = o;
    st->val[st->nopt] = v;
    st->nopt++;
}

int fdl__culink_create(fdl__culink_state **out, const fdl__culink_options *opts, fdl_error *err)
{
    *out = NULL;
    int rc = fdl__cu_require_context(err);
    if (rc != FDL_OK)
        return rc;
    fdl__culink_state *st = calloc(1, sizeof *st);
    if (!st || !(st->info = calloc(LOG_BYTES, 1)) || !(st->error = calloc(LOG_BYTES, 1))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory creating a cuLink state");
        goto cleanup;
    }
    push(st, CU_JIT_INFO_LOG_BUFFER, st->info);
    push(st, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, (void *)(uintptr_t)(LOG_BYTES - 1));
    push(st, CU_JIT_ERROR_LOG_BUFFER, st->error);
    push(st, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, (void *)(uintptr_t)(LOG_BYTES - 1));
    if (opts->target)
        push(st, CU_JIT_TARGET, (void *)(uintptr_t)opts->target);
    if (opts->opt_level >= 0)
        push(st, CU_JIT_OPTIMIZATION_LEVEL, (void *)(uintptr_t)(unsigned)opts->opt_level);
    if (opts->debug)
        push(st, CU_JIT_GENERATE_DEBUG_INFO, (void *)(uintptr_t)1);
    if (opts->lineinfo)
        push(st, CU_JIT_GENERATE_LINE_INFO, (void *)(uintptr_t)1);
    if (opts->verbose)
        push(st, CU_JIT_LOG_VERBOSE, (void *)(uintptr_t)1);
    if (opts->maxrregcount > 0)
        push(st, CU_JIT_MAX_REGISTERS, (void *)(uintptr_t)(unsigned)opts->maxrregcount);
    CUresult r = g_cu.fn.link_create(st->nopt, st->opt, st->val, &st->state);
    if (r != CUDA_SUCCESS) {
        char buf[32];
        rc = fdl__fail(err, FDL_ELINK, "cuLinkCreate rejected the options: %s%s%s",
                       fdl__cu_result_name((int)r, buf, sizeof buf), st->error[0] ? ": " : "",
                       st->error);
        if (err)
            err->backend_code = (int)r;
        st->state = NULL;
        goto cleanup;
    }
    *out = st;
    st = NULL;
cleanup:
    fdl__culink_destroy(st);
    return rc;
}

int fdl__culink_add(fdl__culink_state *st, int type, const void *data, size_t size,
                    const char *name, int *cu_result)
{
    /* cuLinkAddData takes a non-const pointer but only reads the data */
    void *p;
    memcpy(&p, &data, sizeof p);
    CUresult r =
        g_cu.fn.link_add_data(st->state, (CUjitInputType)type, p, size, name, 0, NULL, NULL);
    *cu_result = (int)r;
    return r == CUDA_SUCCESS ? FDL_OK : FDL_ELINK;
}

int fdl__culink_complete(fdl__culink_state *st, unsigned char **cubin, size_t *size,
                         int *cu_result)
{
    *cubin = NULL;
    *size = 0;
    void *image = NULL;
    size_t n = 0;
    CUresult r = g_cu.fn.link_complete(st->state, &image, &n);
    *cu_result = (int)r;
    if (r != CUDA_SUCCESS)
        return FDL_ELINK;
    if (!image || !n) {
        *cu_result = (int)CUDA_ERROR_UNKNOWN;
        return FDL_ELINK;
    }
    /* the image belongs to the state: copy it before anything destroys the state */
    *cubin = malloc(n);
    if (!*cubin)
        return FDL_ENOMEM;
    memcpy(*cubin, image, n);
    *size = n;
    return FDL_OK;
}

const char *fdl__culink_info_log(const fdl__culink_state *st)
{
    return st && st->info ? st->info : "";
}

const char *fdl__culink_error_log(const fdl__culink_state *st)
{
    return st && st->error ? st->error : "";
}

void fdl__culink_destroy(fdl__culink_state *st)
{
    if (!st)
        return;
    if (st->state)
        g_cu.fn.link_destroy(st->state);
    /* only now: the driver may write the logs until the state is gone */
    free(st->info);
    free(st->error);
    free(st);
}
