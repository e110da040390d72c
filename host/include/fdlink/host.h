/**
 * @file fdlink/host.h
 * Host runtime: the CUDA driver (libcuda.so.1, loaded at run time the first time it is needed),
 * devices and their primary contexts, modules, kernels, checked and prepared launches, streams,
 * events, device and page-locked host buffers, and the device-side status record of
 * fdlink/device.h. Verification of results is in fdlink/verify.h.
 *
 * Ownership: a device owns everything made from it. Modules (with their kernels and prepared
 * launches), buffers, host buffers, streams and events each have a destroyer; whatever is still
 * alive when its device is destroyed is destroyed with it, so forgetting one leaks nothing. A
 * module likewise destroys the prepared launches of its kernels.
 *
 * Threads: a device handle retains its device's primary context. A device and everything made
 * from it form one family, used by one thread at a time; the family may move between threads.
 * Every call that touches the GPU first makes the family's context current on the calling thread
 * (and leaves it current). Distinct device handles, even of the same GPU, may be used from
 * different threads at once. fdl_device_count and fdl_driver_version are safe from any thread.
 *
 * Several GPUs: one link serves them all. Link once (fdlink/link.h) and take the cubin
 * (fdl_link_cubin: its bytes never change after, so any number of threads may read them at once
 * while the link lives); give each GPU's thread a device handle of its own (fdl_device_open with
 * the GPU's ordinal, in that thread or handed to it), and there load the same image
 * (fdl_module_load_data) and launch: the handles are distinct families, so the threads share
 * nothing and need no locking. A cubin runs only on GPUs of its architecture: on a host of mixed
 * GPUs link once per architecture (fdl_device_arch), or load a fatbin or PTX. examples/multi_gpu
 * does this on every GPU of a host.
 *
 * ctest: fdl_device_open(-1) opens the GPU that ctest assigned to the test
 * (CTEST_RESOURCE_GROUP_* variables, set when ctest runs with --resource-spec-file and the test
 * has RESOURCE_GROUPS gpus:N, as fdlink_add_test(... GPU) gives it), else FDLINK_DEVICE, else
 * device 0. fdl_device_ctest_resource_spec writes the spec for the GPUs present.
 */
#ifndef FDLINK_HOST_H
#define FDLINK_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/error.h"
#include "fdlink/ptx.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Thread-safety of every handle type below: that of its device's family (see the file comment):
 * one thread at a time for a device and everything made from it; may move between threads.
 */

/** A device with its primary context retained. Opaque. */
typedef struct fdl_device fdl_device;
/** A loaded module; belongs to a device. Opaque. */
typedef struct fdl_module fdl_module;
/** A kernel of a module, borrowed from it. Opaque. */
typedef struct fdl_kernel fdl_kernel;
/** A device memory allocation; belongs to a device. Opaque. */
typedef struct fdl_buffer fdl_buffer;
/** Page-locked (pinned) host memory, for fast and asynchronous copies; belongs to a device. */
typedef struct fdl_host_buffer fdl_host_buffer;
/** A stream of device work; belongs to a device. Opaque. */
typedef struct fdl_stream fdl_stream;
/** An event in a stream, for timing and waiting; belongs to a device. Opaque. */
typedef struct fdl_event fdl_event;
/**
 * A prepared launch: a kernel, its geometry, its stream and copies of its argument values,
 * checked once; belongs to the kernel's module. Opaque.
 */
typedef struct fdl_launch fdl_launch;

/** Grid or block dimensions. A plain value. */
typedef struct fdl_dim3 {
    unsigned x, y, z;
} fdl_dim3;

/* ---- driver ------------------------------------------------------------------------------ */

/** The oldest CUDA driver fdlink accepts, as cuDriverGetVersion encodes it (12.0). */
#define FDL_DRIVER_MIN_VERSION 12000

/**
 * Load the driver if needed and report its version (cuDriverGetVersion: 12040 for CUDA 12.4).
 * A driver older than FDL_DRIVER_MIN_VERSION is refused when it is loaded.
 * @return FDL_OK, FDL_ENOLIB (no driver library, or one too old: the message gives both
 *         versions), FDL_ENODEVICE (the library is the toolkit's stub, or there is no device),
 *         FDL_ECUDA, FDL_EINVAL (NULL @p version)
 * Thread-safety: safe.
 */
FDL_API int fdl_driver_version(int *version, fdl_error *err);

/* ---- devices ----------------------------------------------------------------------------- */

/**
 * Load the driver if needed, initialise it and count the devices.
 * @return FDL_OK, FDL_ENOLIB (libcuda.so.1 missing: no driver installed), FDL_ENODEVICE (driver
 *         present but no usable device; the message says which), FDL_ECUDA
 * Thread-safety: safe.
 */
FDL_API int fdl_device_count(int *count, fdl_error *err);

/**
 * Open a device and retain its primary context, and make that context current on the calling
 * thread (code that calls the driver directly afterwards, such as the cuLink backend of
 * fdlink/link.h, relies on that).
 * @param ordinal device index; -1 for the device fdl_device_default_ordinal names: the GPU ctest
 *        assigned, else FDLINK_DEVICE, else device 0
 * @return FDL_OK, FDL_ENOLIB, FDL_ENODEVICE (no device, or @p ordinal out of range),
 *         FDL_EINVAL (@p ordinal below -1, or malformed variables: see
 *         fdl_device_default_ordinal), FDL_ECUDA, FDL_ENOMEM
 * Ownership: *out is the caller's; fdl_device_destroy releases the context.
 * Thread-safety: safe; the new handle starts a family of its own (see the file comment).
 */
