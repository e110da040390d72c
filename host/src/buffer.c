/* Device buffers with range-checked copies, and page-locked host buffers. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "driver.h"
#include "internal.h"

struct fdl_buffer {
    fdl__child child; /* first: owned by the device */
    fdl_device *dev;
    CUdeviceptr ptr;
    size_t size;
};

struct fdl_host_buffer {
    fdl__child child; /* first: owned by the device */
    fdl_device *dev;
    void *ptr;
    size_t size;
};

static void buffer_child_destroy(fdl__child *c)
{
    fdl_buffer_destroy((fdl_buffer *)c);
}

/* The memory freed and the buffer gone, from whichever list of the device holds it. */
static void buffer_free(fdl_buffer *buf, fdl__children *list, int entered)
{
    if (buf->ptr && entered)
        buf->dev->cu->mem_free(buf->ptr);
    fdl__children_remove(list, &buf->child);
    free(buf);
}

/* A deferred buffer's destroyer: frees its memory when the device flushes its deferred list
 * (fdl__device_flush_deferred). */
static void deferred_child_destroy(fdl__child *c)
{
    fdl_buffer *buf = (fdl_buffer *)c;
    buffer_free(buf, &buf->dev->deferred, fdl__device_enter(buf->dev, NULL) == FDL_OK);
}

/*
 * During a capture the driver refuses cuMemFree (in its global mode, invalidating the capture),
 * and a replay may still use the memory: @p buf leaves the device's children for its deferred
 * list, its memory kept until a point outside any capture frees it. 1 when deferred.
 */
static int defer_in_capture(fdl_buffer *buf)
{
    if (!buf->ptr || !fdl__device_capturing(buf->dev, NULL))
        return 0;
    fdl__children_remove(&buf->dev->children, &buf->child);
    fdl__children_add(&buf->dev->deferred, &buf->child, FDL__BUFFER, deferred_child_destroy);
    return 1;
}

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
    if (dev->deferred.head && !fdl__device_capturing(dev, NULL))
        fdl__device_flush_deferred(dev);
    /* cuMemAlloc in a relaxed thread: allowed during a capture (its address is the graph's for
     * good), where the global mode would refuse it and invalidate the capture */
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    int relaxed = dev->cu->thread_exchange_capture_mode &&
                  dev->cu->thread_exchange_capture_mode(&mode) == CUDA_SUCCESS;
    CUresult r = dev->cu->mem_alloc(&buf->ptr, size);
    if (relaxed)
        dev->cu->thread_exchange_capture_mode(&mode);
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
    fdl__children_add(&dev->children, &buf->child, FDL__BUFFER, buffer_child_destroy);
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
    int entered = buf->ptr && fdl__device_enter(buf->dev, NULL) == FDL_OK;
    if (entered && defer_in_capture(buf))
        return;
    if (entered)
        fdl__device_flush_deferred(buf->dev);
    buffer_free(buf, &buf->dev->children, entered);
}

int fdl_buffer_release(fdl_buffer *buf, fdl_error *err)
{
    if (!buf)
        return FDL_OK;
    int rc = buf->ptr ? fdl__device_enter(buf->dev, err) : FDL_OK;
    if (rc == FDL_OK && defer_in_capture(buf))
        return FDL_OK;
    if (rc == FDL_OK && buf->ptr) {
        /* work queued on any stream may still use the memory */
        CUresult r = buf->dev->cu->ctx_synchronize();
        if (r != CUDA_SUCCESS)
            rc = fdl__device_error(err, buf->dev, r, "cuCtxSynchronize");
    }
    fdl_buffer_destroy(buf); /* freed all the same after a failed wait */
    return rc;
}

uint64_t fdl_buffer_address(const fdl_buffer *buf)
{
    return buf ? (uint64_t)buf->ptr : 0;
}

size_t fdl_buffer_size(const fdl_buffer *buf)
{
    return buf ? buf->size : 0;
}

fdl_device *fdl_buffer_device(const fdl_buffer *buf)
{
    return buf ? buf->dev : NULL;
}

