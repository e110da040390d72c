/*
 * py_views: arrays to views (cuda.core's _memoryview): __cuda_array_interface__, DLPack, the
 * attributes of CuPy's arrays and PyTorch's tensors, the classification of argument types (the
 * _fdlink extension: py_fdlink.h).
 */
#include "py_fdlink.h"

/* The 'f4' part of an array-interface typestr (its byte order is not checked: CUDA is
 * little-endian). */
static const char *type_part(const char *typestr)
{
    return (typestr[0] && strchr("<>|=", typestr[0])) ? typestr + 1 : typestr;
}

static int check_contiguous(const arg_ctx *c, const int64_t *shape, const int64_t *strides,
                            Py_ssize_t ndim, int64_t itemsize)
{
    if (!strides)
        return 0;
    int64_t expect = itemsize;
    for (Py_ssize_t i = ndim - 1; i >= 0; i--) {
        if (shape[i] != 1 && strides[i] != expect) {
            PyErr_Format(PyExc_ValueError,
                         ARGFMT " is not C-contiguous (stride %lld in dimension %zd where %lld "
                         "was expected); pass a contiguous copy",
                         ARGV(c), (long long)strides[i], i, (long long)expect);
            return -1;
        }
        if (shape[i] != 0 && expect > INT64_MAX / (shape[i] ? shape[i] : 1)) {
            PyErr_Format(PyExc_ValueError, ARGFMT " has an absurd shape", ARGV(c));
            return -1;
        }
        expect *= shape[i];
    }
    return 0;
}

int check_dtype(const arg_ctx *c, const char *got, const char *want)
{
    if (!want || strcmp(type_part(got), type_part(want)) == 0)
        return 0;
    PyErr_Format(PyExc_TypeError, ARGFMT " has elements of type %s, but %s was declared", ARGV(c),
                 type_part(got), type_part(want));
    return -1;
}