FDL_API int fdl_device_open(fdl_device **out, int ordinal, fdl_error *err);

/**
 * The device that fdl_device_open(-1) opens, read from the environment without loading the
 * driver (so the number is not checked against the devices present):
 * 1. the GPU ctest assigned: when CTEST_RESOURCE_GROUP_COUNT is set, the first group whose
 *    CTEST_RESOURCE_GROUP_<i> lists `gpus`, and the first entry of its
 *    CTEST_RESOURCE_GROUP_<i>_GPUS (`id:1,slots:1`: the id is the device's ordinal, as the spec
 *    of fdl_device_ctest_resource_spec gives it); groups without gpus are passed over;
 * 2. else FDLINK_DEVICE (a device number);
 * 3. else 0.
 * @return FDL_OK, FDL_EINVAL (NULL @p ordinal; CTEST_RESOURCE_GROUP_COUNT not a number, a group
 *         variable missing, an entry that is not `id:N,slots:M` with N a number, e.g.
 *         `CTEST_RESOURCE_GROUP_0_GPUS='id:gpu0,slots:1' does not name a device: ...`;
 *         FDLINK_DEVICE not a number); *ordinal is -1 on failure
 * Thread-safety: safe, as getenv is (no thread may change the environment meanwhile).
 */
FDL_API int fdl_device_default_ordinal(int *ordinal, fdl_error *err);

/** The most slots a GPU may have in a ctest resource spec written by fdlink. */
#define FDL_RESOURCE_SLOTS_MAX 1024

/**
 * Write a ctest resource specification (ctest --resource-spec-file) for the GPUs present: one
 * resource type `gpus` whose ids are the device ordinals ("0", "1", ...), each with @p slots
 * slots, so that `ctest -j N --resource-spec-file F` runs tests that ask for `gpus:1` one per
 * slot of each GPU. Without a driver or a device the spec is still valid, and lists no GPUs
 * (*ngpus is 0; fdl_device_count says why).
 * @param out   not NULL; receives the JSON text, NUL-terminated
 * @param len   may be NULL; receives its length
 * @param ngpus may be NULL; receives the number of GPUs listed
 * @param slots slots per GPU, 1 to FDL_RESOURCE_SLOTS_MAX
 * @return FDL_OK, FDL_EINVAL (NULL @p out, @p slots out of range), FDL_ECUDA (the driver failed
 *         otherwise than by having no device), FDL_ENOMEM
 * Ownership: *out is the caller's; free() it.
 * Thread-safety: safe.
 */
FDL_API int fdl_device_ctest_resource_spec(char **out, size_t *len, int *ngpus, unsigned slots,
                                           fdl_error *err);

/**
 * Destroy everything still alive that was made from the device (modules with their kernels and
 * prepared launches, buffers, host buffers, streams, events; pointers to them become invalid),
 * then release the primary context and free the handle. Waits for the device's work first.
 * NULL is allowed.
 */
FDL_API void fdl_device_destroy(fdl_device *dev);

/** Device name ("NVIDIA H100 80GB HBM3"); "" for NULL. Borrowed. */
FDL_API const char *fdl_device_name(const fdl_device *dev);
/** Architecture as a link target ("sm_90"); "" for NULL. Borrowed. */
FDL_API const char *fdl_device_arch(const fdl_device *dev);
/** Compute capability, e.g. 90 for 9.0; 0 for NULL. */
FDL_API int fdl_device_cc(const fdl_device *dev);
/** Driver version as reported by cuDriverGetVersion (13000 for 13.0); 0 for NULL. */
FDL_API int fdl_device_driver_version(const fdl_device *dev);
/** The device's ordinal; -1 for NULL. */
FDL_API int fdl_device_ordinal(const fdl_device *dev);
/** Total device memory in bytes; 0 for NULL. */
FDL_API size_t fdl_device_total_memory(const fdl_device *dev);
/** Number of streaming multiprocessors; 0 for NULL. */
FDL_API int fdl_device_sm_count(const fdl_device *dev);

/** What a device is and what it allows, read once when it is opened. */
typedef struct fdl_device_info {
    int ordinal;                      /**< index among the driver's devices */
    char name[256];                   /**< "NVIDIA H100 80GB HBM3" */
    char arch[16];                    /**< "sm_90" */
    int cc;                           /**< compute capability, 90 for 9.0 */
    int driver_version;               /**< cuDriverGetVersion, 13000 for 13.0 */
    size_t total_memory;              /**< bytes */
    int sm_count;                     /**< streaming multiprocessors */
    int warp_size;
    unsigned max_threads_per_block;   /**< for any kernel; a kernel may allow fewer */
    fdl_dim3 max_block;               /**< per-dimension block limits */
    fdl_dim3 max_grid;                /**< per-dimension grid limits */
    size_t max_shared_per_block;      /**< static + dynamic shared memory without opting in */
    size_t max_shared_per_block_optin; /**< the most a kernel may opt in to */
    int cooperative_launch;           /**< non-zero when cooperative launches are supported */
} fdl_device_info;