/*
 * [offset, offset + size) must lie within the buffer; checked without overflow. @p role is ""
 * or "source " / "destination " for copies between buffers.
 */
static int check_range(const fdl_buffer *buf, size_t offset, size_t size, const char *role,
                       fdl_error *err)
{
    size_t end;
    if (!fdl__size_add(&end, offset, size) || end > buf->size)
        return fdl__fail(err, FDL_EINVAL, "copy of %zu bytes at offset %zu exceeds %sbuffer of "
                         "%zu bytes", size, offset, role, buf->size);
    return FDL_OK;
}

/* Both ends of a device-to-device copy: same device, in range, no overlap within one buffer. */
static int check_copy(const fdl_buffer *dst, size_t dst_offset, const fdl_buffer *src,
                      size_t src_offset, size_t size, fdl_error *err)
{
    if (dst->dev->ctx != src->dev->ctx)
        return fdl__fail(err, FDL_EINVAL, "cannot copy between buffers of device %d and device "
                         "%d", src->dev->info.ordinal, dst->dev->info.ordinal);
    int rc = check_range(src, src_offset, size, "source ", err);
    if (rc == FDL_OK)
        rc = check_range(dst, dst_offset, size, "destination ", err);
    if (rc != FDL_OK)
        return rc;
    /* both ranges are in bounds, so these sums cannot overflow */
    if (dst == src && size && dst_offset < src_offset + size && src_offset < dst_offset + size)
        return fdl__fail(err, FDL_EINVAL, "overlapping copy of %zu bytes within one buffer "
                         "(from offset %zu to offset %zu)", size, src_offset, dst_offset);
    return FDL_OK;
}

int fdl_buffer_write(fdl_buffer *buf, size_t offset, const void *src, size_t size,
                     fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || !FDL__CHECK_ARG(src || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_write: buf or src is NULL");
    int rc = check_range(buf, offset, size, "", err);
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
    int rc = check_range(buf, offset, size, "", err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(buf->dev, err)) != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memcpy_dtoh(dst, buf->ptr + offset, size);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemcpyDtoH");
    return FDL_OK;
}

int fdl_buffer_copy(fdl_buffer *dst, size_t dst_offset, const fdl_buffer *src, size_t src_offset,
                    size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(dst) || !FDL__CHECK_ARG(src))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_copy: dst or src is NULL");
    int rc = check_copy(dst, dst_offset, src, src_offset, size, err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(dst->dev, err)) != FDL_OK)
        return rc;
    CUresult r = dst->dev->cu->memcpy_dtod(dst->ptr + dst_offset, src->ptr + src_offset, size);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dst->dev, r, "cuMemcpyDtoD");
    /* device-to-device copies do not wait for themselves: finish it here */
    r = dst->dev->cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dst->dev, r, "cuCtxSynchronize");
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

int fdl_buffer_write_async(fdl_buffer *buf, size_t offset, const void *src, size_t size,
                           fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || !FDL__CHECK_ARG(src || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_write_async: buf or src is NULL");
    CUstream s;
    int rc = check_range(buf, offset, size, "", err);
    if (rc == FDL_OK)
        rc = fdl__stream_of(&s, stream, buf->dev, "fdl_buffer_write_async", err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(buf->dev, err)) != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memcpy_htod_async(buf->ptr + offset, src, size, s);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemcpyHtoDAsync");
    return FDL_OK;
}

int fdl_buffer_read_async(const fdl_buffer *buf, size_t offset, void *dst, size_t size,
                          fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || !FDL__CHECK_ARG(dst || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_read_async: buf or dst is NULL");
    CUstream s;
    int rc = check_range(buf, offset, size, "", err);
    if (rc == FDL_OK)
        rc = fdl__stream_of(&s, stream, buf->dev, "fdl_buffer_read_async", err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(buf->dev, err)) != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memcpy_dtoh_async(dst, buf->ptr + offset, size, s);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemcpyDtoHAsync");
    return FDL_OK;
}

int fdl_buffer_copy_async(fdl_buffer *dst, size_t dst_offset, const fdl_buffer *src,
                          size_t src_offset, size_t size, fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(dst) || !FDL__CHECK_ARG(src))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_copy_async: dst or src is NULL");
    CUstream s;
    int rc = check_copy(dst, dst_offset, src, src_offset, size, err);
    if (rc == FDL_OK)
        rc = fdl__stream_of(&s, stream, dst->dev, "fdl_buffer_copy_async", err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(dst->dev, err)) != FDL_OK)
        return rc;
    CUresult r = dst->dev->cu->memcpy_dtod_async(dst->ptr + dst_offset, src->ptr + src_offset,
                                                 size, s);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dst->dev, r, "cuMemcpyDtoDAsync");
    return FDL_OK;
}