/* An int from a dict entry of a CUDA array interface. */
static int cai_int(PyObject *v, long long *out)
{
    if (!PyLong_Check(v) || PyBool_Check(v))
        return -1;
    *out = PyLong_AsLongLong(v);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* __cuda_array_interface__ (v2 and v3): pointer, bytes, type; checks naming the argument. */
int from_cai(const arg_ctx *c, PyObject *obj, PyObject *cai, const char *want,
                    conv_arg *out)
{
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, ARGFMT ": __cuda_array_interface__ is a %s, not a dict",
                     ARGV(c), tname(cai));
        return -1;
    }
    PyObject *shape = PyDict_GetItemWithError(cai, g_state->s_shape);
    PyObject *typestr = shape ? PyDict_GetItemWithError(cai, g_state->s_typestr) : NULL;
    PyObject *data = typestr ? PyDict_GetItemWithError(cai, g_state->s_data) : NULL;
    if (!data) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError,
                         ARGFMT ": __cuda_array_interface__ lacks 'shape', 'typestr' or 'data'",
                         ARGV(c));
        return -1;
    }
    PyObject *version = PyDict_GetItemWithError(cai, g_state->s_version);
    long long ver = 0;
    if (!version || cai_int(version, &ver) < 0 || ver < 0) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError,
                         ARGFMT ": __cuda_array_interface__ has no integer 'version'", ARGV(c));
        return -1;
    }
    /* versions 2 (strides None for C order) and 3 (the stream): what is read below; 0 and 1
     * predate both, and a version the protocol has not defined is no promise of these keys */
    if (ver != 2 && ver != 3) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ version %lld is not "
                     "one fdlink reads (2 or 3)", ARGV(c), ver);
        return -1;
    }
    PyObject *mask = PyDict_GetItemWithError(cai, g_state->s_mask);
    if (mask && mask != Py_None) {
        PyErr_Format(PyExc_ValueError, ARGFMT " is a masked array, which fdlink cannot pass",
                     ARGV(c));
        return -1;
    }
    const char *ts;
    if (!PyUnicode_Check(typestr) || !(ts = PyUnicode_AsUTF8AndSize(typestr, NULL)) ||
        strlen(ts) < 3 || !strchr("<>|=", ts[0]) || ts[2] < '1' || ts[2] > '9') {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ typestr %R is not a "
                     "type string such as '<f4'", ARGV(c), typestr);
        return -1;
    }
    if (strspn(ts + 2, "0123456789") != strlen(ts + 2) || !strchr("tbiufcmMOSUV", ts[1])) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ typestr %R is not a "
                     "type string of the array interface (such as '<f4')", ARGV(c), typestr);
        return -1;
    }
    long long itemsize = strtoll(ts + 2, NULL, 10);
    if (itemsize <= 0 || itemsize > 64) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": typestr %s has no valid size", ARGV(c), ts);
        return -1;
    }
    if (ts[0] == '>' && itemsize > 1 && !strchr("bSV", ts[1])) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ typestr %s is "
                     "big-endian; CUDA devices are little-endian (byte-swap it first)", ARGV(c),
                     ts);
        return -1;
    }
    if (!PyTuple_Check(shape)) {
        PyErr_Format(PyExc_TypeError, ARGFMT ": __cuda_array_interface__ shape is a %s, not a "
                     "tuple", ARGV(c), tname(shape));
        return -1;
    }
    Py_ssize_t ndim = PyTuple_Size(shape);
    if (ndim > 32) {
        PyErr_Format(PyExc_ValueError, ARGFMT " has %zd dimensions (at most 32)", ARGV(c), ndim);
        return -1;
    }
    int64_t dims[32], strides_v[32];
    uint64_t count = 1;
    int overflow = 0;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        long long d;
        if (cai_int(PyTuple_GetItem(shape, i), &d) < 0 || d < 0) {
            PyErr_Format(PyExc_ValueError,
                         ARGFMT ": __cuda_array_interface__ shape %R is not a tuple of "
                         "non-negative ints", ARGV(c), shape);
            return -1;
        }
        dims[i] = d;
        if (d && count > UINT64_MAX / (uint64_t)d)
            overflow = 1;
        count *= (uint64_t)d;
    }
    if (overflow || count > (UINT64_MAX >> 8) / (uint64_t)itemsize) {
        PyErr_Format(PyExc_ValueError, ARGFMT " has an absurd shape %R", ARGV(c), shape);
        return -1;
    }
    PyObject *strides = PyDict_GetItemWithError(cai, g_state->s_strides);
    if (PyErr_Occurred())
        return -1;
    if (strides && strides != Py_None) {
        if (!PyTuple_Check(strides) || PyTuple_Size(strides) != ndim) {
            PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ strides %R do not "
                         "match shape %R", ARGV(c), strides, shape);
            return -1;
        }
        for (Py_ssize_t i = 0; i < ndim; i++) {
            long long s;
            if (cai_int(PyTuple_GetItem(strides, i), &s) < 0) {
                PyErr_Format(PyExc_ValueError, ARGFMT ": strides %R are not ints", ARGV(c),
                             strides);
                return -1;
            }
            strides_v[i] = s;
        }
        if (count && check_contiguous(c, dims, strides_v, ndim, itemsize) < 0)
            return -1;
    }
    if (!PyTuple_Check(data) || PyTuple_Size(data) != 2) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ data %R is not "
                     "(pointer, read_only)", ARGV(c), data);
        return -1;
    }
    PyObject *ptr_o = PyTuple_GetItem(data, 0);
    unsigned long long ptr = PyLong_Check(ptr_o) ? PyLong_AsUnsignedLongLong(ptr_o) : 0;
    if (!PyLong_Check(ptr_o) || PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ pointer %R is not an "
                     "int from 0 to 2**64-1", ARGV(c), ptr_o);
        return -1;
    }
    if (!ptr && count) {
        PyErr_Format(PyExc_ValueError, ARGFMT " is a NULL pointer with %llu elements", ARGV(c),
                     (unsigned long long)count);
        return -1;
    }
    if (check_dtype(c, ts, want) < 0)
        return -1;
    /* v3: the producer's stream. Stream 1 (the legacy default stream) orders itself with every
     * launch of fdlink's streams (they are blocking streams), so nothing is to be done; any
     * other stream's work is waited for, as the interface asks of consumers. */
    if (ver >= 3) {
        PyObject *stream = PyDict_GetItemWithError(cai, g_state->s_stream);
        if (PyErr_Occurred())
            return -1;
        if (stream && stream != Py_None) {
            long long sh;
            if (cai_int(stream, &sh) < 0 || sh == 0) {
                PyErr_Format(PyExc_ValueError, ARGFMT ": __cuda_array_interface__ stream %R is "
                             "not a stream handle (0 is not allowed)", ARGV(c), stream);
                return -1;
            }
            void *launch_h = c->stream ? fdl_stream_handle(c->stream) : NULL;
            if (sh != 1 && (void *)(uintptr_t)sh != launch_h && c->dev) {
                /* the launch's stream waits for the work queued so far in the producer's (an
                 * event between them; the host does not wait) */
                fdl_stream *st = NULL;
                fdl_error err = FDL_ERROR_INIT;
                int rc = fdl_stream_wrap(&st, c->dev->dev, (void *)(uintptr_t)sh, &err);
                if (rc == FDL_OK && !c->dev->order)
                    rc = fdl_event_create(&c->dev->order, c->dev->dev, &err);
                if (rc == FDL_OK)
                    rc = fdl_event_record(c->dev->order, st, &err);
                if (rc == FDL_OK)
                    rc = fdl_stream_wait_event(c->stream, c->dev->order, &err);
                fdl_stream_destroy(st);
                if (rc != FDL_OK) {
                    raise_fdl(rc, &err, NULL);
                    return -1;
                }
            }
        }
    }
    (void)obj;
    uint64_t p = ptr;
    memcpy(out->value, &p, 8);
    out->size = 8;
    out->is_array = 1;
    out->nbytes = count * (uint64_t)itemsize;
    return 0;
}