/**
 * Copy the device's description into @p out.
 * @return FDL_OK, FDL_EINVAL (NULL argument)
 * Thread-safety: the device's family rule; the description never changes.
 */
FDL_API int fdl_device_get_info(const fdl_device *dev, fdl_device_info *out, fdl_error *err);

/**
 * Wait for all work on the device to finish, then read and clear the device status record of
 * each of its modules that has one (fdlink/device.h); the first failure found is returned.
 * An error from earlier asynchronous work is reported as such ("an earlier launch failed: ...;
 * the last kernel launched was 'k'"). While a stream of the device is being captured into a CUDA
 * graph (as fdl_buffer_destroy tells), waiting would invalidate the capture: refused with
 * FDL_EINVAL (`fdl_device_synchronize: stream 0x... of device 0 is being captured into a CUDA
 * graph: ...`) before anything waits.
 * @return FDL_OK, FDL_ECUDA, FDL_EDEVICE (a device function returned a non-zero status: see
 *         fdl_module_check_status for the message), FDL_EINVAL
 */
FDL_API int fdl_device_synchronize(fdl_device *dev, fdl_error *err);

/* ---- modules ----------------------------------------------------------------------------- */

/**
 * Load a module from an image in memory: a cubin, a fatbin or PTX text (the driver compiles PTX
 * for the device; its logs are kept). The image is only read during the call, never past
 * @p size bytes (a truncated cubin or fatbin is refused; PTX need not be NUL-terminated).
 * @p name is used in diagnostics. The module belongs to the device's current context.
 * @return FDL_OK, FDL_ECUDA (the message quotes the first line of the driver's JIT error log
 *         when it has one), FDL_ENOMEM, FDL_EINVAL (NULL argument, empty or truncated image,
 *         a device status record of another layout)
 * Ownership: *out is the caller's; free with fdl_module_destroy (or its device frees it).
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

/** The name given when the module was loaded (a path for files); "" for NULL. Borrowed. */
FDL_API const char *fdl_module_name(const fdl_module *mod);

/** The device the module was loaded on; NULL for NULL. Borrowed. */
FDL_API fdl_device *fdl_module_device(const fdl_module *mod);

/**
 * Number of kernels the module defines, as the driver enumerates them (CUDA 12.4 and later) or,
 * on older drivers, as read from a cubin's symbol table or PTX's `.entry` directives; 0 for a
 * fatbin on an older driver, and for NULL.
 */
FDL_API size_t fdl_module_kernel_count(const fdl_module *mod);

/** Name of kernel @p index (sorted by name); NULL when out of range. Borrowed from the module. */
FDL_API const char *fdl_module_kernel_name(const fdl_module *mod, size_t index);

/**
 * Unload a module, destroying its kernels and their prepared launches. NULL is allowed.
 */
FDL_API void fdl_module_destroy(fdl_module *mod);

/**
 * Read the value of the module's global variable @p name (a `__device__` variable, e.g. a device
 * function pointer stored for the host to pass to a kernel, as cudaMemcpyFromSymbol does): its
 * @p size bytes into @p out, which must be its whole size.
 * @param global_size  (may be NULL) receives the global's size, also when it is not @p size
 * @return FDL_OK, FDL_ENOTFOUND (`global 'fp' not found in module m.cubin`), FDL_EINVAL (NULL
 *         argument, or `global 'fp' of module m.cubin has 8 bytes, not 4`), FDL_ECUDA
 * Ownership: nothing kept. Thread-safety: as the module.
 */
FDL_API int fdl_module_read_global(fdl_module *mod, const char *name, void *out, size_t size,
                                   size_t *global_size, fdl_error *err);

/**
 * Look up a kernel by name.
 * @return FDL_OK, FDL_ENOTFOUND (the message names the module and lists the kernels it defines:
 *         `kernel 'k' not found in module m.cubin, which defines 2 kernels: a, b`), FDL_ECUDA,
 *         FDL_ENOMEM, FDL_EINVAL
 * Ownership: *out is borrowed from the module and valid until it is destroyed.
 */
FDL_API int fdl_module_get_kernel(fdl_kernel **out, fdl_module *mod, const char *name,
                                  fdl_error *err);

/* ---- device-side status (fdlink/device.h) --------------------------------------------------- */

/** Longest device function name a status record keeps, with its NUL. */
#define FDL_DEVICE_STATUS_NAME_MAX 64

/** The first failure recorded by FDL_CALL in a module since the record was last read. */
typedef struct fdl_device_status {
    int status;                               /**< the non-zero status; 0: no failure */
    char function[FDL_DEVICE_STATUS_NAME_MAX]; /**< the device function that returned it */
    unsigned line;                            /**< source line of the FDL_CALL */
    fdl_dim3 block;                           /**< blockIdx of the failing thread */
    fdl_dim3 thread;                          /**< threadIdx of the failing thread */
    unsigned long long failures;              /**< failed calls in all since the last read */
} fdl_device_status;

/** Non-zero when the module defines the device status record of fdlink/device.h. */
FDL_API int fdl_module_has_status(const fdl_module *mod);

