/*
 * The CUDA driver, loaded at run time (internal to host/), and the handle structs shared by the
 * files of host/.
 */
#ifndef FDLINK_DRIVER_H
#define FDLINK_DRIVER_H

#include <stddef.h>

#include <cuda.h>

#include "fdlink/error.h"
#include "fdlink/host.h"

/*
 * Driver entry points, resolved through cuGetProcAddress (or dlsym of the names cuda.h maps to).
 * The members are not named after the functions: cuda.h #defines several of those names.
 */
typedef struct fdl__cuda {
    CUresult (*init)(unsigned int flags);
    CUresult (*driver_get_version)(int *version);
    CUresult (*device_get_count)(int *count);
    CUresult (*device_get)(CUdevice *device, int ordinal);
    CUresult (*device_get_name)(char *name, int len, CUdevice device);
    CUresult (*device_get_attribute)(int *value, CUdevice_attribute attrib, CUdevice device);
    CUresult (*primary_ctx_retain)(CUcontext *ctx, CUdevice device);
    CUresult (*primary_ctx_release)(CUdevice device);
    CUresult (*ctx_set_current)(CUcontext ctx);
    CUresult (*ctx_synchronize)(void);
    CUresult (*module_load_data_ex)(CUmodule *module, const void *image, unsigned int num_options,
                                    CUjit_option *options, void **values);
    CUresult (*module_unload)(CUmodule module);
    CUresult (*module_get_function)(CUfunction *fn, CUmodule module, const char *name);
    CUresult (*mem_alloc)(CUdeviceptr *ptr, size_t size);
    CUresult (*mem_free)(CUdeviceptr ptr);
    CUresult (*memcpy_htod)(CUdeviceptr dst, const void *src, size_t size);
    CUresult (*memcpy_dtoh)(void *dst, CUdeviceptr src, size_t size);
    CUresult (*memset_d8)(CUdeviceptr dst, unsigned char value, size_t count);
    CUresult (*launch_kernel)(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                              unsigned int bx, unsigned int by, unsigned int bz,
                              unsigned int shared_bytes, CUstream stream, void **params,
                              void **extra);
    CUresult (*get_error_name)(CUresult error, const char **name);
    CUresult (*get_error_string)(CUresult error, const char **text);
    int driver_version; /* cuDriverGetVersion, e.g. 13000 */
} fdl__cuda;

/*
 * The driver, loaded and initialised (cuInit) on first use: FDLINK_LIBCUDA (a path) when set,
 * and then nothing else; otherwise libcuda.so.1.
 * @return FDL_OK, FDL_ENOLIB (no driver library), FDL_ENODEVICE (cuInit says there is no device,
 *         or the library is the toolkit's stub), FDL_ECUDA; the same error every time once the
 *         first attempt failed
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

/* ---- handles ---------------------------------------------------------------------------- */

struct fdl_device {
    const fdl__cuda *cu;
    int ordinal;
    CUdevice device;
    CUcontext ctx; /* the retained primary context */
    int cc;
    char name[256];
    char arch[16];
    /* the kernel of the last launch, to name in reports of asynchronous errors */
    char last_kernel[FDL_ERROR_SYMBOL_MAX];
};

/* Make the device's context current on the calling thread. @return FDL_OK, FDL_ECUDA */
int fdl__device_enter(fdl_device *dev, fdl_error *err);

/* As fdl__cu_error, naming the device's last launched kernel for asynchronous errors. */
int fdl__device_error(fdl_error *err, const fdl_device *dev, CUresult r, const char *what);

#endif /* FDLINK_DRIVER_H */
