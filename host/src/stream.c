/* Streams and events. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "driver.h"
#include "internal.h"

struct fdl_event {
    fdl__child child; /* first: owned by the device */
    fdl_device *dev;
    CUevent event;
    int recorded;
};

int fdl__stream_of(CUstream *out, const fdl_stream *stream, const fdl_device *dev,
                   const char *what, fdl_error *err)
{
    *out = NULL;
    if (!stream)
        return FDL_OK;
    if (stream->dev->ctx != dev->ctx)
        return fdl__fail(err, FDL_EINVAL, "%s: the stream belongs to device %d, not device %d",
                         what, stream->dev->info.ordinal, dev->info.ordinal);
    *out = stream->stream;
    return FDL_OK;
}

static void stream_child_destroy(fdl__child *c)
{
    fdl_stream_destroy((fdl_stream *)c);
}

int fdl_stream_create(fdl_stream **out, fdl_device *dev, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_create: dev is NULL");
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    fdl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return fdl__fail(err, FDL_ENOMEM, "out of memory creating a stream");
    s->dev = dev;
    /* CU_STREAM_DEFAULT: ordered with the legacy default stream, unlike CU_STREAM_NON_BLOCKING */
    CUresult r = dev->cu->stream_create(&s->stream, CU_STREAM_DEFAULT);
    if (r != CUDA_SUCCESS) {
        free(s);
        return fdl__device_error(err, dev, r, "cuStreamCreate");
    }
    s->owned = 1;
    fdl__children_add(&dev->children, &s->child, FDL__STREAM, stream_child_destroy);
    *out = s;
    return FDL_OK;
}

int fdl_stream_wrap(fdl_stream **out, fdl_device *dev, void *handle, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_wrap: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_wrap: dev is NULL");
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    CUstream cs = (CUstream)handle;
    /* the default streams belong to whichever context is current: the device's, at each use */
    if (cs && cs != CU_STREAM_LEGACY && cs != CU_STREAM_PER_THREAD) {
        CUcontext ctx = NULL;
        CUresult r = dev->cu->stream_get_ctx(cs, &ctx);
        if (r != CUDA_SUCCESS)
            return fdl__device_error(err, dev, r, "fdl_stream_wrap: cuStreamGetCtx");
        if (ctx != dev->ctx)
            return fdl__fail(err, FDL_EINVAL,
                             "fdl_stream_wrap: stream %p belongs to another CUDA context than "
                             "the primary context of device %d",
                             handle, dev->info.ordinal);
    }
    fdl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return fdl__fail(err, FDL_ENOMEM, "out of memory wrapping a stream");
    s->dev = dev;
    s->stream = cs;
    s->owned = 0;
    fdl__children_add(&dev->children, &s->child, FDL__STREAM, stream_child_destroy);
    *out = s;
    return FDL_OK;
}

void *fdl_stream_handle(const fdl_stream *stream)
{
    return stream ? (void *)stream->stream : NULL;
}

fdl_device *fdl_stream_device(const fdl_stream *stream)
{
    return stream ? stream->dev : NULL;
}

int fdl_stream_owned(const fdl_stream *stream)
{
    return stream ? stream->owned : 0;
}

void fdl_stream_destroy(fdl_stream *s)
{
    if (!s)
        return;
    if (s->owned && fdl__device_enter(s->dev, NULL) == FDL_OK)
        s->dev->cu->stream_destroy(s->stream);
    fdl__children_remove(&s->dev->children, &s->child);
    free(s);
}

int fdl__refuse_in_capture(const fdl_device *dev, CUstream stream, const char *what,
                           const char *symbol, fdl_error *err)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!dev->cu->stream_is_capturing || dev->cu->stream_is_capturing(stream, &st) != CUDA_SUCCESS ||
        st == CU_STREAM_CAPTURE_STATUS_NONE)
        return FDL_OK;
    return fdl__error(err, FDL_EINVAL, NULL, 0, 0, symbol,
                      "%s in stream %p, which is being captured into a CUDA graph: waiting would "
                      "invalidate the capture (launch without waiting, and check statuses after "
                      "a replay)", what, (void *)stream);
}

/* 1 when @p stream is being captured (also when the capture was invalidated but not ended; the
 * legacy stream: while a stream that synchronises with it is, which the query does not
 * invalidate, as cuStreamIsCapturing's documentation says), 0 when not or when the driver
 * cannot say. */
static int stream_capturing(const fdl_device *dev, CUstream stream)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = dev->cu->stream_is_capturing(stream, &st);
    if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
        return 1;
    return r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

int fdl__device_capturing(const fdl_device *dev, CUstream *which)
{
    if (!dev->cu->stream_is_capturing)
        return 0;
    CUstream found = NULL;
    if (stream_capturing(dev, CU_STREAM_LEGACY))
        found = CU_STREAM_LEGACY;
    else if (stream_capturing(dev, CU_STREAM_PER_THREAD))
        found = CU_STREAM_PER_THREAD;
    for (const fdl__child *c = dev->children.head; !found && c; c = c->next) {
        const fdl_stream *s = (const fdl_stream *)c;
        if (c->kind == FDL__STREAM && s->stream && stream_capturing(dev, s->stream))
            found = s->stream;
    }
    if (which)
        *which = found;
    return found != NULL;
}