/**
 * Wait for the device's work, then read and clear the module's status record. @p out->status is
 * 0 when no call failed (or the module has no record).
 * @return FDL_OK, FDL_ECUDA (including an earlier launch that failed), FDL_EINVAL
 */
FDL_API int fdl_module_read_status(fdl_module *mod, fdl_device_status *out, fdl_error *err);

/**
 * As fdl_module_read_status, turning a recorded failure into an error: `device function
 * safe_sqrt returned status 1 at block (3,0,0) thread (17,0,0)`, followed by ` in kernel 'k'`
 * when exactly one launch of the module's kernels ran since the last read, and by
 * ` (first of N failures)` when more than one call failed. err->symbol is the function,
 * err->backend_code the status.
 * @return FDL_OK, FDL_EDEVICE, FDL_ECUDA, FDL_EINVAL
 */
FDL_API int fdl_module_check_status(fdl_module *mod, fdl_error *err);

/* ---- kernels ----------------------------------------------------------------------------- */

/** Name of a kernel; "" for NULL. Borrowed. */
FDL_API const char *fdl_kernel_name(const fdl_kernel *kernel);

/** The module a kernel belongs to; NULL for NULL. Borrowed. */
FDL_API fdl_module *fdl_kernel_module(const fdl_kernel *kernel);

/** What the driver says about a kernel, read when it is looked up. */
typedef struct fdl_kernel_attrs {
    int registers;                /**< registers per thread */
    size_t static_shared;         /**< bytes of statically allocated shared memory */
    size_t local;                 /**< bytes of local memory per thread */
    size_t constant;              /**< bytes of user constant memory */
    unsigned max_threads_per_block; /**< the most threads a block of this kernel may have */
    size_t max_dynamic_shared;    /**< dynamic shared memory a launch may ask for now */
    int ptx_version;              /**< virtual architecture of its PTX, 75 for compute_75 */
    int binary_version;           /**< SASS version, e.g. 90 */
    int params_known;             /**< non-zero when the driver reports parameters (12.4+) */
    size_t nparams;               /**< number of parameters, when params_known */
    /**
     * Non-zero when the cubin lists cooperative-groups instructions of the kernel
     * (EIATTR_COOP_GROUP_INSTR_OFFSETS): a grid sync (which needs a cooperative launch), or
     * block and tile groups (which do not). Such a kernel is launched cooperatively whenever its
     * grid fits on the device at once, unless FDL_LAUNCH_NOT_COOPERATIVE; 0 for PTX modules.
     */
    int cooperative_groups;
} fdl_kernel_attrs;

/**
 * Copy the kernel's attributes into @p out.
 * @return FDL_OK, FDL_EINVAL (NULL argument)
 */
FDL_API int fdl_kernel_get_attrs(const fdl_kernel *kernel, fdl_kernel_attrs *out,
                                 fdl_error *err);

/**
 * Offset and size in bytes of parameter @p index in the kernel's parameter block (from
 * cuFuncGetParamInfo). @p offset or @p size may be NULL.
 * @return FDL_OK, FDL_ENOTFOUND (the driver, older than CUDA 12.4, cannot say), FDL_EINVAL
 *         (@p index out of range: the message gives the count)
 */
FDL_API int fdl_kernel_param(const fdl_kernel *kernel, size_t index, size_t *offset,
                             size_t *size, fdl_error *err);

/**
 * The sizes in bytes of all the kernel's parameters at once (as fdl_kernel_param gives them one
 * by one), for callers that pack arguments themselves (a binding's launch fast path).
 * @param count (may be NULL) receives the number of parameters; 0 when they are unknown
 * @return the sizes, @p count of them; NULL when @p kernel is NULL or the driver (older than
 *         CUDA 12.4) cannot report parameters (fdl_kernel_attrs.params_known is 0); a kernel
 *         without parameters gives a non-NULL pointer and a count of 0
 * Ownership: borrowed from the kernel; valid until its module is destroyed.
 * Thread-safety: immutable after the kernel is looked up; any thread may read it while the
 * module lives.
 */
FDL_API const size_t *fdl_kernel_param_sizes(const fdl_kernel *kernel, size_t *count);

/**
 * The parameters of kernel @p name as a code image says them, without a GPU: a cubin's .nv.info
 * (EIATTR_KPARAM_INFO: their count and each one's size), a fatbin's first cubin that lists the
 * kernel, or PTX (the count). For checking arguments before anything is loaded (fdlink run).
 * @param count receives the number of parameters (not NULL)
 * @param sizes NULL, or room for @p max sizes: receives min(*count, max) sizes in bytes, 0 for
 *              each that the image does not say
 * @return FDL_OK, FDL_ENOTFOUND (the image lists no such kernel, or is none of those kinds),
 *         FDL_EINVAL (NULL argument), FDL_ENOMEM
 * Thread-safety: reentrant.
 */
FDL_API int fdl_image_kernel_params(const void *image, size_t size, const char *name,
                                    size_t *count, size_t *sizes, size_t max, fdl_error *err);