int fdl__copy_async(fdl_device *dev, uint64_t dst, uint64_t src, size_t size, fdl_stream *stream,
                    const char *what, fdl_error *err)
{
    if (size && (!dst || !src))
        return fdl__fail(err, FDL_EINVAL, "%s: a NULL device address", what);
    CUstream s;
    int rc = fdl__stream_of(&s, stream, dev, what, err);
    if (rc != FDL_OK || !size)
        return rc;
    if ((rc = fdl__device_enter(dev, err)) != FDL_OK)
        return rc;
    CUresult r = dev->cu->memcpy_dtod_async((CUdeviceptr)dst, (CUdeviceptr)src, size, s);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuMemcpyDtoDAsync");
    return FDL_OK;
}

int fdl_buffer_zero_async(fdl_buffer *buf, fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_zero_async: buf is NULL");
    CUstream s;
    int rc = fdl__stream_of(&s, stream, buf->dev, "fdl_buffer_zero_async", err);
    if (rc == FDL_OK)
        rc = fdl__device_enter(buf->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = buf->dev->cu->memset_d8_async(buf->ptr, 0, buf->size, s);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, buf->dev, r, "cuMemsetD8Async");
    return FDL_OK;
}

/* ---- page-locked host buffers --------------------------------------------------------------- */

static void host_buffer_child_destroy(fdl__child *c)
{
    fdl_host_buffer_destroy((fdl_host_buffer *)c);
}

int fdl_host_buffer_create(fdl_host_buffer **out, fdl_device *dev, size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_host_buffer_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_host_buffer_create: dev is NULL");
    if (!size)
        return fdl__fail(err, FDL_EINVAL, "cannot allocate a host buffer of 0 bytes");
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    fdl_host_buffer *hb = calloc(1, sizeof *hb);
    if (!hb)
        return fdl__fail(err, FDL_ENOMEM, "out of memory creating a host buffer");
    hb->dev = dev;
    CUresult r = dev->cu->mem_host_alloc(&hb->ptr, size, CU_MEMHOSTALLOC_PORTABLE);
    if (r != CUDA_SUCCESS) {
        free(hb);
        rc = fdl__device_error(err, dev, r, "cuMemHostAlloc");
        if (err && r == CUDA_ERROR_OUT_OF_MEMORY) {
            char detail[FDL_ERROR_MESSAGE_MAX];
            fdl__strlcpy(detail, err->message, sizeof detail);
            fdl__fail(err, FDL_ECUDA, "allocating %zu bytes of page-locked host memory: %s",
                      size, detail);
            err->backend_code = (int)r;
        }
        return rc;
    }
    hb->size = size;
    fdl__children_add(&dev->children, &hb->child, FDL__HOST_BUFFER, host_buffer_child_destroy);
    *out = hb;
    return FDL_OK;
}

void fdl_host_buffer_destroy(fdl_host_buffer *hb)
{
    if (!hb)
        return;
    if (hb->ptr && fdl__device_enter(hb->dev, NULL) == FDL_OK)
        hb->dev->cu->mem_free_host(hb->ptr);
    fdl__children_remove(&hb->dev->children, &hb->child);
    free(hb);
}

void *fdl_host_buffer_data(const fdl_host_buffer *hb)
{
    return hb ? hb->ptr : NULL;
}

size_t fdl_host_buffer_size(const fdl_host_buffer *hb)
{
    return hb ? hb->size : 0;
}
