/*
 * The CUDA driver, loaded at run time (internal to host/), and the handle structs shared by the
 * files of host/.
 */
#ifndef FDLINK_DRIVER_H
#define FDLINK_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "fdlink/error.h"
#include "fdlink/host.h"
#include "image.h"

/* The oldest driver accepted (cuDriverGetVersion's encoding): CUDA 12.0. */
#define FDL__DRIVER_MIN_VERSION FDL_DRIVER_MIN_VERSION

/*
 * Driver entry points, resolved through cuGetProcAddress with the CUDA version each signature
 * below was written for (or dlsym of the names cuda.h maps to). The members are not named after
 * the functions: cuda.h #defines several of those names. Members marked optional are NULL where
 * the driver is older than the version given; every other one is always set.
 */
typedef struct fdl__cuda {
    CUresult (*init)(unsigned int flags);
    CUresult (*driver_get_version)(int *version);
    CUresult (*device_get_count)(int *count);
    CUresult (*device_get)(CUdevice *device, int ordinal);
    CUresult (*device_get_name)(char *name, int len, CUdevice device);
    CUresult (*device_get_attribute)(int *value, CUdevice_attribute attrib, CUdevice device);
    CUresult (*device_total_mem)(size_t *bytes, CUdevice device);
    CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice device);
    CUresult (*primary_ctx_release)(CUdevice device);
    CUresult (*ctx_set_current)(CUcontext ctx);
    CUresult (*ctx_synchronize)(void);
    CUresult (*module_load_data_ex)(CUmodule *module, const void *image, unsigned int num_options,
                                    CUjit_option *options, void **values);
    CUresult (*module_unload)(CUmodule module);
    CUresult (*module_get_function)(CUfunction *fn, CUmodule module, const char *name);
    CUresult (*module_get_global)(CUdeviceptr *ptr, size_t *bytes, CUmodule module,
                                  const char *name);
    CUresult (*module_get_function_count)(unsigned int *count, CUmodule module); /* optional 12.4 */
    CUresult (*module_enumerate_functions)(CUfunction *fns, unsigned int count,
                                           CUmodule module);                   /* optional 12.4 */
    CUresult (*func_get_name)(const char **name, CUfunction fn);               /* optional 12.3 */
    CUresult (*func_get_param_info)(CUfunction fn, size_t index, size_t *offset,
                                    size_t *size);                             /* optional 12.4 */
    CUresult (*stream_is_capturing)(CUstream stream,
                                    CUstreamCaptureStatus *status);            /* optional 10.0 */
    CUresult (*thread_exchange_capture_mode)(CUstreamCaptureMode *mode);      /* optional 10.1 */
    CUresult (*func_get_attribute)(int *value, CUfunction_attribute attrib, CUfunction fn);
    CUresult (*func_set_attribute)(CUfunction fn, CUfunction_attribute attrib, int value);
    CUresult (*occupancy_max_active_blocks)(int *blocks, CUfunction fn, int block_size,
                                            size_t dynamic_shared);
    CUresult (*mem_alloc)(CUdeviceptr *ptr, size_t size);
    CUresult (*mem_free)(CUdeviceptr ptr);
    CUresult (*mem_host_alloc)(void **ptr, size_t size, unsigned int flags);
    CUresult (*mem_free_host)(void *ptr);
    CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t size);
    CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t size);
    CUresult (*memcpy_dtod)(CUdeviceptr dst, CUdeviceptr src, size_t size);
    CUresult (*memcpy_htod_async)(CUdeviceptr dst, const void *src, size_t size, CUstream s);
    CUresult (*memcpy_dtoh_async)(void *dst, CUdeviceptr src, size_t size, CUstream s);
    CUresult (*memcpy_dtod_async)(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream s);
    CUresult (*memset_d8)(CUdeviceptr dst, unsigned char value, size_t count);
    CUresult (*memset_d8_async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream s);
    CUresult (*launch_kernel)(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                              unsigned int bx, unsigned int by, unsigned int bz,
                              unsigned int shared_bytes, CUstream stream, void **params,
                              void **extra);
    CUresult (*launch_cooperative_kernel)(CUfunction fn, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by,
                                          unsigned int bz, unsigned int shared_bytes,
                                          CUstream stream, void **params);
    CUresult (*stream_create)(CUstream *stream, unsigned int flags);
    CUresult (*stream_destroy)(CUstream stream);
    CUresult (*stream_synchronize)(CUstream stream);
    CUresult (*stream_get_ctx)(CUstream stream, CUcontext *ctx);
    CUresult (*stream_wait_event)(CUstream stream, CUevent event, unsigned int flags);
    CUresult (*event_create)(CUevent *event, unsigned int flags);
    CUresult (*event_destroy)(CUevent event);
    CUresult (*event_record)(CUevent event, CUstream stream);
    CUresult (*event_synchronize)(CUevent event);
    CUresult (*event_elapsed_time)(float *ms, CUevent start, CUevent end);
    CUresult (*get_error_name)(CUresult error, const char **name);
    CUresult (*get_error_string)(CUresult error, const char **text);
    int driver_version; /* cuDriverGetVersion, e.g. 13000 */
} fdl__cuda;