/**
 * The parameters of kernel @p name with their classes, as a code image says them, without a
 * GPU: PTX (or a fatbin's PTX member) gives each parameter's class and size from its `.entry`
 * prototype (`.f32` is FDL_PARAM_FLOAT, `.align 8 .b8 s[24]` FDL_PARAM_BYTES of 24: see
 * fdl_param_class in fdlink/ptx.h); a cubin gives sizes only (FDL_PARAM_UNKNOWN), as
 * fdl_image_kernel_params does. A binding converts arguments with them as a C compiler converts
 * arguments to a prototype (the Python package does); fdl_link_kernel_params gives the same for
 * a link's kernels.
 * @param out   room for @p max entries (NULL only when @p max is 0): receives min(*count, max)
 * @param count receives the number of parameters (not NULL)
 * @return FDL_OK, FDL_ENOTFOUND (the image lists no such kernel, or is none of those kinds),
 *         FDL_EINVAL (NULL argument), FDL_ENOMEM
 * Ownership: nothing kept. Thread-safety: reentrant.
 */
FDL_API int fdl_image_kernel_param_info(const void *image, size_t size, const char *name,
                                        fdl_param_info *out, size_t max, size_t *count,
                                        fdl_error *err);

/**
 * Let launches of the kernel use up to @p bytes of dynamic shared memory (beyond the default
 * 48 KiB, up to what the device allows a block to opt in to, less the kernel's static shared
 * memory).
 * @return FDL_OK, FDL_EINVAL (more than the device allows: the message gives the limit),
 *         FDL_ECUDA
 */
FDL_API int fdl_kernel_set_max_dynamic_shared(fdl_kernel *kernel, size_t bytes, fdl_error *err);

/* ---- launches ---------------------------------------------------------------------------- */

/** One kernel argument: where its value is and how many bytes it has. */
typedef struct fdl_arg {
    const void *value;
    size_t size;
} fdl_arg;

/** An argument from a pointer and a size. */
static inline fdl_arg fdl_arg_make(const void *value, size_t size)
{
    fdl_arg a;
    a.value = value;
    a.size = size;
    return a;
}

/** The argument for an lvalue @p v: its address and its size. */
#define FDL_ARG(v) fdl_arg_make(&(v), sizeof(v))

/**
 * Launch flag: a cooperative launch (every block resident at once; grid-wide sync allowed); a
 * grid larger than fits at once is refused. Without it, a kernel whose cubin lists
 * cooperative-groups instructions (fdl_kernel_attrs.cooperative_groups) is launched
 * cooperatively when its grid fits, normally otherwise.
 */
#define FDL_LAUNCH_COOPERATIVE 0x1u
/** Launch flag: never cooperative, whatever the kernel holds. */
#define FDL_LAUNCH_NOT_COOPERATIVE 0x4u
/**
 * Launch flag: wait for the kernel to finish and check the module's device status record, so
 * that a failure in the kernel is reported by the launch that caused it.
 */
#define FDL_LAUNCH_SYNC 0x2u

#define FDL_LAUNCH_CONFIG_VERSION 1u

/** How to launch: geometry, dynamic shared memory, stream and flags. */
typedef struct fdl_launch_config {
    unsigned version;    /**< FDL_LAUNCH_CONFIG_VERSION */
    fdl_dim3 grid;       /**< blocks; every dimension at least 1 */
    fdl_dim3 block;      /**< threads per block; every dimension at least 1 */
    size_t shared_bytes; /**< dynamic shared memory per block */
    fdl_stream *stream;  /**< NULL: the device's default (legacy) stream */
    unsigned flags;      /**< FDL_LAUNCH_* */
} fdl_launch_config;

/** A one-thread launch on the default stream. */
#define FDL_LAUNCH_CONFIG_INIT {FDL_LAUNCH_CONFIG_VERSION, {1, 1, 1}, {1, 1, 1}, 0, NULL, 0}

/**
 * Launch a kernel on the default stream. @p args holds @p nargs pointers to the argument values,
 * as for cuLaunchKernel. Checked before the launch: every dimension at least 1, the geometry and
 * shared memory against the device and the kernel (as fdl_kernel_launch_ex), the argument count
 * against the kernel's parameters where the driver reports them, no NULL argument pointer.
 * @return FDL_OK, FDL_EINVAL (a check failed; the message names the kernel),
 *         FDL_ECUDA (the message names the kernel)
 */
FDL_API int fdl_kernel_launch(fdl_kernel *kernel, fdl_dim3 grid, fdl_dim3 block,
                              unsigned shared_bytes, void **args, size_t nargs, fdl_error *err);

/**
 * Launch a kernel, checking first, with these messages (FDL_EINVAL, err->symbol the kernel):
 * - `grid.y is 0 in the launch of kernel 'k' (every dimension must be at least 1)`
 * - `block (33,33,1) = 1089 threads exceeds the 1024 that kernel mm allows`
 * - `block.z = 65 exceeds the 64 that the device allows, launching kernel mm` (also grid.x ..)
 * - `dynamic shared memory of N bytes exceeds the M that kernel mm allows
 *   (fdl_kernel_set_max_dynamic_shared can raise that to L)`
 * - `cooperative launch of N blocks exceeds the M that can be resident at once for kernel mm
 *   (B per SM on S SMs)`; `device 0 does not support cooperative launches (kernel mm)`
 * - `kernel mm takes 4 parameters, but 3 arguments were given`
 * - `kernel mm: argument 2 has 4 bytes, but parameter 2 takes 8`
 * - `argument 1 of kernel 'mm' is NULL (expected a pointer to the value)`
 * With FDL_LAUNCH_SYNC the call also waits for the kernel and returns its errors, including
 * FDL_EDEVICE from the module's device status record.
 * @param cfg  not NULL; version FDL_LAUNCH_CONFIG_VERSION
 * @param args @p nargs argument descriptions (NULL only when @p nargs is 0)
 * @return FDL_OK, FDL_EINVAL, FDL_ECUDA, FDL_EDEVICE (with FDL_LAUNCH_SYNC), FDL_ENOMEM
 */
