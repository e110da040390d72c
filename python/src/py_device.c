/*
 * py_device: Device (its method table in _fdlink.c, after the types it makes), Stream, Buffer
 * and DLHold (the _fdlink extension: py_fdlink.h).
 */
#include "py_fdlink.h"

/* ---- Device ----------------------------------------------------------------------------- */

PyObject *Device_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)kwds;
    int ordinal = -1;
    if (!PyArg_ParseTuple(args, "|i:Device", &ordinal))
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_device *dev = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fdl_device_open(&dev, ordinal, &err);
    Py_END_ALLOW_THREADS
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    DeviceObject *self = (DeviceObject *)PyType_GenericAlloc(type, 0);
    if (!self) {
        fdl_device_destroy(dev);
        return NULL;
    }
    self->dev = dev;
    self->ordinal = fdl_device_ordinal(dev);
    return (PyObject *)self;
}

void Device_dealloc(DeviceObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_event_destroy(self->order);
    fdl_device_destroy(self->dev);
    PyObject_Free(self);
    Py_DECREF(tp);
}

PyObject *Device_repr(DeviceObject *self)
{
    return PyUnicode_FromFormat("<fdlink.Device %d: %s (%s)>", self->ordinal,
                                fdl_device_name(self->dev), fdl_device_arch(self->dev));
}

PyObject *Device_info(DeviceObject *self, void *c)
{
    (void)c;
    fdl_device_info i;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_get_info(self->dev, &i, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return Py_BuildValue("{s:i,s:s,s:s,s:i,s:i,s:n,s:i,s:i,s:I,s:(III),s:(III),s:n,s:n,s:O}",
                         "ordinal", i.ordinal, "name", i.name, "arch", i.arch, "cc", i.cc,
                         "driver_version", i.driver_version, "total_memory",
                         (Py_ssize_t)i.total_memory, "sm_count", i.sm_count, "warp_size",
                         i.warp_size, "max_threads_per_block", i.max_threads_per_block,
                         "max_block", i.max_block.x, i.max_block.y, i.max_block.z, "max_grid",
                         i.max_grid.x, i.max_grid.y, i.max_grid.z, "max_shared_per_block",
                         (Py_ssize_t)i.max_shared_per_block, "max_shared_per_block_optin",
                         (Py_ssize_t)i.max_shared_per_block_optin, "cooperative_launch",
                         i.cooperative_launch ? Py_True : Py_False);
}

PyObject *Device_ordinal(DeviceObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->ordinal);
}

/* The C objects' addresses, for fdlink.jax's XLA FFI handler (a C caller of libfdlink in the same
 * process): valid while the Python object lives. */
PyObject *Device_c_handle(DeviceObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(self->dev);
}

PyObject *Device_arch(DeviceObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(fdl_device_arch(self->dev));
}

PyObject *Device_synchronize(DeviceObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    return none_or_raise(fdl_device_synchronize(self->dev, &err), &err);
}

/* ---- Stream ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_stream *stream;
    PyObject *device;
    /* a wrapped stream's owner (a cuda.core, CuPy or PyTorch stream object), held while the
     * wrapper lives: the library asks every stream of the device whether it is being captured
     * (fdl__device_capturing), and the owner's collection must not destroy the CUstream first */
    PyObject *owner;
} StreamObject;

/* The Stream of @p dev over @p s, made with status @p rc: the exception for @p err when that
 * failed; @p s destroyed when the object cannot be made. */
static PyObject *stream_object(DeviceObject *dev, int rc, const fdl_error *err, fdl_stream *s)
{
    if (rc != FDL_OK)
        return raise_fdl(rc, err, NULL);
    StreamObject *o = (StreamObject *)PyType_GenericAlloc(g_state->StreamType, 0);
    if (!o) {
        fdl_stream_destroy(s);
        return NULL;
    }
    o->stream = s;
    o->device = (PyObject *)dev;
    Py_INCREF(dev);
    return (PyObject *)o;
}

PyObject *Device_stream(DeviceObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *s = NULL;
    int rc = fdl_stream_create(&s, self->dev, &err);
    return stream_object(self, rc, &err, s);
}