static const char *dl_typestr(fdl_py_dldtype t, char *buf)
{
    const char *k = t.code == DL_INT ? "i" : t.code == DL_UINT ? "u" : t.code == DL_FLOAT ? "f"
                  : t.code == DL_BOOL ? "b" : t.code == DL_BFLOAT ? "V" : "?";
    snprintf(buf, 8, "<%s%u", k, (unsigned)(t.bits / 8));
    return buf;
}

/* DLPack: __dlpack_device__ checked, the capsule consumed (renamed used_dltensor), its tensor
 * kept by a DLHold in @p keep until the launch or its preparation dies. */
int from_dlpack(const arg_ctx *c, PyObject *obj, const char *want, int ordinal,
                       PyObject *keep, conv_arg *out)
{
    PyObject *dev = PyObject_CallMethodObjArgs(obj, g_state->s_dlpack_device, NULL);
    if (!dev)
        return -1;
    int dtype = 0, did = 0;
    if (!PyTuple_Check(dev) || !PyArg_ParseTuple(dev, "ii", &dtype, &did)) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, ARGFMT ": __dlpack_device__() gave %R, not (type, id)",
                     ARGV(c), dev);
        Py_DECREF(dev);
        return -1;
    }
    Py_DECREF(dev);
    if (dtype != DL_CUDA && dtype != DL_CUDA_MANAGED) {
        PyErr_Format(PyExc_TypeError,
                     ARGFMT " is in %s memory (DLPack device type %d), not on the GPU; copy it "
                     "to the device first", ARGV(c), dtype == DL_CPU ? "host" : "non-CUDA",
                     dtype);
        return -1;
    }
    if (ordinal >= 0 && did != ordinal) {
        PyErr_Format(PyExc_ValueError, ARGFMT " is on device %d, but the kernel runs on device %d",
                     ARGV(c), did, ordinal);
        return -1;
    }
    /* stream 1: the producer orders its work before the legacy default stream, with which
     * every fdlink stream is ordered. A versioned capsule (DLPack 1.x) is asked for first; a
     * producer that does not know max_version (TypeError) is asked again without it. */
    PyObject *kw = Py_BuildValue("{s:i,s:(ii)}", "stream", 1, "max_version", 1, 0);
    PyObject *empty = PyTuple_New(0);
    PyObject *meth = PyObject_GetAttr(obj, g_state->s_dlpack);
    PyObject *cap = meth && kw && empty ? PyObject_Call(meth, empty, kw) : NULL;
    if (!cap && meth && kw && empty && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        Py_DECREF(kw);
        kw = Py_BuildValue("{s:i}", "stream", 1);
        cap = kw ? PyObject_Call(meth, empty, kw) : NULL;
    }
    Py_XDECREF(meth);
    Py_XDECREF(kw);
    Py_XDECREF(empty);
    if (!cap)
        return -1;
    int versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
    if (!versioned && !PyCapsule_IsValid(cap, "dltensor")) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     ARGFMT ": __dlpack__() gave %R, not an unconsumed 'dltensor' or "
                     "'dltensor_versioned' capsule", ARGV(c), cap);
        Py_DECREF(cap);
        return -1;
    }
    void *mp = PyCapsule_GetPointer(cap, versioned ? "dltensor_versioned" : "dltensor");
    if (!mp) {
        Py_DECREF(cap);
        return -1;
    }
    DLHoldObject *hold = (DLHoldObject *)PyType_GenericAlloc(g_state->DLHoldType, 0);
    if (!hold ||
        PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor") < 0) {
        Py_XDECREF(hold);
        Py_DECREF(cap);
        return -1;
    }
    hold->m = mp; /* from here the deleter is ours to call (once, when the hold dies) */
    hold->versioned = versioned;
    Py_DECREF(cap);
    int rc = PyList_Append(keep, (PyObject *)hold);
    Py_DECREF(hold);
    if (rc < 0)
        return -1;
    uint64_t flags = 0;
    const fdl_py_dltensor *t;
    if (versioned) {
        const fdl_py_dlversioned *v = mp;
        if (v->version.major != 1) {
            PyErr_Format(PyExc_BufferError, ARGFMT ": the DLPack tensor is of version %u.%u; "
                         "fdlink reads version 1", ARGV(c), (unsigned)v->version.major,
                         (unsigned)v->version.minor);
            return -1;
        }
        flags = v->flags;
        t = &v->dl_tensor;
    } else {
        t = &((const fdl_py_dlmanaged *)mp)->dl_tensor;
    }
    if ((flags & DL_FLAG_READ_ONLY) && c->writes) {
        PyErr_Format(PyExc_BufferError, ARGFMT " is read-only (its DLPack tensor says so), but "
                     "fdlink writes it; pass a writable array", ARGV(c));
        return -1;
    }
    if (t->device.device_type != dtype || t->device.device_id != did) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": the DLPack tensor's device (%d, %d) is not the "
                     "one __dlpack_device__ named", ARGV(c), (int)t->device.device_type,
                     (int)t->device.device_id);
        return -1;
    }
    if (t->ndim < 0 || t->ndim > 32 || (t->ndim && !t->shape) || t->dtype.lanes != 1 ||
        t->dtype.bits % 8 || !t->dtype.bits) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": the DLPack tensor is malformed or vectorised",
                     ARGV(c));
        return -1;
    }
    uint64_t count = 1, itemsize = t->dtype.bits / 8;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || (t->shape[i] && count > UINT64_MAX / (uint64_t)t->shape[i])) {
            PyErr_Format(PyExc_ValueError, ARGFMT ": the DLPack tensor has a bad shape", ARGV(c));
            return -1;
        }
        count *= (uint64_t)t->shape[i];
    }
    if (count > (UINT64_MAX >> 8) / itemsize) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": the DLPack tensor has an absurd shape", ARGV(c));
        return -1;
    }
    if (count && check_contiguous(c, t->shape, NULL, t->ndim, (int64_t)itemsize) < 0)
        return -1;
    if (count && t->strides) {
        int64_t bstrides[32];
        for (int32_t i = 0; i < t->ndim; i++) {
            if (t->strides[i] > INT64_MAX / (int64_t)itemsize ||
                t->strides[i] < INT64_MIN / (int64_t)itemsize) {
                PyErr_Format(PyExc_ValueError, ARGFMT " has absurd strides", ARGV(c));
                return -1;
            }
            bstrides[i] = t->strides[i] * (int64_t)itemsize;
        }
        if (check_contiguous(c, t->shape, bstrides, t->ndim, (int64_t)itemsize) < 0)
            return -1;
    }
    char tsbuf[8];
    if (check_dtype(c, dl_typestr(t->dtype, tsbuf), want) < 0)
        return -1;
    uint64_t base = (uint64_t)(uintptr_t)t->data, p = base + t->byte_offset;
    if (t->byte_offset > UINT64_MAX - base || count * itemsize > UINT64_MAX - p) {
        PyErr_Format(PyExc_ValueError, ARGFMT ": the DLPack tensor's byte_offset %llu goes past "
                     "the end of the address space (data 0x%llx, %llu bytes)", ARGV(c),
                     (unsigned long long)t->byte_offset, (unsigned long long)base,
                     (unsigned long long)(count * itemsize));
        return -1;
    }
    if (!p && count) {
        PyErr_Format(PyExc_ValueError, ARGFMT " is a NULL pointer", ARGV(c));
        return -1;
    }
    memcpy(out->value, &p, 8);
    out->size = 8;
    out->is_array = 1;
    out->nbytes = count * itemsize;
    return 0;
}

