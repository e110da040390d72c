/* The CUDA driver (libcuda.so.1), opened with dlopen and initialised when first needed. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "internal.h"

/* The driver API version whose entry points are asked for (CUDA 12.0 signatures). */
#define API_VERSION 12000

/*
 * The one piece of global state of host/: the driver's entry points, filled once under
 * pthread_once (with cuInit) and read-only after, with the outcome.
 */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error; /* why loading or initialising failed, copied to every caller */
    fdl__cuda fn;
} g_cuda = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {0}};

typedef struct entry {
    const char *name;   /* as cuGetProcAddress knows it */
    const char *symbol; /* the exported symbol cuda.h maps the name to, for dlsym */
    size_t offset;      /* of the function pointer in fdl__cuda */
} entry;

static const entry entries[] = {
    {"cuInit", "cuInit", offsetof(fdl__cuda, init)},
    {"cuDriverGetVersion", "cuDriverGetVersion", offsetof(fdl__cuda, driver_get_version)},
    {"cuDeviceGetCount", "cuDeviceGetCount", offsetof(fdl__cuda, device_get_count)},
    {"cuDeviceGet", "cuDeviceGet", offsetof(fdl__cuda, device_get)},
    {"cuDeviceGetName", "cuDeviceGetName", offsetof(fdl__cuda, device_get_name)},
    {"cuDeviceGetAttribute", "cuDeviceGetAttribute", offsetof(fdl__cuda, device_get_attribute)},
    {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain",
     offsetof(fdl__cuda, primary_ctx_retain)},
    {"cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",
     offsetof(fdl__cuda, primary_ctx_release)},
    {"cuCtxSetCurrent", "cuCtxSetCurrent", offsetof(fdl__cuda, ctx_set_current)},
    {"cuCtxSynchronize", "cuCtxSynchronize", offsetof(fdl__cuda, ctx_synchronize)},
    {"cuModuleLoadDataEx", "cuModuleLoadDataEx", offsetof(fdl__cuda, module_load_data_ex)},
    {"cuModuleUnload", "cuModuleUnload", offsetof(fdl__cuda, module_unload)},
    {"cuModuleGetFunction", "cuModuleGetFunction", offsetof(fdl__cuda, module_get_function)},
    {"cuMemAlloc", "cuMemAlloc_v2", offsetof(fdl__cuda, mem_alloc)},
    {"cuMemFree", "cuMemFree_v2", offsetof(fdl__cuda, mem_free)},
    {"cuMemcpyHtoD", "cuMemcpyHtoD_v2", offsetof(fdl__cuda, memcpy_htod)},
    {"cuMemcpyDtoH", "cuMemcpyDtoH_v2", offsetof(fdl__cuda, memcpy_dtoh)},
    {"cuMemsetD8", "cuMemsetD8_v2", offsetof(fdl__cuda, memset_d8)},
    {"cuLaunchKernel", "cuLaunchKernel", offsetof(fdl__cuda, launch_kernel)},
    {"cuGetErrorName", "cuGetErrorName", offsetof(fdl__cuda, get_error_name)},
    {"cuGetErrorString", "cuGetErrorString", offsetof(fdl__cuda, get_error_string)},
};

/* cuGetProcAddress as of CUDA 12.0 (exported as cuGetProcAddress_v2). */
typedef CUresult (*get_proc_address_fn)(const char *symbol, void **pfn, int cuda_version,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *status);

/* Names and descriptions for results met before the driver can describe them (the stub). */
static const struct known {
    CUresult code;
    const char *name;
    const char *text;
} known[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
     "API call is not supported in the installed CUDA driver"},
    {CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
     "CUDA-capable device(s) is/are busy or unavailable"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_OPERATING_SYSTEM, "CUDA_ERROR_OPERATING_SYSTEM",
     "OS call failed or operation not supported on this OS"},
    {CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "forward compatibility was attempted on non supported HW"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static const struct known *find_known(CUresult r)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].code == r)
            return &known[i];
    return NULL;
}

const char *fdl__cu_name(const fdl__cuda *cu, CUresult r)
{
    const char *s = NULL;
    if (cu && cu->get_error_name && cu->get_error_name(r, &s) == CUDA_SUCCESS && s)
        return s;
    const struct known *k = find_known(r);
    return k ? k->name : "CUDA_ERROR_UNRECOGNIZED";
}