FDL_API int fdl_kernel_launch_ex(fdl_kernel *kernel, const fdl_launch_config *cfg,
                                 const fdl_arg *args, size_t nargs, fdl_error *err);

/**
 * Prepare a launch: check the geometry and the arguments once (as fdl_kernel_launch_ex) and copy
 * the argument values, so that fdl_launch_run costs what cuLaunchKernel costs. FDL_LAUNCH_SYNC
 * is not allowed here (check with fdl_module_check_status or fdl_device_synchronize).
 * @return FDL_OK, FDL_EINVAL, FDL_ECUDA, FDL_ENOMEM
 * Ownership: *out is the caller's; fdl_launch_destroy frees it, and so does destroying the
 * kernel's module or device. The argument values are copied; @p cfg and @p args are not kept,
 * but cfg->stream is used by every run and must outlive the prepared launch.
 */
FDL_API int fdl_launch_create(fdl_launch **out, fdl_kernel *kernel, const fdl_launch_config *cfg,
                              const fdl_arg *args, size_t nargs, fdl_error *err);

/**
 * Run a prepared launch: no allocation, no checks beyond the driver's own.
 * @return FDL_OK, FDL_ECUDA (the message names the kernel), FDL_EINVAL (NULL)
 */
FDL_API int fdl_launch_run(fdl_launch *launch, fdl_error *err);

/**
 * Change the value of argument @p index for the next runs; @p size must be the size the launch
 * was prepared with.
 * @return FDL_OK, FDL_EINVAL (index out of range, or a size that differs)
 */
FDL_API int fdl_launch_set_arg(fdl_launch *launch, size_t index, const void *value, size_t size,
                               fdl_error *err);

/**
 * Change the geometry and dynamic shared memory of a prepared launch for the next runs. Checked
 * as fdl_launch_create checks them (same messages), with the flags it was prepared with (a
 * cooperative launch asks the driver for the kernel's occupancy); the arguments are not checked
 * again. On failure the launch keeps its previous geometry.
 * @return FDL_OK, FDL_EINVAL (a check failed; NULL @p launch), FDL_ECUDA
 * Ownership: nothing kept. Thread-safety: the device's family rule.
 */
FDL_API int fdl_launch_set_geometry(fdl_launch *launch, fdl_dim3 grid, fdl_dim3 block,
                                    size_t shared_bytes, fdl_error *err);

/**
 * Change the stream of a prepared launch for the next runs: @p stream, or NULL for the device's
 * default (legacy) stream. Nothing else is checked again.
 * @return FDL_OK, FDL_EINVAL (NULL @p launch; a stream of another device: `fdl_launch_set_stream:
 *         the stream belongs to device 1, not device 0`; the launch keeps its stream)
 * Ownership: @p stream is borrowed and must outlive the prepared launch (or be replaced first).
 * Thread-safety: the device's family rule.
 */
FDL_API int fdl_launch_set_stream(fdl_launch *launch, fdl_stream *stream, fdl_error *err);

/** Free a prepared launch. NULL is allowed. */
FDL_API void fdl_launch_destroy(fdl_launch *launch);

/* ---- streams and events ------------------------------------------------------------------ */

/**
 * Create a stream. Its work is ordered with the default stream's, as the synchronous copies of
 * fdl_buffer_read and fdl_buffer_write expect.
 * @return FDL_OK, FDL_ECUDA, FDL_ENOMEM, FDL_EINVAL
 * Ownership: *out is the caller's; fdl_stream_destroy (or destroying its device) frees it.
 */
FDL_API int fdl_stream_create(fdl_stream **out, fdl_device *dev, fdl_error *err);

/**
 * Whether @p stream is being captured into a CUDA graph (cuStreamIsCapturing): *capturing 1 or 0
 * (0 also where the driver has no cuStreamIsCapturing). Synchronous work (FDL_LAUNCH_SYNC,
 * fdl_stream_synchronize) in a capturing stream is refused with FDL_EINVAL before it would
 * invalidate the capture; asynchronous launches, maps and reductions are captured.
 * @return FDL_OK, FDL_EINVAL (NULL), FDL_ECUDA
 */
FDL_API int fdl_stream_is_capturing(fdl_stream *stream, int *capturing, fdl_error *err);

/** The foreign handle fdl_stream_wrap takes for CUDA's legacy default stream (CU_STREAM_LEGACY). */
#define FDL_STREAM_LEGACY ((void *)0x1)
/** The foreign handle fdl_stream_wrap takes for CUDA's per-thread default stream
 *  (CU_STREAM_PER_THREAD). */
#define FDL_STREAM_PER_THREAD ((void *)0x2)

