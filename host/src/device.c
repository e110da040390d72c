/* Devices and their primary contexts. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "internal.h"

int fdl__device_enter(fdl_device *dev, fdl_error *err)
{
    CUresult r = dev->cu->ctx_set_current(dev->ctx);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuCtxSetCurrent");
    return FDL_OK;
}

int fdl__device_error(fdl_error *err, const fdl_device *dev, CUresult r, const char *what)
{
    return fdl__cu_error(err, dev->cu, r, what, dev->last_kernel);
}

/* The device count, with 0 devices reported as FDL_ENODEVICE. */
static int count_devices(const fdl__cuda *cu, int *count, fdl_error *err)
{
    *count = 0;
    CUresult r = cu->device_get_count(count);
    if (r != CUDA_SUCCESS) {
        *count = 0;
        return fdl__cu_error(err, cu, r, "cuDeviceGetCount", NULL);
    }
    if (*count <= 0) {
        *count = 0;
        return fdl__fail(err, FDL_ENODEVICE, "no CUDA device: the driver reports none");
    }
    return FDL_OK;
}

int fdl_device_count(int *count, fdl_error *err)
{
    if (!FDL__CHECK_ARG(count))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_count: count is NULL");
    *count = 0;
    const fdl__cuda *cu;
    int rc = fdl__cuda_get(&cu, err);
    if (rc != FDL_OK)
        return rc;
    return count_devices(cu, count, err);
}

/* FDLINK_DEVICE as an ordinal, 0 when unset. */
static int ordinal_from_env(int *ordinal, fdl_error *err)
{
    *ordinal = 0;
    const char *s = getenv("FDLINK_DEVICE");
    if (!s || !s[0])
        return FDL_OK;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX)
        return fdl__fail(err, FDL_EINVAL,
                         "FDLINK_DEVICE='%.32s' is not a device number (expected 0, 1, ...)", s);
    *ordinal = (int)v;
    return FDL_OK;
}

int fdl_device_open(fdl_device **out, int ordinal, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_open: out is NULL");
    *out = NULL;
    int rc;
    fdl_device *dev = NULL;
    if (ordinal < -1)
        return fdl__fail(err, FDL_EINVAL, "invalid device ordinal %d (expected -1, 0, 1, ...)",
                         ordinal);
    if (ordinal == -1 && (rc = ordinal_from_env(&ordinal, err)) != FDL_OK)
        return rc;
    const fdl__cuda *cu;
    if ((rc = fdl__cuda_get(&cu, err)) != FDL_OK)
        return rc;
    int count;
    if ((rc = count_devices(cu, &count, err)) != FDL_OK)
        return rc;
    if (ordinal >= count)
        return fdl__fail(err, FDL_ENODEVICE,
                         "no CUDA device %d: the driver reports %d device%s (0..%d)", ordinal,
                         count, count == 1 ? "" : "s", count - 1);
    dev = calloc(1, sizeof *dev);
    if (!dev)
        return fdl__fail(err, FDL_ENOMEM, "out of memory opening a device");
    dev->cu = cu;
    dev->ordinal = ordinal;
    CUresult r = cu->device_get(&dev->device, ordinal);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDeviceGet", NULL);
        goto cleanup;
    }
    r = cu->device_get_name(dev->name, (int)sizeof dev->name, dev->device);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDeviceGetName", NULL);
        goto cleanup;
    }
    dev->name[sizeof dev->name - 1] = '\0';
    int major = 0, minor = 0;
    r = cu->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device);
    if (r == CUDA_SUCCESS)
        r = cu->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     dev->device);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDeviceGetAttribute", NULL);
        goto cleanup;
    }
    if (major < 1 || major > 99 || minor < 0 || minor > 9) {
        rc = fdl__fail(err, FDL_ECUDA, "device %d reports compute capability %d.%d", ordinal,
                       major, minor);
        goto cleanup;
    }
    dev->cc = major * 10 + minor;
    snprintf(dev->arch, sizeof dev->arch, "sm_%d%d", major, minor);
    r = cu->primary_ctx_retain(&dev->ctx, dev->device);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDevicePrimaryCtxRetain", NULL);
        goto cleanup;
    }
    if ((rc = fdl__device_enter(dev, err)) != FDL_OK)
        goto cleanup;
    *out = dev;
    dev = NULL;
    rc = FDL_OK;
cleanup:
    fdl_device_destroy(dev);
    return rc;
}

void fdl_device_destroy(fdl_device *dev)
{
    if (!dev)
        return;
    if (dev->ctx)
        dev->cu->primary_ctx_release(dev->device);
    free(dev);
}

const char *fdl_device_name(const fdl_device *dev)
{
    return dev ? dev->name : "";
}

const char *fdl_device_arch(const fdl_device *dev)
{
    return dev ? dev->arch : "";
}

int fdl_device_cc(const fdl_device *dev)
{
    return dev ? dev->cc : 0;
}

int fdl_device_driver_version(const fdl_device *dev)
{
    return dev ? dev->cu->driver_version : 0;
}

int fdl_device_synchronize(fdl_device *dev, fdl_error *err)
{
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_synchronize: dev is NULL");
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = dev->cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuCtxSynchronize");
    return FDL_OK;
}
