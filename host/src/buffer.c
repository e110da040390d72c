/* Device memory buffers with range-checked, synchronous copies. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "driver.h"
#include "internal.h"

struct fdl_buffer {
    fdl_device *dev;
    CUdeviceptr ptr;
    size_t size;
};

int fdl_buffer_create(fdl_buffer **out, fdl_device *dev, size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_create: dev is NULL");
    if (!size)
        return fdl__fail(err, FDL_EINVAL, "cannot allocate a buffer of 0 bytes");
    int rc;
    fdl_buffer *buf = calloc(1, sizeof *buf);
    if (!buf)
        return fdl__fail(err, FDL_ENOMEM, "out of memory creating a buffer");
    buf->dev = dev;
    if ((rc = fdl__device_enter(dev, err)) != FDL_OK)
        goto cleanup;
    CUresult r = dev->cu->mem_alloc(&buf->ptr, size);
    if (r != CUDA_SUCCESS) {
        buf->ptr = 0;
        rc = fdl__device_error(err, dev, r, "cuMemAlloc");
        if (err && r == CUDA_ERROR_OUT_OF_MEMORY) {
            char detail[FDL_ERROR_MESSAGE_MAX];
            fdl__strlcpy(detail, err->message, sizeof detail);
            fdl__fail(err, FDL_ECUDA, "allocating %zu bytes: %s", size, detail);
            err->backend_code = (int)r;
        }
        goto cleanup;
    }
    buf->size = size;
    *out = buf;
    buf = NULL;
    rc = FDL_OK;
cleanup:
    fdl_buffer_destroy(buf);
    return rc;
}

void fdl_buffer_destroy(fdl_buffer *buf)
{
    if (!buf)
        return;
    if (buf->ptr && fdl__device_enter(buf->dev, NULL) == FDL_OK)
        buf->dev->cu->mem_free(buf->ptr);
    free(buf);
}

uint64_t fdl_buffer_address(const fdl_buffer *buf)
{
    return buf ? (uint64_t)buf->ptr : 0;
}

size_t fdl_buffer_size(const fdl_buffer *buf)
{
    return buf ? buf->size : 0;
}

/* [offset, offset + size) must lie within the buffer; checked without overflow. */
static int check_range(const fdl_buffer *buf, size_t offset, size_t size, fdl_error *err)
{
    size_t end;
    if (!fdl__size_add(&end, offset, size) || end > buf->size)
        return fdl__fail(err, FDL_EINVAL, "copy of %zu bytes at offset %zu exceeds buffer of %zu "
                         "bytes", size, offset, buf->size);
    return FDL_OK;
}

int fdl_buffer_write(fdl_buffer *buf, size_t offset, const void *src, size_t size,
                     fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || !FDL__CHECK_ARG(src || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_write: buf or src is NULL");
    int rc = check_range(buf, offset, size, err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(buf->dev, err)) != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memcpy_htod(buf->ptr + offset, src, size);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemcpyHtoD");
    return FDL_OK;
}

int fdl_buffer_read(const fdl_buffer *buf, size_t offset, void *dst, size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || !FDL__CHECK_ARG(dst || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_read: buf or dst is NULL");
    int rc = check_range(buf, offset, size, err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(buf->dev, err)) != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memcpy_dtoh(dst, buf->ptr + offset, size);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemcpyDtoH");
    return FDL_OK;
}

int fdl_buffer_zero(fdl_buffer *buf, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_zero: buf is NULL");
    int rc = fdl__device_enter(buf->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memset_d8(buf->ptr, 0, buf->size);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemsetD8");
    /* cuMemsetD8 is asynchronous with respect to the host for device memory: finish it here */
    r = buf->dev->cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuCtxSynchronize");
    return FDL_OK;
}