/*
 * The driver, loaded and initialised (cuInit) on first use: FDLINK_LIBCUDA (a path) when set,
 * and then nothing else; otherwise libcuda.so.1. Its version is checked against
 * FDL__DRIVER_MIN_VERSION.
 * @return FDL_OK, FDL_ENOLIB (no driver library, not a driver, or one too old), FDL_ENODEVICE
 *         (cuInit says there is no device, or the library is the toolkit's stub), FDL_ECUDA; the
 *         same error every time once the first attempt failed
 * Ownership: *out is static and read-only. Thread-safety: safe.
 */
int fdl__cuda_get(const fdl__cuda **out, fdl_error *err);

/* Name and description of a CUresult; never NULL, also where the driver cannot say. */
const char *fdl__cu_name(const fdl__cuda *cu, CUresult r);
const char *fdl__cu_string(const fdl__cuda *cu, CUresult r);

/* Non-zero for the errors of asynchronous work that poison the context (illegal address, ...). */
int fdl__cu_is_async(CUresult r);

/*
 * FDL_ECUDA for a failed driver call: `<what> failed: NAME (description)`, err->backend_code = r.
 * An error left by earlier asynchronous work is reported as `an earlier launch failed: NAME
 * (description); the last kernel launched was 'k'` (symbol k) when @p last_kernel is known.
 */
int fdl__cu_error(fdl_error *err, const fdl__cuda *cu, CUresult r, const char *what,
                  const char *last_kernel);

/* ---- ownership ------------------------------------------------------------------------------ */

/*
 * Every object made from a device (module, buffer, host buffer, stream, event) or from a module
 * (prepared launch) starts with this link, so that its owner can free it if the user does not.
 */
typedef enum fdl__kind {
    FDL__MODULE = 1,
    FDL__BUFFER,
    FDL__HOST_BUFFER,
    FDL__STREAM,
    FDL__EVENT,
    FDL__LAUNCH
} fdl__kind;

typedef struct fdl__child {
    struct fdl__child *prev, *next;
    fdl__kind kind;
    void (*destroy)(struct fdl__child *self); /* calls the object's public destroyer */
} fdl__child;

/* A list of children, newest first. */
typedef struct fdl__children {
    fdl__child *head;
} fdl__children;

void fdl__children_add(fdl__children *list, fdl__child *c, fdl__kind kind,
                       void (*destroy)(fdl__child *));
void fdl__children_remove(fdl__children *list, fdl__child *c);
/* Destroy every child, newest first (each destroyer removes its child from the list). */
void fdl__children_destroy(fdl__children *list);

/* ---- handles ---------------------------------------------------------------------------- */

struct fdl_device {
    const fdl__cuda *cu;
    CUdevice device;
    CUcontext ctx; /* the retained primary context */
    fdl_device_info info;
    fdl__children children; /* modules, buffers, host buffers, streams, events */
    /* buffers destroyed while a stream of the device was being captured into a CUDA graph: their
     * memory is kept, and freed at the next point outside a capture (fdl__device_flush_deferred) */
    fdl__children deferred;
    /* the kernel of the last launch, to name in reports of asynchronous errors */
    const fdl_kernel *last_kernel;
    char last_kernel_name[FDL_ERROR_SYMBOL_MAX]; /* its name, kept once its module is gone */
};

struct fdl_kernel {
    fdl_module *mod;
    CUfunction fn;
    char *name;
    fdl_kernel_attrs attrs;
    size_t *param_offsets; /* attrs.nparams of each when attrs.params_known */
    size_t *param_sizes;
};

