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
#include "hostprobe.h"

/*
 * The one piece of global state of host/: the driver's entry points, filled once under
 * pthread_once (with cuInit) and read-only after, with the outcome.
 */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error; /* why loading or initialising failed, copied to every caller */
    fdl__cuda fn;
    char path[FDL__PROBE_PATH_MAX]; /* the library loaded, for fdlink doctor; "" when none */
} g_cuda = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {0}, ""};

/*
 * One entry point: the name cuGetProcAddress knows, the CUDA version whose signature fdl__cuda
 * declares (cuGetProcAddress hands out the variant of that version: cuMemAlloc_v2 for 12000,
 * cuCtxSynchronize of CUDA 2.0 rather than that of 13.0), and the exported symbol cuda.h maps
 * the name to, for dlsym where cuGetProcAddress cannot answer.
 */
typedef struct entry {
    const char *name;
    int version;
    const char *symbol;
    size_t offset; /* of the function pointer in fdl__cuda */
    int optional;  /* newer than FDL__DRIVER_MIN_VERSION: NULL where the driver lacks it */
} entry;

#define E(name, symbol, member) {name, 12000, symbol, offsetof(fdl__cuda, member), 0}
#define OPT(name, version, member) {name, version, name, offsetof(fdl__cuda, member), 1}
static const entry entries[] = {
    E("cuInit", "cuInit", init),
    E("cuDriverGetVersion", "cuDriverGetVersion", driver_get_version),
    E("cuDeviceGetCount", "cuDeviceGetCount", device_get_count),
    E("cuDeviceGet", "cuDeviceGet", device_get),
    E("cuDeviceGetName", "cuDeviceGetName", device_get_name),
    E("cuDeviceGetAttribute", "cuDeviceGetAttribute", device_get_attribute),
    E("cuDeviceTotalMem", "cuDeviceTotalMem_v2", device_total_mem),
    E("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", primary_ctx_retain),
    E("cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2", primary_ctx_release),
    E("cuCtxSetCurrent", "cuCtxSetCurrent", ctx_set_current),
    E("cuCtxSynchronize", "cuCtxSynchronize", ctx_synchronize),
    E("cuModuleLoadDataEx", "cuModuleLoadDataEx", module_load_data_ex),
    E("cuModuleUnload", "cuModuleUnload", module_unload),
    E("cuModuleGetFunction", "cuModuleGetFunction", module_get_function),
    E("cuModuleGetGlobal", "cuModuleGetGlobal_v2", module_get_global),
    OPT("cuModuleGetFunctionCount", 12040, module_get_function_count),
    OPT("cuModuleEnumerateFunctions", 12040, module_enumerate_functions),
    OPT("cuFuncGetName", 12030, func_get_name),
    OPT("cuFuncGetParamInfo", 12040, func_get_param_info),
    OPT("cuStreamIsCapturing", 10000, stream_is_capturing),
    OPT("cuThreadExchangeStreamCaptureMode", 10010, thread_exchange_capture_mode),
    E("cuFuncGetAttribute", "cuFuncGetAttribute", func_get_attribute),
    E("cuFuncSetAttribute", "cuFuncSetAttribute", func_set_attribute),
    E("cuOccupancyMaxActiveBlocksPerMultiprocessor", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
      occupancy_max_active_blocks),
    E("cuMemAlloc", "cuMemAlloc_v2", mem_alloc),
    E("cuMemFree", "cuMemFree_v2", mem_free),
    E("cuMemHostAlloc", "cuMemHostAlloc", mem_host_alloc),
    E("cuMemFreeHost", "cuMemFreeHost", mem_free_host),
    E("cuMemcpyHtoD", "cuMemcpyHtoD_v2", memcpy_htod),
    E("cuMemcpyDtoH", "cuMemcpyDtoH_v2", memcpy_dtoh),
    E("cuMemcpyDtoD", "cuMemcpyDtoD_v2", memcpy_dtod),
    E("cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2", memcpy_htod_async),
    E("cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2", memcpy_dtoh_async),
    E("cuMemcpyDtoDAsync", "cuMemcpyDtoDAsync_v2", memcpy_dtod_async),
    E("cuMemsetD8", "cuMemsetD8_v2", memset_d8),
    E("cuMemsetD8Async", "cuMemsetD8Async", memset_d8_async),
    E("cuLaunchKernel", "cuLaunchKernel", launch_kernel),
    E("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", launch_cooperative_kernel),
    E("cuStreamCreate", "cuStreamCreate", stream_create),
    E("cuStreamDestroy", "cuStreamDestroy_v2", stream_destroy),
    E("cuStreamSynchronize", "cuStreamSynchronize", stream_synchronize),
    E("cuStreamGetCtx", "cuStreamGetCtx", stream_get_ctx),
    E("cuStreamWaitEvent", "cuStreamWaitEvent", stream_wait_event),
    E("cuEventCreate", "cuEventCreate", event_create),
    E("cuEventDestroy", "cuEventDestroy_v2", event_destroy),
    E("cuEventRecord", "cuEventRecord", event_record),
    E("cuEventSynchronize", "cuEventSynchronize", event_synchronize),
    E("cuEventElapsedTime", "cuEventElapsedTime", event_elapsed_time),
    E("cuGetErrorName", "cuGetErrorName", get_error_name),
    E("cuGetErrorString", "cuGetErrorString", get_error_string),
};
#undef E
#undef OPT

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
    /* FDLINK_PROBE_LIBS=1 (fdlink doctor): a driver that exits, crashes or hangs while loading
     * does so in a child first */
    static const char *const names[] = {"libcuda.so.1", NULL};
    if (fdl__lib_trial_wanted() &&
        (g_cuda.status = fdl__lib_trial("FDLINK_LIBCUDA", names, "the CUDA driver", err)) != FDL_OK)
        return;
    /* An explicit choice is the only candidate: falling back would hide the mistake. */
    fdl__lib_loading_set(path);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    fdl__lib_loading_set(NULL);
    if (!handle) {
        const char *why = dlerror();
        g_cuda.status = fdl__error(err, FDL_ENOLIB, NULL, 0, 0, path,
                                   "cannot load %s (the CUDA driver%s), needed to run device "
                                   "code: %s",
                                   path, path == override ? ", from FDLINK_LIBCUDA" : "",
                                   why ? why : "unknown reason");
        fdl__error_library(err, path);
        return;
    }
    void (*any)(void) = NULL;
    void *init_sym = dlsym(handle, "cuInit");
    memcpy(&any, &init_sym, sizeof any);
    fdl__library_of(any, g_cuda.path, sizeof g_cuda.path);
    fdl__cuda fn;
    memset(&fn, 0, sizeof fn);
    get_proc_address_fn gpa = NULL;
    void *sym = dlsym(handle, "cuGetProcAddress_v2");
    memcpy(&gpa, &sym, sizeof gpa); /* POSIX: dlsym's pointer can hold a function pointer */
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *p = NULL;
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        /* legacy-stream variants: the default stream is the legacy one, as with dlsym */
        if (gpa && (gpa(entries[i].name, &p, entries[i].version,
                        CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
                    found != CU_GET_PROC_ADDRESS_SUCCESS))
            p = NULL;
        /* drivers before 12.0, and the toolkit's stub, which answers nothing through it */
        if (!p)
            p = dlsym(handle, entries[i].symbol);
        if (!p && entries[i].optional)
            continue;
        if (!p) {
            g_cuda.status = fdl__error(err, FDL_ENOLIB, NULL, 0, 0, entries[i].name,
                                       "%s lacks %s, needed to run device code: not a CUDA "
                                       "driver, or one older than CUDA 12.0",
                                       path, entries[i].name);
            fdl__error_library(err, path);
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
    if (fn.driver_version < FDL__DRIVER_MIN_VERSION) {
        g_cuda.status = fdl__error(err, FDL_ENOLIB, NULL, 0, 0, path,
                                   "the CUDA driver %s is version %d.%d, but fdlink needs %d.%d "
                                   "or later (update the NVIDIA driver)",
                                   path, fn.driver_version / 1000, fn.driver_version % 1000 / 10,
                                   FDL__DRIVER_MIN_VERSION / 1000,
                                   FDL__DRIVER_MIN_VERSION % 1000 / 10);
        fdl__error_library(err, path);
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

int fdl_driver_version(int *version, fdl_error *err)
{
    if (!FDL__CHECK_ARG(version))
        return fdl__fail(err, FDL_EINVAL, "fdl_driver_version: version is NULL");
    *version = 0;
    const fdl__cuda *cu;
    int rc = fdl__cuda_get(&cu, err);
    if (rc != FDL_OK)
        return rc;
    *version = cu->driver_version;
    return FDL_OK;
}

void fdl__probe_driver(fdl__lib_probe *out)
{
    memset(out, 0, sizeof *out);
    out->major = out->minor = -1;
    const fdl__cuda *cu;
    out->status = fdl__cuda_get(&cu, &out->error);
    snprintf(out->path, sizeof out->path, "%s", g_cuda.path);
    if (out->status == FDL_OK) {
        out->major = cu->driver_version / 1000;
        out->minor = cu->driver_version % 1000 / 10;
    }
}