static void Stream_dealloc(StreamObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_stream_destroy(self->stream);
    Py_XDECREF(self->owner); /* after the wrapper is gone from the device's streams */
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* A Stream over another library's CUstream @p handle (an int; 1 legacy, 2 per-thread), holding
 * @p owner (the object it came from; NULL or None for none) while it lives. */
PyObject *stream_wrap(DeviceObject *dev, PyObject *handle, PyObject *owner)
{
    unsigned long long h = PyLong_Check(handle) ? PyLong_AsUnsignedLongLong(handle) : 0;
    if (!PyLong_Check(handle) || PyErr_Occurred()) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError, "a stream handle must be an int from 0 to 2**64-1");
    }
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *st = NULL;
    int rc = fdl_stream_wrap(&st, dev->dev, (void *)(uintptr_t)h, &err);
    PyObject *o = stream_object(dev, rc, &err, st);
    if (o && owner && owner != Py_None) {
        ((StreamObject *)o)->owner = owner;
        Py_INCREF(owner);
    }
    return o;
}

/* Device.wrap_stream(handle[, owner]) */
PyObject *Device_wrap_stream(DeviceObject *self, PyObject *args)
{
    PyObject *handle, *owner = NULL;
    if (!PyArg_ParseTuple(args, "O|O:wrap_stream", &handle, &owner))
        return NULL;
    return stream_wrap(self, handle, owner);
}

static PyObject *Stream_handle(StreamObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)fdl_stream_handle(self->stream));
}

static PyObject *Stream_owned(StreamObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(fdl_stream_owned(self->stream));
}

/* cuda.core's stream protocol: (version 0, handle) */
static PyObject *Stream_cuda_stream(StreamObject *self, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("(iK)", 0, (unsigned long long)(uintptr_t)fdl_stream_handle(self->stream));
}

static PyObject *Stream_repr(StreamObject *self)
{
    char h[32];
    snprintf(h, sizeof h, "0x%llx", (unsigned long long)(uintptr_t)fdl_stream_handle(self->stream));
    return PyUnicode_FromFormat("<fdlink.Stream %s (%s) on device %d>", h,
                                fdl_stream_owned(self->stream) ? "owned" : "wrapped",
                                ((DeviceObject *)self->device)->ordinal);
}

static PyObject *Stream_synchronize(StreamObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    return none_or_raise(fdl_stream_synchronize(self->stream, &err), &err);
}

