/**
 * @file fdlink/host.h
 * Host runtime: the CUDA driver (libcuda.so.1, loaded at run time the first time it is needed),
 * devices and their primary contexts, modules, kernels, device buffers and launches.
 *
 * Threads: a device handle retains its device's primary context. Any thread may use a device and
 * the modules, buffers and kernels created from it, one thread at a time per handle: each call
 * makes the device's context current on the calling thread first. Handles may move between
 * threads. Distinct devices may be used concurrently.
 */
#ifndef FDLINK_HOST_H
#define FDLINK_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A device with its primary context retained. Opaque. */
typedef struct fdl_device fdl_device;
/** A loaded module. Opaque. */
typedef struct fdl_module fdl_module;
/** A kernel of a module, borrowed from it. Opaque. */
typedef struct fdl_kernel fdl_kernel;
/** A device memory allocation. Opaque. */
typedef struct fdl_buffer fdl_buffer;

/** Grid or block dimensions. */
typedef struct fdl_dim3 {
    unsigned x, y, z;
} fdl_dim3;

/**
 * Load the driver if needed, initialise it and count the devices.
 * @return FDL_OK, FDL_ENOLIB (libcuda.so.1 missing: no driver installed), FDL_ENODEVICE (driver
 *         present but no usable device; the message says which), FDL_ECUDA
 * Thread-safety: safe.
 */
FDL_API int fdl_device_count(int *count, fdl_error *err);

/**
 * Open a device and retain its primary context.
 * @param ordinal device index; -1 for the FDLINK_DEVICE environment variable, else device 0
 * @return FDL_OK, FDL_ENOLIB, FDL_ENODEVICE (no device, or @p ordinal out of range), FDL_ECUDA,
 *         FDL_ENOMEM
 * Ownership: *out is the caller's; fdl_device_destroy releases the context. Destroy modules and
 * buffers of a device before the device.
 */
FDL_API int fdl_device_open(fdl_device **out, int ordinal, fdl_error *err);

/** Release the primary context and free the handle. NULL is allowed. */
FDL_API void fdl_device_destroy(fdl_device *dev);

/** Device name ("NVIDIA H100 80GB HBM3"). Borrowed. */
FDL_API const char *fdl_device_name(const fdl_device *dev);
/** Architecture as a link target ("sm_90"). Borrowed. */
FDL_API const char *fdl_device_arch(const fdl_device *dev);
/** Compute capability, e.g. 90 for 9.0. */
FDL_API int fdl_device_cc(const fdl_device *dev);
/** Driver version as reported by cuDriverGetVersion (13000 for 13.0). */
FDL_API int fdl_device_driver_version(const fdl_device *dev);

/**
 * Wait for all work on the device to finish. An error from earlier asynchronous work is reported
 * as such ("an earlier launch failed: ...").
 * @return FDL_OK, FDL_ECUDA
 */
FDL_API int fdl_device_synchronize(fdl_device *dev, fdl_error *err);

/**
 * Load a module from an image in memory (cubin, fatbin or NUL-terminated PTX). The image is only
 * read during the call. @p name is used in diagnostics.
 * @return FDL_OK, FDL_ECUDA (the message quotes the driver's JIT log when it has one), FDL_ENOMEM,
 *         FDL_EINVAL
 * Ownership: *out is the caller's; free with fdl_module_destroy before its device.
 */
FDL_API int fdl_module_load_data(fdl_module **out, fdl_device *dev, const void *image,
                                 size_t size, const char *name, fdl_error *err);

/** Load a module from a file. As fdl_module_load_data, plus FDL_EIO. */
FDL_API int fdl_module_load_file(fdl_module **out, fdl_device *dev, const char *path,
                                 fdl_error *err);

/**
 * The driver's JIT info log of the load ("" when empty; PTX images and cubins that need no JIT
 * say little). Ownership: borrowed; valid until the module is destroyed.
 */
FDL_API const char *fdl_module_info_log(const fdl_module *mod);

/** Unload a module. NULL is allowed. Kernels from it become invalid. */
FDL_API void fdl_module_destroy(fdl_module *mod);

/**
 * Look up a kernel by name.
 * @return FDL_OK, FDL_ENOTFOUND (the message names the module), FDL_ECUDA, FDL_ENOMEM
 * Ownership: *out is borrowed from the module and valid until it is destroyed.
 */
FDL_API int fdl_module_get_kernel(fdl_kernel **out, fdl_module *mod, const char *name,
                                  fdl_error *err);

/** Name of a kernel. Borrowed. */
FDL_API const char *fdl_kernel_name(const fdl_kernel *kernel);

/**
 * Launch a kernel on the default stream. @p args holds @p nargs pointers to the argument values,
 * as for cuLaunchKernel.
 * @return FDL_OK, FDL_EINVAL (zero dimension), FDL_ECUDA (the message names the kernel)
 */
FDL_API int fdl_kernel_launch(fdl_kernel *kernel, fdl_dim3 grid, fdl_dim3 block,
                              unsigned shared_bytes, void **args, size_t nargs, fdl_error *err);

/**
 * Allocate @p size bytes of device memory (contents undefined).
 * @return FDL_OK, FDL_ECUDA (out of device memory), FDL_ENOMEM, FDL_EINVAL
 * Ownership: *out is the caller's; free with fdl_buffer_destroy before its device.
 */
FDL_API int fdl_buffer_create(fdl_buffer **out, fdl_device *dev, size_t size, fdl_error *err);

/** Free a buffer. NULL is allowed. */
FDL_API void fdl_buffer_destroy(fdl_buffer *buf);

/** Device address of the buffer, for use as a kernel argument. */
FDL_API uint64_t fdl_buffer_address(const fdl_buffer *buf);
/** Size in bytes. */
FDL_API size_t fdl_buffer_size(const fdl_buffer *buf);

/**
 * Copy @p size bytes from host memory into the buffer at @p offset (synchronous).
 * @return FDL_OK, FDL_EINVAL (range outside the buffer: the message gives both), FDL_ECUDA
 */
FDL_API int fdl_buffer_write(fdl_buffer *buf, size_t offset, const void *src, size_t size,
                             fdl_error *err);

/** Copy @p size bytes from the buffer at @p offset to host memory (synchronous). As write. */
FDL_API int fdl_buffer_read(const fdl_buffer *buf, size_t offset, void *dst, size_t size,
                            fdl_error *err);

/** Set every byte of the buffer to zero (synchronous). @return FDL_OK, FDL_ECUDA */
FDL_API int fdl_buffer_zero(fdl_buffer *buf, fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_HOST_H */