struct fdl_module {
    fdl__child child; /* first: owned by the device */
    fdl_device *dev;
    CUcontext ctx; /* the context it is loaded in */
    CUmodule mod;
    char *name;
    char *info_log;  /* JIT_LOG_SIZE bytes, NUL-terminated */
    char *error_log; /* JIT_LOG_SIZE bytes, NUL-terminated */
    fdl_kernel **kernels; /* looked up so far */
    size_t nkernels;
    size_t cap;
    char **defined; /* names of the kernels it defines, sorted; ndefined of them */
    size_t ndefined;
    int defined_known;
    fdl__kparams params; /* parameter counts of its kernels, from the image */
    fdl__children prepared; /* its prepared launches */
    /* the device status record (fdlink/device.h), 0 when the module has none */
    CUdeviceptr status;
    /* launches of its kernels since the status record was last read, and the last of them */
    unsigned long long launches;
    const fdl_kernel *last_kernel;
};

struct fdl_stream {
    fdl__child child;
    fdl_device *dev;
    CUstream stream;
    int owned; /* 0: wrapped (fdl_stream_wrap); the CUstream is not destroyed with it */
};

/* Make the device's context current on the calling thread. @return FDL_OK, FDL_ECUDA */
int fdl__device_enter(fdl_device *dev, fdl_error *err);

/* As fdl__cu_error, naming the device's last launched kernel for asynchronous errors. */
int fdl__device_error(fdl_error *err, const fdl_device *dev, CUresult r, const char *what);

/*
 * Refuse what would wait for the device (@p what, e.g. "a synchronous launch of kernel 'k'")
 * while @p stream is being captured into a CUDA graph: waiting would invalidate the capture.
 * FDL_OK when it is not (or the driver cannot tell: no cuStreamIsCapturing), else FDL_EINVAL:
 * `a synchronous launch of kernel 'k' in stream 0x..., which is being captured into a CUDA
 * graph: waiting would invalidate the capture (launch without waiting, and check statuses after
 * a replay)`, err->symbol @p symbol.
 */
int fdl__refuse_in_capture(const fdl_device *dev, CUstream stream, const char *what,
                           const char *symbol, fdl_error *err);

/*
 * Whether a stream of @p dev is being captured into a CUDA graph, as far as the driver can tell
 * fdlink: the legacy default stream (it answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while any
 * stream that synchronises with it is captured, fdlink's own streams included), the per-thread
 * default stream, and every stream of the device (created or wrapped, fdl_stream_wrap). 1 (the
 * stream in *which when not NULL) or 0; 0 where the driver has no cuStreamIsCapturing. The
 * device's context must be current.
 */
int fdl__device_capturing(const fdl_device *dev, CUstream *which);

/*
 * Free the buffers whose release was deferred by a capture (fdl_buffer_destroy); the caller
 * knows that no capture is under way (or the device goes). The context must be current.
 */
void fdl__device_flush_deferred(fdl_device *dev);

/* Name of the device's last launched kernel ("" when none). */
const char *fdl__device_last_kernel(const fdl_device *dev);

/* Note that @p k was launched (for reports of asynchronous errors and device status). */
static inline void fdl__note_launch(fdl_kernel *k)
{
    fdl_module *mod = k->mod;
    mod->dev->last_kernel = k;
    mod->last_kernel = k;
    mod->launches++;
}

/*
 * The stream handle for @p stream (NULL: the legacy default stream), checked to belong to the
 * context of @p dev; @p what names the operation in the message.
 * @return FDL_OK, FDL_EINVAL
 */
int fdl__stream_of(CUstream *out, const fdl_stream *stream, const fdl_device *dev,
                   const char *what, fdl_error *err);

/*
 * Queue a copy of @p size bytes of device memory from @p src to @p dst (any addresses of the
 * device's context, fdlink's buffers or another library's) in @p stream (NULL: the default
 * stream); @p what names the caller in messages. Nothing is checked beyond the stream's device
 * and non-zero addresses. @return FDL_OK, FDL_EINVAL, FDL_ECUDA
 */
int fdl__copy_async(fdl_device *dev, uint64_t dst, uint64_t src, size_t size, fdl_stream *stream,
                    const char *what, fdl_error *err);

/*
 * Find the module's device status record (cuModuleGetGlobal of FDL__STATUS_SYMBOL) and remember
 * it. @return FDL_OK (also when it has none), FDL_EINVAL (a record of the wrong size), FDL_ECUDA
 */
int fdl__status_attach(fdl_module *mod, const void *image, size_t size, fdl_error *err);

/* The driver's handle of a kernel (for the launch benchmark's raw baseline). */
CUfunction fdl__kernel_function(const fdl_kernel *kernel);

#endif /* FDLINK_DRIVER_H */