static PyMethodDef Stream_methods[] = {
    {"synchronize", (PyCFunction)Stream_synchronize, METH_NOARGS, "wait for the stream's work"},
    {"__cuda_stream__", (PyCFunction)Stream_cuda_stream, METH_NOARGS, "(0, CUstream handle)"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Stream_getset[] = {
    {"handle", (getter)Stream_handle, NULL, "the CUstream as an int (0: legacy default)", NULL},
    {"owned", (getter)Stream_owned, NULL, "True when fdlink made it, False when wrapped", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot Stream_slots[] = {{Py_tp_dealloc, (void *)Stream_dealloc},
                                     {Py_tp_methods, Stream_methods},
                                     {Py_tp_getset, Stream_getset},
                                     {Py_tp_repr, (void *)Stream_repr},
                                     {Py_tp_doc, "a stream of a device (Device.stream())"},
                                     {0, NULL}};
PyType_Spec Stream_spec = {"fdlink._fdlink.Stream", sizeof(StreamObject), 0,
                                  Py_TPFLAGS_DEFAULT, Stream_slots};

/* The fdl_stream of a launch's stream argument: None for the default stream. */
int stream_of(PyObject *o, fdl_stream **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    if (PyObject_TypeCheck(o, g_state->StreamType)) {
        *out = ((StreamObject *)o)->stream;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "stream must be an fdlink Stream or None, not %s (fdlink.stream() wraps "
                 "another library's stream)", tname(o));
    return -1;
}

/* ---- Buffer ----------------------------------------------------------------------------- */

/*
 * A buffer's memory belongs to a capsule ("fdlink.memory", its context the Device), not to the
 * Buffer: whatever points into the memory holds the capsule (a prepared launch, the arguments of
 * a launch being made, a DLPack capsule until its deleter runs), so Buffer.free() only drops the
 * Buffer's hold, and the memory is released when the last holder lets go. The release waits for
 * the device's queued work first (work queued on any stream may still use the memory), then
 * frees it (cuMemFree).
 */
static void memory_destructor(PyObject *cap)
{
    fdl_buffer *b = PyCapsule_GetPointer(cap, "fdlink.memory");
    PyObject *dev = PyCapsule_GetContext(cap);
    if (b) {
        fdl_error err = FDL_ERROR_INIT;
        (void)fdl_device_synchronize(fdl_buffer_device(b), &err); /* a failed context: freed all the same */
        fdl_buffer_destroy(b);
    }
    Py_XDECREF(dev); /* no Python error is set or cleared: this may run while one is raised */
}

static PyObject *memory_new(fdl_buffer *b, PyObject *device)
{
    PyObject *cap = PyCapsule_New(b, "fdlink.memory", NULL);
    if (!cap) {
        fdl_buffer_destroy(b);
        return NULL;
    }
    Py_INCREF(device);
    if (PyCapsule_SetContext(cap, device) < 0 ||
        PyCapsule_SetDestructor(cap, memory_destructor) < 0) {
        Py_DECREF(device);
        PyCapsule_SetContext(cap, NULL);
        Py_DECREF(cap);
        fdl_buffer_destroy(b);
        return NULL;
    }
    return cap;
}

PyObject *Device_alloc(DeviceObject *self, PyObject *args)
{
    Py_ssize_t size;
    const char *typestr = "|u1";
    PyObject *shape = NULL;
    if (!PyArg_ParseTuple(args, "n|sO:alloc", &size, &typestr, &shape))
        return NULL;
    if (size <= 0)
        return PyErr_Format(PyExc_ValueError, "size must be positive, not %zd", size);
    size_t tl = strlen(typestr);
    if (tl < 3 || tl > 7 || !strchr("<>|=", typestr[0]))
        return PyErr_Format(PyExc_ValueError, "typestr %s is not an array-interface type string",
                            typestr);
    long itemsize = strtol(typestr + 2, NULL, 10);
    if (itemsize <= 0 || size % itemsize != 0)
        return PyErr_Format(PyExc_ValueError, "size %zd is not a multiple of %s's %ld bytes",
                            size, typestr, itemsize);
    fdl_error err = FDL_ERROR_INIT;
    fdl_buffer *b = NULL;
    int rc = fdl_buffer_create(&b, self->dev, (size_t)size, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    BufferObject *o = (BufferObject *)PyType_GenericAlloc(g_state->BufferType, 0);
    if (!o) {
        fdl_buffer_destroy(b);
        return NULL;
    }
    o->mem = memory_new(b, (PyObject *)self);
    if (!o->mem) {
        Py_DECREF(o);
        return NULL;
    }
    o->buf = b;
    o->device = (PyObject *)self;
    Py_INCREF(self);
    memcpy(o->typestr, typestr, tl + 1);
    o->itemsize = itemsize;
    o->shape = shape && shape != Py_None ? PySequence_Tuple(shape)
                                         : Py_BuildValue("(n)", size / itemsize);
    if (!o->shape) {
        Py_DECREF(o);
        return NULL;
    }
    /* the interfaces it exports must describe the memory: shape * itemsize within the size */
    unsigned long long count = 1;
    for (Py_ssize_t i = 0; i < PyTuple_Size(o->shape); i++) {
        PyObject *d = PyTuple_GetItem(o->shape, i);
        long long v = PyLong_Check(d) ? PyLong_AsLongLong(d) : -1;
        if (v < 0 || (v && count > (unsigned long long)size / (unsigned long long)v)) {
            PyErr_Clear();
            Py_DECREF(o);
            return PyErr_Format(PyExc_ValueError, "shape %R does not fit %zd bytes of %s", shape,
                                size, typestr);
        }
        count *= (unsigned long long)v;
    }
    if (count * (unsigned long long)itemsize > (unsigned long long)size) {
        Py_DECREF(o);
        return PyErr_Format(PyExc_ValueError, "shape %R does not fit %zd bytes of %s", shape,
                            size, typestr);
    }
    return (PyObject *)o;
}

static void Buffer_dealloc(BufferObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    Py_XDECREF(self->mem); /* the memory itself goes with its last holder */
    Py_XDECREF(self->device);
    Py_XDECREF(self->shape);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static int buffer_live(BufferObject *self)
{
    if (self->buf)
        return 0;
    PyErr_SetString(PyExc_ValueError, "the buffer was freed");
    return -1;
}

static PyObject *Buffer_write(BufferObject *self, PyObject *args)
{
    PyObject *src;
    Py_ssize_t offset = 0;
    if (!PyArg_ParseTuple(args, "O|n:write", &src, &offset) || buffer_live(self) < 0)
        return NULL;
    const char *data;
    Py_ssize_t size;
    if (bytes_of(src, &data, &size, "data") < 0)
        return NULL;
    if (offset < 0)
        return PyErr_Format(PyExc_ValueError, "offset must not be negative");
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_buffer_write(self->buf, (size_t)offset, data, (size_t)size, &err);
    return none_or_raise(rc, &err);
}

static PyObject *Buffer_read(BufferObject *self, PyObject *args)
{
    Py_ssize_t size = -1, offset = 0;
    if (!PyArg_ParseTuple(args, "|nn:read", &size, &offset) || buffer_live(self) < 0)
        return NULL;
    if (size < 0)
        size = (Py_ssize_t)fdl_buffer_size(self->buf) - offset;
    if (offset < 0 || size < 0)
        return PyErr_Format(PyExc_ValueError, "offset and size must not be negative");
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (!out)
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_buffer_read(self->buf, (size_t)offset, PyBytes_AsString(out), (size_t)size,
                             &err);
    if (rc != FDL_OK) {
        Py_DECREF(out);
        return raise_fdl(rc, &err, NULL);
    }
    return out;
}

static PyObject *Buffer_zero(BufferObject *self, PyObject *unused)
{
    (void)unused;
    if (buffer_live(self) < 0)
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    return none_or_raise(fdl_buffer_zero(self->buf, &err), &err);
}

/* free(): the Buffer lets go of its memory now; the memory is released at once when nothing
 * else holds it, else when the last prepared launch or DLPack capsule pointing into it lets go
 * (memory_destructor). The Buffer is unusable from here (reads, writes, new launches refused). */
static PyObject *Buffer_free(BufferObject *self, PyObject *unused)
{
    (void)unused;
    self->buf = NULL;
    Py_CLEAR(self->mem);
    Py_RETURN_NONE;
}

static PyObject *Buffer_address(BufferObject *self, void *c)
{
    (void)c;
    return PyLong_FromUnsignedLongLong(self->buf ? fdl_buffer_address(self->buf) : 0);
}

static PyObject *Buffer_nbytes(BufferObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(self->buf ? fdl_buffer_size(self->buf) : 0);
}

static PyObject *Buffer_typestr(BufferObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->typestr);
}

static PyObject *Buffer_shape(BufferObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->shape);
    return self->shape;
}

static PyObject *Buffer_cai(BufferObject *self, void *c)
{
    (void)c;
    if (buffer_live(self) < 0)
        return NULL;
    /* fdlink's synchronous copies and default-stream launches need no stream (None) */
    return Py_BuildValue("{s:O,s:s,s:(KO),s:i,s:O,s:O}", "shape", self->shape, "typestr",
                         self->typestr, "data",
                         (unsigned long long)fdl_buffer_address(self->buf), Py_False, "version",
                         3, "strides", Py_None, "stream", Py_None);
}

/* The deleters of exported tensors: the memory's holder (manager_ctx) dropped, whatever thread
 * the consumer calls them from, with any exception of the caller's kept. */
static void buffer_dl_release(void *ctx, void *m)
{
    if (Py_IsInitialized()) { /* at exit, the memory goes with the process */
        PyGILState_STATE g = PyGILState_Ensure();
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        Py_XDECREF((PyObject *)ctx);
        PyErr_Restore(et, ev, tb);
        PyGILState_Release(g);
    }
    free(m);
}

static void buffer_dl_deleter(fdl_py_dlmanaged *m)
{
    buffer_dl_release(m->manager_ctx, m);
}

static void buffer_dl_deleter_v(fdl_py_dlversioned *m)
{
    buffer_dl_release(m->manager_ctx, m);
}

static void dltensor_capsule_destructor(PyObject *cap)
{
    /* a capsule never consumed still owns its tensor (the DLPack rule) */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (PyCapsule_IsValid(cap, "dltensor")) {
        fdl_py_dlmanaged *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m && m->deleter)
            m->deleter(m);
    } else if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        fdl_py_dlversioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (m && m->deleter)
            m->deleter(m);
    }
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

static int dl_dtype_of(const char *typestr, fdl_py_dldtype *dt)
{
    char k = typestr[1];
    long size = strtol(typestr + 2, NULL, 10);
    dt->lanes = 1;
    dt->bits = (uint8_t)(size * 8);
    switch (k) {
    case 'i': dt->code = DL_INT; return 0;
    case 'u': dt->code = DL_UINT; return 0;
    case 'f': dt->code = DL_FLOAT; return 0;
    case 'b': dt->code = DL_BOOL; return 0;
    default: return -1;
    }
}

/* The DLPack version a consumer's max_version asks for: 1 for a versioned capsule (a tuple
 * (major, minor) with major >= 1), 0 for the legacy one (None, or an older version). */
static int dl_wants_versioned(PyObject *max_version)
{
    if (max_version == Py_None)
        return 0;
    long major = -1, minor = -1;
    if (!PyTuple_Check(max_version) || PyTuple_Size(max_version) != 2 ||
        !PyLong_Check(PyTuple_GetItem(max_version, 0)) ||
        !PyLong_Check(PyTuple_GetItem(max_version, 1)) ||
        ((major = PyLong_AsLong(PyTuple_GetItem(max_version, 0))) == -1 && PyErr_Occurred()) ||
        ((minor = PyLong_AsLong(PyTuple_GetItem(max_version, 1))) == -1 && PyErr_Occurred()) ||
        major < 0 || minor < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "__dlpack__: max_version must be a tuple (major, minor) of "
                     "non-negative ints, not %R", max_version);
        return -1;
    }
    return major >= 1;
}

/*
 * __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None), as the array API
 * standard says: a versioned capsule ("dltensor_versioned", DLPack 1.0) when max_version is
 * (1, x) or later, else the legacy one ("dltensor"); dl_device other than this buffer's own
 * device is a BufferError (fdlink copies only within a device); copy=True exports a copy (a new
 * device allocation, flag IS_COPIED), copy=False and None the buffer itself. The capsule holds
 * the memory (not the Buffer): Buffer.free() before the consumer lets go defers the release.
 */
static PyObject *Buffer_dlpack(BufferObject *self, PyObject *args, PyObject *kwds)
{
    static char *kw[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__", kw, &stream, &max_version,
                                     &dl_device, &copy))
        return NULL;
    if (!self->buf)
        return PyErr_Format(PyExc_BufferError, "__dlpack__: the buffer was freed");
    int ordinal = ((DeviceObject *)self->device)->ordinal;
    /* fdlink's buffers are written synchronously or on the default stream: any stream the
     * consumer names is ordered after that work already (-1: no synchronisation asked); 0 is
     * ambiguous (the standard's rule) */
    if (stream != Py_None) {
        long long sv = PyLong_Check(stream) && !PyBool_Check(stream) ? PyLong_AsLongLong(stream)
                                                                      : -2;
        if (sv < -1 || sv == 0) {
            PyErr_Clear();
            return PyErr_Format(PyExc_ValueError, "__dlpack__: stream must be None, -1 or a "
                                "CUDA stream handle (1, 2 or a CUstream; 0 is ambiguous), not "
                                "%R", stream);
        }
    }
    int versioned = dl_wants_versioned(max_version);
    if (versioned < 0)
        return NULL;
    if (dl_device != Py_None) {
        int dtype = -1, did = -1;
        if (!PyTuple_Check(dl_device) || !PyArg_ParseTuple(dl_device, "ii", &dtype, &did)) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError, "__dlpack__: dl_device must be a tuple "
                                "(device_type, device_id), not %R", dl_device);
        }
        if (dtype != DL_CUDA || did != ordinal)
            return PyErr_Format(PyExc_BufferError,
                                "__dlpack__: dl_device (%d, %d) asked for, but the buffer is on "
                                "CUDA device %d (%d, %d) and fdlink exports no copy to another "
                                "device", dtype, did, ordinal, DL_CUDA, ordinal);
    }
    int do_copy = 0;
    if (copy != Py_None) {
        if (!PyBool_Check(copy))
            return PyErr_Format(PyExc_TypeError, "__dlpack__: copy must be True, False or None, "
                                "not %R", copy);
        do_copy = copy == Py_True;
    }
    fdl_py_dldtype dt;
    if (dl_dtype_of(self->typestr, &dt) < 0)
        return PyErr_Format(PyExc_BufferError, "type %s has no DLPack equivalent", self->typestr);
    Py_ssize_t ndim = PyTuple_Size(self->shape);
    PyObject *mem = self->mem;
    Py_INCREF(mem);
    if (do_copy) {
        fdl_error err = FDL_ERROR_INIT;
        fdl_buffer *b = NULL;
        int rc = fdl_buffer_create(&b, fdl_buffer_device(self->buf), fdl_buffer_size(self->buf),
                                   &err);
        if (rc == FDL_OK)
            rc = fdl_buffer_copy(b, 0, self->buf, 0, fdl_buffer_size(self->buf), &err);
        Py_DECREF(mem);
        if (rc != FDL_OK) {
            fdl_buffer_destroy(b);
            return raise_fdl(rc, &err, NULL);
        }
        if (!(mem = memory_new(b, self->device)))
            return NULL;
    }
    size_t head = versioned ? sizeof(fdl_py_dlversioned) : sizeof(fdl_py_dlmanaged);
    void *m = calloc(1, head + (size_t)(ndim ? ndim : 1) * sizeof(int64_t));
    if (!m) {
        Py_DECREF(mem);
        return PyErr_NoMemory();
    }
    int64_t *shape = (int64_t *)((char *)m + head);
    for (Py_ssize_t i = 0; i < ndim; i++)
        shape[i] = PyLong_AsLongLong(PyTuple_GetItem(self->shape, i));
    if (PyErr_Occurred()) {
        free(m);
        Py_DECREF(mem);
        return NULL;
    }
    fdl_py_dltensor *t;
    if (versioned) {
        fdl_py_dlversioned *v = m;
        v->version.major = 1;
        v->version.minor = 0;
        v->manager_ctx = mem;
        v->deleter = buffer_dl_deleter_v;
        v->flags = do_copy ? DL_FLAG_IS_COPIED : 0;
        t = &v->dl_tensor;
    } else {
        fdl_py_dlmanaged *u = m;
        u->manager_ctx = mem;
        u->deleter = buffer_dl_deleter;
        t = &u->dl_tensor;
    }
    t->data = (void *)(uintptr_t)fdl_buffer_address(PyCapsule_GetPointer(mem, "fdlink.memory"));
    t->device.device_type = DL_CUDA;
    t->device.device_id = ordinal;
    t->ndim = (int32_t)ndim;
    t->dtype = dt;
    t->shape = shape;
    t->strides = NULL;
    t->byte_offset = 0;
    PyObject *cap = PyCapsule_New(m, versioned ? "dltensor_versioned" : "dltensor",
                                  dltensor_capsule_destructor);
    if (!cap)
        buffer_dl_release(mem, m);
    return cap;
}