/**
 * Wrap a stream that fdlink did not make (a CUstream from CuPy, PyTorch, the runtime API, the
 * driver API, ...) so that launches, copies and events of fdlink are queued in it, ordered with
 * the other library's work. fdlink does not own it: fdl_stream_destroy (and destroying the
 * device) forgets the wrapper and leaves the CUstream alive.
 * @param handle a CUstream (as void *) of the device's primary context, which is the context
 *        the runtime API, CuPy and PyTorch use; NULL (the legacy default stream, as
 *        fdl_launch_config.stream NULL is), FDL_STREAM_LEGACY (CU_STREAM_LEGACY) or
 *        FDL_STREAM_PER_THREAD (CU_STREAM_PER_THREAD: the calling thread's default stream at
 *        each use). Other handles are asked for their context (cuStreamGetCtx); a stale pointer
 *        that the driver cannot tell from a stream is the caller's error, as in the driver API.
 * @return FDL_OK, FDL_EINVAL (NULL @p out or @p dev; a stream of another context: `fdl_stream_wrap:
 *         stream 0x... belongs to another CUDA context than the primary context of device 0`),
 *         FDL_ECUDA (the driver refused the handle: `fdl_stream_wrap: cuStreamGetCtx failed:
 *         CUDA_ERROR_INVALID_HANDLE (...)`), FDL_ENOMEM
 * Ownership: *out is the caller's; fdl_stream_destroy (or destroying its device) frees the
 * wrapper, never the CUstream. The CUstream must outlive the wrapper and every prepared launch
 * that uses it.
 * Thread-safety: the device's family rule; the CUstream's own rules are the other library's.
 */
FDL_API int fdl_stream_wrap(fdl_stream **out, fdl_device *dev, void *handle, fdl_error *err);

/**
 * The stream's CUstream, as void * (for `__cuda_stream__`, or to give to another library): the
 * handle fdl_stream_wrap was given, or the one fdl_stream_create made; NULL for NULL (and for a
 * wrapped legacy default stream).
 * Ownership: borrowed; owned by fdlink for a created stream, by its maker for a wrapped one.
 */
FDL_API void *fdl_stream_handle(const fdl_stream *stream);

/** The device the stream belongs to; NULL for NULL. Borrowed. */
FDL_API fdl_device *fdl_stream_device(const fdl_stream *stream);

/** 1 when fdlink made the stream (fdl_stream_create), 0 when it wraps another's (and for NULL). */
FDL_API int fdl_stream_owned(const fdl_stream *stream);

/**
 * Destroy a stream (its pending work still completes); a wrapped stream (fdl_stream_wrap) is only
 * forgotten, its CUstream left alive. NULL is allowed.
 */
FDL_API void fdl_stream_destroy(fdl_stream *stream);

/**
 * Wait for the work of a stream. @return FDL_OK, FDL_ECUDA (an earlier launch that failed is
 * reported as such), FDL_EINVAL
 */
FDL_API int fdl_stream_synchronize(fdl_stream *stream, fdl_error *err);

/**
 * Create an event that can time work.
 * @return FDL_OK, FDL_ECUDA, FDL_ENOMEM, FDL_EINVAL
 * Ownership: *out is the caller's; fdl_event_destroy (or destroying its device) frees it.
 */
FDL_API int fdl_event_create(fdl_event **out, fdl_device *dev, fdl_error *err);

/** Destroy an event. NULL is allowed. */
FDL_API void fdl_event_destroy(fdl_event *event);

/**
 * Record the event in @p stream (NULL: the default stream) after the work queued so far.
 * @return FDL_OK, FDL_ECUDA, FDL_EINVAL (a stream of another device)
 */
FDL_API int fdl_event_record(fdl_event *event, fdl_stream *stream, fdl_error *err);

/**
 * Make the work queued in @p stream after this call wait for the work before the event's last
 * record (cuStreamWaitEvent; the host does not wait): how work on one stream is ordered after
 * work on another, another library's included (wrap its stream with fdl_stream_wrap). An event
 * never recorded is no wait, as for the driver.
 * @param stream the stream that waits; NULL for the device's default (legacy) stream
 * @return FDL_OK, FDL_EINVAL (NULL @p event; a stream of another device), FDL_ECUDA
 * Ownership: nothing kept. Thread-safety: the device's family rule.
 */
FDL_API int fdl_stream_wait_event(fdl_stream *stream, fdl_event *event, fdl_error *err);

/** Wait until the event's work is done. @return FDL_OK, FDL_ECUDA, FDL_EINVAL (never recorded) */
FDL_API int fdl_event_synchronize(fdl_event *event, fdl_error *err);

/**
 * Milliseconds between two recorded events, waiting for @p end first.
 * @return FDL_OK, FDL_EINVAL (an event never recorded: `the start event was never recorded`;
 *         events of different devices), FDL_ECUDA
 */
FDL_API int fdl_event_elapsed_ms(float *ms, fdl_event *start, fdl_event *end, fdl_error *err);

/* ---- buffers ----------------------------------------------------------------------------- */

/**
 * Allocate @p size bytes of device memory (contents undefined). During a capture of a stream
 * into a CUDA graph the allocation is made in the thread's relaxed capture mode
 * (cuThreadExchangeStreamCaptureMode), which the capture allows; its address is the graph's.
 * @return FDL_OK, FDL_ECUDA (out of device memory), FDL_ENOMEM, FDL_EINVAL
 * Ownership: *out is the caller's; fdl_buffer_destroy (or destroying its device) frees it.
 */
