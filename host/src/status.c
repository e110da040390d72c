/*
 * The device status record of fdlink/device.h, read and cleared from the host: per module
 * (fdl_module_read_status, fdl_module_check_status) and for every module of a device
 * (fdl_device_synchronize). This file sits above device.c (contexts, errors) and below module.c,
 * which attaches a module's record when it loads; device.c knows nothing of records.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "internal.h"

/* The record's symbol (FDL_STATUS_SYMBOL of fdlink/device.h). */
#define STATUS_SYMBOL "fdl_status_v1"

/* struct fdl_status_record of fdlink/device.h, layout 1, as the device lays it out. */
typedef struct status_record {
    uint64_t failures;
    uint32_t claimed;
    int32_t status;
    uint32_t line;
    uint32_t block[3];
    uint32_t thread[3];
    char function[64];
} status_record;

_Static_assert(sizeof(status_record) == 112, "fdl_status_record layout 1 is 112 bytes");
_Static_assert(sizeof(((status_record *)0)->function) == FDL_DEVICE_STATUS_NAME_MAX,
               "function name sizes agree");

/*
 * Whether @image may define the record: its name appears in the bytes (a cubin's string table,
 * PTX text), or in a member of a fatbin (decompressed where needed; a member that cannot be read
 * here may have it). Asking the driver for a symbol that is not there is an API error that
 * compute-sanitizer reports, so modules that cannot have the record are not asked.
 */
static int image_may_have_record(const void *image, size_t size)
{
    static const unsigned char fatbin_magic[4] = {0x50, 0xed, 0x55, 0xba}; /* 0xBA55ED50 */
    static const char name[] = STATUS_SYMBOL;
    const unsigned char *p = image;
    if (size >= 4 && memcmp(p, fatbin_magic, 4) == 0)
        return fdl__fatbin_may_contain(image, size, name, sizeof name - 1);
    for (size_t i = 0; i + sizeof name - 1 <= size; i++) {
        const unsigned char *hit = memchr(p + i, name[0], size - i - (sizeof name - 2));
        if (!hit)
            return 0;
        i = (size_t)(hit - p);
        if (memcmp(hit, name, sizeof name - 1) == 0)
            return 1;
    }
    return 0;
}

int fdl__status_attach(fdl_module *mod, const void *image, size_t size, fdl_error *err)
{
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
    mod->status = 0;
    if (!image_may_have_record(image, size))
        return FDL_OK;
    CUresult r = mod->dev->cu->module_get_global(&ptr, &bytes, mod->mod, STATUS_SYMBOL);
    if (r == CUDA_ERROR_NOT_FOUND)
        return FDL_OK;
    if (r != CUDA_SUCCESS) {
        int rc = fdl__device_error(err, mod->dev, r, "cuModuleGetGlobal");
        if (err) {
            fdl__strlcpy(err->source, mod->name, sizeof err->source);
            fdl__strlcpy(err->symbol, STATUS_SYMBOL, sizeof err->symbol);
        }
        return rc;
    }
    if (bytes != sizeof(status_record))
        return fdl__error(err, FDL_EINVAL, mod->name, 0, 0, STATUS_SYMBOL,
                          "the device status record %s has %zu bytes, but this fdlink reads "
                          "%zu (compiled against another fdlink/device.h?)",
                          STATUS_SYMBOL, bytes, sizeof(status_record));
    mod->status = ptr;
    return FDL_OK;
}

/*
 * Read the module's status record after synchronising the context, and clear it when it holds
 * a failure; out->status is 0 when it holds none. @return FDL_OK, FDL_ECUDA
 */