/* A Python int packed into @p size bytes (declared kind @p k: 'i', 'u', or 0 for either). */

/* @t or a base of it is @module's (or a submodule's) class @name: torch.Tensor, cupy.ndarray
 * (their subclasses too, e.g. torch.nn.Parameter), without importing either. */
static int is_type_named(PyTypeObject *t, const char *module, const char *name)
{
    PyObject *mro = PyObject_GetAttrString((PyObject *)t, "__mro__");
    int found = 0;
    if (!mro || !PyTuple_Check(mro)) {
        PyErr_Clear();
        Py_XDECREF(mro);
        return 0;
    }
    size_t ml = strlen(module);
    for (Py_ssize_t i = 0; !found && i < PyTuple_Size(mro); i++) {
        PyObject *c = PyTuple_GetItem(mro, i);
        PyObject *m = PyObject_GetAttrString(c, "__module__");
        PyObject *n = PyObject_GetAttrString(c, "__name__");
        const char *ms = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8AndSize(m, NULL) : NULL;
        const char *ns = n && PyUnicode_Check(n) ? PyUnicode_AsUTF8AndSize(n, NULL) : NULL;
        if (ms && ns && strncmp(ms, module, ml) == 0 && (ms[ml] == 0 || ms[ml] == '.') &&
            strcmp(ns, name) == 0)
            found = 1;
        Py_XDECREF(m);
        Py_XDECREF(n);
        PyErr_Clear();
    }
    Py_DECREF(mro);
    return found;
}