static PyObject *Buffer_repr(BufferObject *self)
{
    if (!self->buf)
        return PyUnicode_FromString("<fdlink.Buffer (freed)>");
    char at[32];
    snprintf(at, sizeof at, "0x%llx", (unsigned long long)fdl_buffer_address(self->buf));
    return PyUnicode_FromFormat("<fdlink.Buffer %s %R, %zu bytes at %s on device %d>",
                                self->typestr, self->shape, fdl_buffer_size(self->buf), at,
                                ((DeviceObject *)self->device)->ordinal);
}

static PyObject *Buffer_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Buffer_exit(BufferObject *self, PyObject *args)
{
    (void)args;
    self->buf = NULL;
    Py_CLEAR(self->mem);
    Py_RETURN_NONE;
}

static PyObject *Buffer_dlpack_device(BufferObject *self, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("(ii)", DL_CUDA, ((DeviceObject *)self->device)->ordinal);
}

static PyMethodDef Buffer_methods[] = {
    {"write", (PyCFunction)Buffer_write, METH_VARARGS, "write(data, offset=0): copy bytes in"},
    {"read", (PyCFunction)Buffer_read, METH_VARARGS, "read(size=-1, offset=0) -> bytes"},
    {"zero", (PyCFunction)Buffer_zero, METH_NOARGS, "set every byte to zero"},
    {"free", (PyCFunction)Buffer_free, METH_NOARGS, "free the memory now"},
    {"__enter__", (PyCFunction)Buffer_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Buffer_exit, METH_VARARGS, "free the memory"},
    {"__dlpack__", (PyCFunction)(void (*)(void))Buffer_dlpack, METH_VARARGS | METH_KEYWORDS,
     "DLPack export"},
    {"__dlpack_device__", (PyCFunction)Buffer_dlpack_device, METH_NOARGS, "(2, ordinal)"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Buffer_getset[] = {
    {"address", (getter)Buffer_address, NULL, "device address", NULL},
    {"nbytes", (getter)Buffer_nbytes, NULL, "size in bytes", NULL},
    {"typestr", (getter)Buffer_typestr, NULL, "element type (array interface)", NULL},
    {"shape", (getter)Buffer_shape, NULL, "shape", NULL},
    {"__cuda_array_interface__", (getter)Buffer_cai, NULL, "CUDA array interface v3", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMemberDef Buffer_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(BufferObject, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};
static PyType_Slot Buffer_slots[] = {{Py_tp_dealloc, (void *)Buffer_dealloc},
                                     {Py_tp_members, Buffer_members},
                                     {Py_tp_methods, Buffer_methods},
                                     {Py_tp_getset, Buffer_getset},
                                     {Py_tp_doc, "device memory (Device.alloc())"},
                                     {Py_tp_repr, (void *)Buffer_repr},
                                     {0, NULL}};
PyType_Spec Buffer_spec = {"fdlink._fdlink.Buffer", sizeof(BufferObject), 0,
                                  Py_TPFLAGS_DEFAULT, Buffer_slots};

/* ---- DLHold: a consumed DLPack tensor, its deleter called when the holder dies ----------- */

/* The producer's deleter, once: with the exception being raised (if any) set aside while it runs
 * (a deleter may run Python code), and restored after. */
static void DLHold_dealloc(DLHoldObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    void *m = self->m;
    self->m = NULL;
    if (m) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (self->versioned) {
            fdl_py_dlversioned *v = m;
            if (v->deleter)
                v->deleter(v);
        } else {
            fdl_py_dlmanaged *u = m;
            if (u->deleter)
                u->deleter(u);
        }
        if (PyErr_Occurred())
            PyErr_WriteUnraisable((PyObject *)self);
        PyErr_Restore(et, ev, tb);
    }
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyType_Slot DLHold_slots[] = {{Py_tp_dealloc, (void *)DLHold_dealloc}, {0, NULL}};
PyType_Spec DLHold_spec = {"fdlink._fdlink.DLHold", sizeof(DLHoldObject), 0,
                                  Py_TPFLAGS_DEFAULT, DLHold_slots};