static int status_read(fdl_module *mod, fdl_device_status *out, fdl_error *err)
{
    memset(out, 0, sizeof *out);
    if (!mod->status)
        return FDL_OK;
    fdl_device *dev = mod->dev;
    const fdl__cuda *cu = dev->cu;
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuCtxSynchronize");
    status_record rec;
    r = cu->memcpy_dtoh(&rec, mod->status, sizeof rec);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuMemcpyDtoH");
    mod->launches = 0;
    mod->last_kernel = NULL;
    if (!rec.claimed && !rec.failures)
        return FDL_OK;
    /* clear it for the next launches; ordered before them in the default stream */
    r = cu->memset_d8(mod->status, 0, sizeof rec);
    if (r == CUDA_SUCCESS)
        r = cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuMemsetD8");
    out->status = rec.status;
    rec.function[sizeof rec.function - 1] = '\0';
    memcpy(out->function, rec.function, sizeof out->function);
    out->line = rec.line;
    out->block.x = rec.block[0];
    out->block.y = rec.block[1];
    out->block.z = rec.block[2];
    out->thread.x = rec.thread[0];
    out->thread.y = rec.thread[1];
    out->thread.z = rec.thread[2];
    out->failures = rec.failures ? rec.failures : 1;
    /* a claimed record always holds a non-zero status; keep it non-zero whatever wrote it */
    if (out->status == 0)
        out->status = -1;
    return FDL_OK;
}

/* FDL_EDEVICE describing @p st (a failure) of @p mod. */
static int status_error(fdl_error *err, const fdl_module *mod, const fdl_device_status *st,
                        const fdl_kernel *kernel)
{
    (void)mod;
    if (!err)
        return FDL_EDEVICE;
    char in_kernel[FDL_ERROR_SYMBOL_MAX + 16] = "";
    char count[64] = "";
    if (kernel)
        snprintf(in_kernel, sizeof in_kernel, " in kernel '%s'", kernel->name);
    if (st->failures > 1)
        snprintf(count, sizeof count, " (first of %llu failures)", st->failures);
    fdl__error(err, FDL_EDEVICE, NULL, 0, 0, st->function,
               "device function %s returned status %d at block (%u,%u,%u) thread (%u,%u,%u)%s%s",
               st->function[0] ? st->function : "(unnamed)", st->status, st->block.x,
               st->block.y, st->block.z, st->thread.x, st->thread.y, st->thread.z, in_kernel,
               count);
    err->backend_code = st->status;
    const unsigned block[3] = {st->block.x, st->block.y, st->block.z};
    const unsigned thread[3] = {st->thread.x, st->thread.y, st->thread.z};
    fdl__error_place(err, block, thread);
    fdl__error_count(err, st->failures);
    return FDL_EDEVICE;
}

int fdl_module_has_status(const fdl_module *mod)
{
    return mod && mod->status != 0;
}

int fdl_module_read_status(fdl_module *mod, fdl_device_status *out, fdl_error *err)
{
    if (!FDL__CHECK_ARG(mod) || !FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_read_status: mod or out is NULL");
    return status_read(mod, out, err);
}

int fdl_module_check_status(fdl_module *mod, fdl_error *err)
{
    if (!FDL__CHECK_ARG(mod))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_check_status: mod is NULL");
    const fdl_kernel *kernel = mod->launches == 1 ? mod->last_kernel : NULL;
    fdl_device_status st;
    int rc = status_read(mod, &st, err);
    if (rc != FDL_OK)
        return rc;
    if (st.status == 0)
        return FDL_OK;
    return status_error(err, mod, &st, kernel);
}

int fdl_device_synchronize(fdl_device *dev, fdl_error *err)
{
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_synchronize: dev is NULL");
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    CUstream capturing = NULL;
    if (fdl__device_capturing(dev, &capturing))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_synchronize: stream %p of device %d is "
                         "being captured into a CUDA graph: waiting would invalidate the "
                         "capture (synchronize after it ends)", (void *)capturing,
                         dev->info.ordinal);
    CUresult r = dev->cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuCtxSynchronize");
    fdl__device_flush_deferred(dev); /* those a capture deferred: no capture now, nothing queued */
    /* device status records: the first failure found is the error */
    for (fdl__child *c = dev->children.head; c; c = c->next) {
        if (c->kind != FDL__MODULE)
            continue;
        fdl_module *mod = (fdl_module *)c;
        if (!mod->status)
            continue;
        fdl_device_status st;
        const fdl_kernel *kernel = mod->launches == 1 ? mod->last_kernel : NULL;
        if ((rc = status_read(mod, &st, err)) != FDL_OK)
            return rc;
        if (st.status != 0 || st.failures)
            return status_error(err, mod, &st, kernel);
    }
    return FDL_OK;
}