FDL_API int fdl_buffer_create(fdl_buffer **out, fdl_device *dev, size_t size, fdl_error *err);

/**
 * Free a buffer. NULL is allowed. While a stream of its device is being captured into a CUDA
 * graph (fdlink's streams and the streams it wraps, and any stream that synchronises with the
 * legacy default stream: what cuStreamIsCapturing tells of them), cuMemFree would invalidate the
 * capture: the memory is kept then, and freed at the device's next point outside a capture (the
 * next fdl_buffer_create, fdl_buffer_destroy, fdl_buffer_release or fdl_device_synchronize, or
 * fdl_device_destroy). A graph that uses the memory must not be replayed after that.
 */
FDL_API void fdl_buffer_destroy(fdl_buffer *buf);

/**
 * Wait for the device's queued work (on any stream: it may still use the memory), then free @p
 * buf as fdl_buffer_destroy does; during a capture (as there) nothing waits and the memory is
 * kept until a later point outside one. NULL is allowed. The buffer is freed also when the wait
 * fails, whose error is returned.
 * @return FDL_OK, FDL_ECUDA (an earlier launch failed: the context is poisoned)
 */
FDL_API int fdl_buffer_release(fdl_buffer *buf, fdl_error *err);

/** Device address of the buffer, for use as a kernel argument; 0 for NULL. */
FDL_API uint64_t fdl_buffer_address(const fdl_buffer *buf);
/** Size in bytes; 0 for NULL. */
FDL_API size_t fdl_buffer_size(const fdl_buffer *buf);
/** The device the buffer was allocated on; NULL for NULL. Borrowed. */
FDL_API fdl_device *fdl_buffer_device(const fdl_buffer *buf);

/**
 * Copy @p size bytes from host memory into the buffer at @p offset (synchronous).
 * @return FDL_OK, FDL_EINVAL (range outside the buffer: `copy of 100 bytes at offset 8 exceeds
 *         buffer of 64 bytes`; nothing is copied), FDL_ECUDA
 */
FDL_API int fdl_buffer_write(fdl_buffer *buf, size_t offset, const void *src, size_t size,
                             fdl_error *err);

/** Copy @p size bytes from the buffer at @p offset to host memory (synchronous). As write. */
FDL_API int fdl_buffer_read(const fdl_buffer *buf, size_t offset, void *dst, size_t size,
                            fdl_error *err);

/**
 * Copy @p size bytes between device buffers of the same device (synchronous); both ranges are
 * checked as for fdl_buffer_write. Overlapping ranges of one buffer are FDL_EINVAL.
 * @return FDL_OK, FDL_EINVAL, FDL_ECUDA
 */
FDL_API int fdl_buffer_copy(fdl_buffer *dst, size_t dst_offset, const fdl_buffer *src,
                            size_t src_offset, size_t size, fdl_error *err);

/** Set every byte of the buffer to zero (synchronous). @return FDL_OK, FDL_ECUDA, FDL_EINVAL */
FDL_API int fdl_buffer_zero(fdl_buffer *buf, fdl_error *err);

/**
 * Asynchronous forms, queued in @p stream (NULL: the default stream) and checked as the
 * synchronous ones. The host memory must stay valid and unchanged (write) or unread (read)
 * until the stream is synchronised; it is truly asynchronous only when it is page-locked
 * (fdl_host_buffer). @return FDL_OK, FDL_EINVAL (also a stream of another device), FDL_ECUDA
 */
FDL_API int fdl_buffer_write_async(fdl_buffer *buf, size_t offset, const void *src, size_t size,
                                   fdl_stream *stream, fdl_error *err);
FDL_API int fdl_buffer_read_async(const fdl_buffer *buf, size_t offset, void *dst, size_t size,
                                  fdl_stream *stream, fdl_error *err);
FDL_API int fdl_buffer_copy_async(fdl_buffer *dst, size_t dst_offset, const fdl_buffer *src,
                                  size_t src_offset, size_t size, fdl_stream *stream,
                                  fdl_error *err);
FDL_API int fdl_buffer_zero_async(fdl_buffer *buf, fdl_stream *stream, fdl_error *err);

/**
 * Allocate @p size bytes of page-locked host memory (cuMemHostAlloc; contents undefined).
 * @return FDL_OK, FDL_ECUDA, FDL_ENOMEM, FDL_EINVAL (NULL argument, size 0)
 * Ownership: *out is the caller's; fdl_host_buffer_destroy (or destroying its device) frees it.
 */
FDL_API int fdl_host_buffer_create(fdl_host_buffer **out, fdl_device *dev, size_t size,
                                   fdl_error *err);

/** Free a host buffer. NULL is allowed. */
FDL_API void fdl_host_buffer_destroy(fdl_host_buffer *buf);

/** The host buffer's memory; NULL for NULL. Borrowed: valid until the buffer is destroyed. */
FDL_API void *fdl_host_buffer_data(const fdl_host_buffer *buf);

/** Size in bytes; 0 for NULL. */
FDL_API size_t fdl_host_buffer_size(const fdl_host_buffer *buf);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_HOST_H */