int fdl_stream_is_capturing(fdl_stream *s, int *capturing, fdl_error *err)
{
    if (!FDL__CHECK_ARG(s) || !FDL__CHECK_ARG(capturing))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_is_capturing: stream or capturing is NULL");
    *capturing = 0;
    int rc = fdl__device_enter(s->dev, err);
    if (rc != FDL_OK || !s->dev->cu->stream_is_capturing)
        return rc;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = s->dev->cu->stream_is_capturing(s->stream, &st);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, s->dev, r, "cuStreamIsCapturing");
    *capturing = st != CU_STREAM_CAPTURE_STATUS_NONE;
    return FDL_OK;
}

int fdl_stream_synchronize(fdl_stream *s, fdl_error *err)
{
    if (!FDL__CHECK_ARG(s))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_synchronize: stream is NULL");
    int rc = fdl__device_enter(s->dev, err);
    if (rc != FDL_OK ||
        (rc = fdl__refuse_in_capture(s->dev, s->stream, "fdl_stream_synchronize", NULL, err)) !=
            FDL_OK)
        return rc;
    CUresult r = s->dev->cu->stream_synchronize(s->stream);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, s->dev, r, "cuStreamSynchronize");
    return FDL_OK;
}

static void event_child_destroy(fdl__child *c)
{
    fdl_event_destroy((fdl_event *)c);
}

int fdl_event_create(fdl_event **out, fdl_device *dev, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_event_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev))
        return fdl__fail(err, FDL_EINVAL, "fdl_event_create: dev is NULL");
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    fdl_event *e = calloc(1, sizeof *e);
    if (!e)
        return fdl__fail(err, FDL_ENOMEM, "out of memory creating an event");
    e->dev = dev;
    CUresult r = dev->cu->event_create(&e->event, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        free(e);
        return fdl__device_error(err, dev, r, "cuEventCreate");
    }
    fdl__children_add(&dev->children, &e->child, FDL__EVENT, event_child_destroy);
    *out = e;
    return FDL_OK;
}

void fdl_event_destroy(fdl_event *e)
{
    if (!e)
        return;
    if (fdl__device_enter(e->dev, NULL) == FDL_OK)
        e->dev->cu->event_destroy(e->event);
    fdl__children_remove(&e->dev->children, &e->child);
    free(e);
}

int fdl_event_record(fdl_event *e, fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(e))
        return fdl__fail(err, FDL_EINVAL, "fdl_event_record: event is NULL");
    CUstream s;
    int rc = fdl__stream_of(&s, stream, e->dev, "fdl_event_record", err);
    if (rc == FDL_OK)
        rc = fdl__device_enter(e->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = e->dev->cu->event_record(e->event, s);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, e->dev, r, "cuEventRecord");
    e->recorded = 1;
    return FDL_OK;
}

static int wait_event(fdl_event *e, const char *which, fdl_error *err)
{
    if (!e->recorded)
        return fdl__fail(err, FDL_EINVAL, "the %sevent was never recorded", which);
    int rc = fdl__device_enter(e->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = e->dev->cu->event_synchronize(e->event);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, e->dev, r, "cuEventSynchronize");
    return FDL_OK;
}

int fdl_stream_wait_event(fdl_stream *stream, fdl_event *e, fdl_error *err)
{
    if (!FDL__CHECK_ARG(e))
        return fdl__fail(err, FDL_EINVAL, "fdl_stream_wait_event: event is NULL");
    CUstream s;
    int rc = fdl__stream_of(&s, stream, e->dev, "fdl_stream_wait_event", err);
    if (rc == FDL_OK)
        rc = fdl__device_enter(e->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = e->dev->cu->stream_wait_event(s, e->event, 0);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, e->dev, r, "cuStreamWaitEvent");
    return FDL_OK;
}

int fdl_event_synchronize(fdl_event *e, fdl_error *err)
{
    if (!FDL__CHECK_ARG(e))
        return fdl__fail(err, FDL_EINVAL, "fdl_event_synchronize: event is NULL");
    return wait_event(e, "", err);
}

int fdl_event_elapsed_ms(float *ms, fdl_event *start, fdl_event *end, fdl_error *err)
{
    if (!FDL__CHECK_ARG(ms) || !FDL__CHECK_ARG(start) || !FDL__CHECK_ARG(end))
        return fdl__fail(err, FDL_EINVAL, "fdl_event_elapsed_ms: ms, start or end is NULL");
    *ms = 0.0f;
    if (start->dev->ctx != end->dev->ctx)
        return fdl__fail(err, FDL_EINVAL,
                         "the start event belongs to device %d and the end event to device %d",
                         start->dev->info.ordinal, end->dev->info.ordinal);
    int rc;
    if (!start->recorded)
        return fdl__fail(err, FDL_EINVAL, "the start event was never recorded");
    if ((rc = wait_event(end, "end ", err)) != FDL_OK ||
        (rc = wait_event(start, "start ", err)) != FDL_OK)
        return rc;
    CUresult r = end->dev->cu->event_elapsed_time(ms, start->event, end->event);
    if (r != CUDA_SUCCESS) {
        *ms = 0.0f;
        return fdl__device_error(err, end->dev, r, "cuEventElapsedTime");
    }
    return FDL_OK;
}