int classify(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    for (int i = 0; i < g_state->ntypes; i++)
        if (g_state->types[i].type == t)
            return g_state->types[i].kind;
    /* the type's attributes first: a property is not called here (it may raise, or cost) */
    PyObject *tp = (PyObject *)t;
    int kind = K_NONE, cacheable = 1;
    if (is_type_named(t, "torch", "Tensor"))
        kind = K_TORCH;
    else if (is_type_named(t, "cupy", "ndarray"))
        kind = K_CUPY;
    else if (PyObject_HasAttr(tp, g_state->s_cai))
        kind = K_CAI;
    else if (PyObject_HasAttr(tp, g_state->s_dlpack) &&
             PyObject_HasAttr(tp, g_state->s_dlpack_device))
        kind = K_DLPACK;
    else if (PyObject_HasAttr(tp, g_state->s_array_interface))
        /* NumPy: arrays are refused; scalars (np.int32(n), np.float32(x)) are read by value
         * (from_npscalar), other 0-d objects packed by their bytes (from_host) */
        kind = is_type_named(t, "numpy", "generic") ? K_NPSCALAR : K_HOSTARRAY;
    else if (is_type_named(t, "_ctypes", "Structure") || is_type_named(t, "_ctypes", "Union") ||
             is_type_named(t, "_ctypes", "Array"))
        kind = K_CTYPES; /* a struct (or array) by value, as its bytes */
    else {
        /* an instance may have the attribute where its type does not: not cached */
        cacheable = 0;
        if (PyObject_HasAttr(o, g_state->s_cai))
            kind = K_CAI;
        else if (PyObject_HasAttr(o, g_state->s_dlpack) &&
                 PyObject_HasAttr(o, g_state->s_dlpack_device))
            kind = K_DLPACK;
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    if (cacheable && g_state->ntypes < TYPE_CACHE) {
        Py_INCREF(t);
        g_state->types[g_state->ntypes].type = t;
        g_state->types[g_state->ntypes++].kind = kind;
    }
    return kind;
}

/* A tensor that requires grad refuses its interface: say so, naming the argument. */
int refuse_grad(const arg_ctx *c, PyObject *o)
{
    PyObject *rg = PyObject_GetAttrString(o, "requires_grad");
    int yes = rg ? PyObject_IsTrue(rg) : 0;
    Py_XDECREF(rg);
    if (yes != 1) {
        PyErr_Clear();
        return 0;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, ARGFMT " is a tensor that requires grad; pass "
                 "tensor.detach() (fdlink kernels are not differentiable)", ARGV(c));
    return -1;
}

/*
 * Packed bytes for a parameter: @p b (a new reference to a bytes object, taken) is kept in
 * @p keep and passed as it is, any size; it must have exactly the parameter's size when that is
 * known. Nothing is copied into the 16-byte value slot, so nothing is read beyond what @p b
 * holds.
 */

static PyObject *get_or_call(PyObject *o, PyObject *name, int call)
{
    return call ? PyObject_CallMethodObjArgs(o, name, NULL) : PyObject_GetAttr(o, name);
}

static int get_true(PyObject *o, PyObject *name, int call)
{
    PyObject *v = get_or_call(o, name, call);
    if (!v)
        return -1;
    int r = v == Py_True ? 1 : v == Py_False ? 0 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* An int value; -1 with an exception set on failure (a non-int is a TypeError naming @what). */
static long long get_ll(PyObject *o, PyObject *name, int call, const char *what)
{
    PyObject *v = get_or_call(o, name, call);
    if (!v)
        return -1;
    long long r = -1;
    if (PyLong_Check(v))
        r = PyLong_AsLongLong(v);
    else
        PyErr_Format(PyExc_TypeError, "%s is not an int", what);
    Py_DECREF(v);
    return r;
}

/* An unsigned pointer-sized int value (a device address); sets an exception on failure. */
static unsigned long long get_ptr(PyObject *o, PyObject *name, int call, const char *what)
{
    PyObject *v = get_or_call(o, name, call);
    if (!v)
        return 0;
    unsigned long long r = 0;
    if (PyLong_Check(v)) {
        r = PyLong_AsUnsignedLongLong(v);
        if (r == (unsigned long long)-1 && PyErr_Occurred()) {
            /* CuPy's intptr_t may be negative for addresses above 2^63: the same bits */
            PyErr_Clear();
            r = (unsigned long long)PyLong_AsLongLong(v);
        }
    } else {
        PyErr_Format(PyExc_TypeError, "%s is not an int", what);
    }
    Py_DECREF(v);
    return r;
}

/* "float32" (torch.float32's str is "torch.float32") -> "f4"; NULL when unknown. */
static const char *dtype_code(const char *name)
{
    static const struct { const char *n, *c; } t[] = {
        {"float32", "f4"}, {"float64", "f8"}, {"float16", "f2"}, {"int8", "i1"}, {"int16", "i2"},
        {"int32", "i4"}, {"int64", "i8"}, {"uint8", "u1"}, {"uint16", "u2"}, {"uint32", "u4"},
        {"uint64", "u8"}, {"bool", "b1"}, {"bfloat16", "V2"}, {"complex64", "c8"},
        {"complex128", "c16"}};
    const char *dot = strrchr(name, '.');
    if (dot)
        name = dot + 1;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(name, t[i].n) == 0)
            return t[i].c;
    return NULL;
}

/*
 * The type code of @p dt into @p code (24 bytes): NumPy's dtype.str (@p torch 0) or the code
 * of str(torch dtype) (@p torch 1; its name where unknown). Cached by the dtype's identity.
 */
int dtype_of(PyObject *dt, int torch, char *code, long long *itemsize)
{
    for (int i = 0; i < g_state->ndtypes; i++)
        if (g_state->dtypes[i].dtype == dt) {
            memcpy(code, g_state->dtypes[i].code, sizeof g_state->dtypes[i].code);
            if (itemsize)
                *itemsize = g_state->dtypes[i].itemsize;
            return 0;
        }
    long long is = 0;
    if (!torch && (is = get_ll(dt, g_state->s_itemsize, 0, "dtype.itemsize")) == -1 &&
        PyErr_Occurred())
        return -1;
    if (itemsize)
        *itemsize = is;
    PyObject *ds = torch ? PyObject_Str(dt) : PyObject_GetAttr(dt, g_state->s_str);
    const char *name = ds && PyUnicode_Check(ds) ? PyUnicode_AsUTF8AndSize(ds, NULL) : NULL;
    const char *c = name && torch ? dtype_code(name) : name;
    snprintf(code, 24, "%s", c ? c : (name ? name : "?"));
    Py_XDECREF(ds);
    if (PyErr_Occurred())
        return -1;
    if (g_state->ndtypes < DTYPE_CACHE && (torch ? c != NULL : name != NULL)) {
        Py_INCREF(dt);
        g_state->dtypes[g_state->ndtypes].dtype = dt;
        g_state->dtypes[g_state->ndtypes].itemsize = is;
        memcpy(g_state->dtypes[g_state->ndtypes++].code, code, 24);
    }
    return 0;
}

static int check_device(const arg_ctx *c, long long dev, int ordinal)
{
    if (ordinal >= 0 && dev != ordinal) {
        PyErr_Format(PyExc_ValueError, ARGFMT " is on device %lld, but the kernel runs on device "
                     "%d", ARGV(c), dev, ordinal);
        return -1;
    }
    return 0;
}

static int array_out(const arg_ctx *c, unsigned long long ptr, unsigned long long nbytes,
                     conv_arg *out)
{
    if (!ptr && nbytes) {
        PyErr_Format(PyExc_ValueError, ARGFMT " is a NULL pointer", ARGV(c));
        return -1;
    }
    uint64_t a = ptr;
    memcpy(out->value, &a, 8);
    out->size = 8;
    out->is_array = 1;
    out->nbytes = nbytes;
    return 0;
}

/*
 * PyTorch's tensors read directly (is_cuda, requires_grad, is_contiguous(), get_device(),
 * dtype, nbytes, data_ptr()): their __cuda_array_interface__ is Python code that costs
 * microseconds. As for any PyTorch extension, the launch is ordered with PyTorch's work by
 * launching on its current stream (fdlink.stream(torch.cuda.current_stream())); the default
 * stream is PyTorch's default.
 */
int from_torch(const arg_ctx *c, PyObject *o, const char *want, int ordinal,
                      conv_arg *out)
{
    int r = get_true(o, g_state->s_is_cuda, 0);
    if (r < 0)
        return -1;
    if (!r) {
        PyErr_Format(PyExc_TypeError, ARGFMT " is a tensor in host (CPU) memory; move it to the "
                     "GPU first (tensor.cuda())", ARGV(c));
        return -1;
    }
    if ((r = get_true(o, g_state->s_requires_grad, 0)) != 0) {
        if (r > 0)
            PyErr_Format(PyExc_ValueError, ARGFMT " is a tensor that requires grad; pass "
                         "tensor.detach() (fdlink kernels are not differentiable)", ARGV(c));
        return -1;
    }
    if ((r = get_true(o, g_state->s_is_contiguous, 1)) != 1) {
        if (r == 0)
            PyErr_Format(PyExc_ValueError, ARGFMT " is not C-contiguous (a strided view); pass "
                         "tensor.contiguous()", ARGV(c));
        return -1;
    }
    long long dev = get_ll(o, g_state->s_get_device, 1, "get_device()");
    if ((dev == -1 && PyErr_Occurred()) || check_device(c, dev, ordinal) < 0)
        return -1;
    if (want) {
        PyObject *dt = PyObject_GetAttr(o, g_state->s_dtype);
        char got[24];
        int rc = dt ? dtype_of(dt, 1, got, NULL) : -1;
        Py_XDECREF(dt);
        if (rc < 0 || check_dtype(c, got, want) < 0)
            return -1;
    }
    long long nbytes = get_ll(o, g_state->s_nbytes, 0, "nbytes");
    if (nbytes == -1 && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear(); /* a PyTorch before Tensor.nbytes */
        PyObject *n = PyObject_CallMethod(o, "numel", NULL);
        PyObject *es = n ? PyObject_CallMethod(o, "element_size", NULL) : NULL;
        PyObject *prod = es ? PyNumber_Multiply(n, es) : NULL;
        nbytes = prod && PyLong_Check(prod) ? PyLong_AsLongLong(prod) : -1;
        if (prod && !PyLong_Check(prod))
            PyErr_SetString(PyExc_TypeError, "numel() * element_size() is not an int");
        Py_XDECREF(n);
        Py_XDECREF(es);
        Py_XDECREF(prod);
    }
    if (nbytes == -1 && PyErr_Occurred())
        return -1;
    unsigned long long ptr = get_ptr(o, g_state->s_data_ptr, 1, "data_ptr()");
    if (PyErr_Occurred())
        return -1;
    if (nbytes < 0) {
        PyErr_Format(PyExc_ValueError, ARGFMT " has a negative size", ARGV(c));
        return -1;
    }
    return array_out(c, ptr, (unsigned long long)nbytes, out);
}

/*
 * CuPy's arrays read directly (_c_contiguous, data.ptr, data.device_id, dtype, size): no flags
 * or Device object is made. The same stream rule as PyTorch's: launch on CuPy's current stream
 * to order with its work.
 */
int from_cupy(const arg_ctx *c, PyObject *o, const char *want, int ordinal,
                     conv_arg *out)
{
    PyObject *cc = PyObject_GetAttr(o, g_state->s_c_contiguous_);
    int r = cc ? PyObject_IsTrue(cc) : -1;
    Py_XDECREF(cc);
    if (r < 0) { /* a CuPy without _c_contiguous: its public flags */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        PyObject *flags = PyObject_GetAttrString(o, "flags");
        PyObject *v = flags ? PyObject_GetAttrString(flags, "c_contiguous") : NULL;
        r = v ? PyObject_IsTrue(v) : -1;
        Py_XDECREF(v);
        Py_XDECREF(flags);
    }
    if (r != 1) {
        if (r == 0)
            PyErr_Format(PyExc_ValueError, ARGFMT " is not C-contiguous (a strided view); pass "
                         "cupy.ascontiguousarray(x)", ARGV(c));
        return -1;
    }
    PyObject *mem = PyObject_GetAttr(o, g_state->s_data);
    if (!mem)
        return -1;
    long long dev = get_ll(mem, g_state->s_device_id, 0, "data.device_id");
    if (dev == -1 && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear(); /* a memory pointer without device_id: the array's device.id */
        PyObject *device = PyObject_GetAttrString(o, "device");
        PyObject *id = device ? PyObject_GetAttrString(device, "id") : NULL;
        dev = id && PyLong_Check(id) ? PyLong_AsLongLong(id) : -1;
        if (id && !PyLong_Check(id))
            PyErr_SetString(PyExc_TypeError, "device.id is not an int");
        Py_XDECREF(id);
        Py_XDECREF(device);
    }
    if ((dev == -1 && PyErr_Occurred()) || check_device(c, dev, ordinal) < 0) {
        Py_DECREF(mem);
        return -1;
    }
    PyObject *dt = PyObject_GetAttr(o, g_state->s_dtype);
    char got[24] = "?";
    long long itemsize = -1;
    if (!dt || dtype_of(dt, 0, got, &itemsize) < 0 || (want && check_dtype(c, got, want) < 0)) {
        Py_XDECREF(dt);
        Py_DECREF(mem);
        return -1;
    }
    Py_DECREF(dt);
    long long size = get_ll(o, g_state->s_size, 0, "size");
    unsigned long long ptr = PyErr_Occurred() ? 0 : get_ptr(mem, g_state->s_ptr, 0, "data.ptr");
    Py_DECREF(mem);
    if (PyErr_Occurred())
        return -1;
    if (size < 0 || itemsize <= 0) {
        PyErr_Format(PyExc_ValueError, ARGFMT " has a size of %lld elements of %lld bytes",
                     ARGV(c), size, itemsize);
        return -1;
    }
    return array_out(c, ptr, (unsigned long long)size * (unsigned long long)itemsize, out);
}