const char *fdl__cu_string(const fdl__cuda *cu, CUresult r)
{
    const char *s = NULL;
    if (cu && cu->get_error_string && cu->get_error_string(r, &s) == CUDA_SUCCESS && s)
        return s;
    const struct known *k = find_known(r);
    return k ? k->text : "no description from the driver";
}

int fdl__cu_is_async(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
        return 1;
    default:
        return 0;
    }
}

int fdl__cu_error(fdl_error *err, const fdl__cuda *cu, CUresult r, const char *what,
                  const char *last_kernel)
{
    if (!err)
        return FDL_ECUDA;
    const char *name = fdl__cu_name(cu, r), *text = fdl__cu_string(cu, r);
    if (fdl__cu_is_async(r) && last_kernel && last_kernel[0])
        fdl__error(err, FDL_ECUDA, NULL, 0, 0, last_kernel,
                   "an earlier launch failed: %s (%s); the last kernel launched was '%s'", name,
                   text, last_kernel);
    else if (fdl__cu_is_async(r))
        fdl__fail(err, FDL_ECUDA, "an earlier launch failed: %s (%s)", name, text);
    else if (strcmp(name, "CUDA_ERROR_UNRECOGNIZED") == 0)
        fdl__fail(err, FDL_ECUDA, "%s failed: CUresult %d (%s)", what, (int)r, text);
    else
        fdl__fail(err, FDL_ECUDA, "%s failed: %s (%s)", what, name, text);
    err->backend_code = (int)r;
    return FDL_ECUDA;
}

static void load(void)
{
    fdl_error *err = &g_cuda.error;
    const char *override = getenv("FDLINK_LIBCUDA");
    const char *path = override && override[0] ? override : "libcuda.so.1";
    /* An explicit choice is the only candidate: falling back would hide the mistake. */
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        g_cuda.status = fdl__error(err, FDL_ENOLIB, NULL, 0, 0, path,
                                   "cannot load %s (the CUDA driver%s), needed to run device "
                                   "code: %s",
                                   path, path == override ? ", from FDLINK_LIBCUDA" : "",
                                   why ? why : "unknown reason");
        return;
    }
    fdl__cuda fn;
    memset(&fn, 0, sizeof fn);
    get_proc_address_fn gpa = NULL;
    void *sym = dlsym(handle, "cuGetProcAddress_v2");
    memcpy(&gpa, &sym, sizeof gpa); /* POSIX: dlsym's pointer can hold a function pointer */
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *p = NULL;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (gpa && (gpa(entries[i].name, &p, API_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=
                        CUDA_SUCCESS ||
                    found != CU_GET_PROC_ADDRESS_SUCCESS))
            p = NULL;
        /* drivers before 12.0, and the toolkit's stub, which answers nothing through it */
        if (!p)
            p = dlsym(handle, entries[i].symbol);
        if (!p) {
            g_cuda.status = fdl__error(err, FDL_ENOLIB, NULL, 0, 0, entries[i].name,
                                       "%s lacks %s, needed to run device code: not a CUDA "
                                       "driver, or one older than CUDA 11",
                                       path, entries[i].name);
            return;
        }
        memcpy((char *)&fn + entries[i].offset, &p, sizeof p);
    }
    CUresult r = fn.init(0);
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY) {
        g_cuda.status = fdl__fail(err, FDL_ENODEVICE, "no CUDA device: cuInit failed: %s (%s)",
                                  fdl__cu_name(&fn, r), fdl__cu_string(&fn, r));
        err->backend_code = (int)r;
        return;
    }
    if (r != CUDA_SUCCESS) {
        g_cuda.status = fdl__cu_error(err, &fn, r, "cuInit", NULL);
        return;
    }
    r = fn.driver_get_version(&fn.driver_version);
    if (r != CUDA_SUCCESS) {
        g_cuda.status = fdl__cu_error(err, &fn, r, "cuDriverGetVersion", NULL);
        return;
    }
    g_cuda.fn = fn;
    g_cuda.status = FDL_OK;
}

int fdl__cuda_get(const fdl__cuda **out, fdl_error *err)
{
    *out = NULL;
    pthread_once(&g_cuda.once, load);
    if (g_cuda.status != FDL_OK) {
        if (err)
            *err = g_cuda.error;
        return g_cuda.status;
    }
    *out = &g_cuda.fn;
    return FDL_OK;
}
