/*
 * _fdlink: the CPython extension of the fdlink package (docs/python.md), on the Limited API of
 * CPython 3.10 (one abi3 wheel for 3.10 and later), over libfdlink's public headers only: no
 * struct is described twice. This file owns argument marshalling (arrays by
 * __cuda_array_interface__ and DLPack, scalars packed to the kernel's parameter sizes) and object
 * lifetimes; names and sugar are the plain Python of python/fdlink/.
 *
 * Objects: Decls (a declaration set), Link (a completed link: cubin, logs, diagnostics), Device,
 * Module, Kernel, Launch (a prepared launch), Buffer (device memory exporting both array
 * protocols), Stream, Gen (a kernel generator), Map (a map or elementwise kernel), Reduction.
 * Every Python object that borrows from another holds a reference to it, so a device outlives
 * its modules and buffers and a module its kernels and launches.
 *
 * Errors: every fdl_error becomes an exception built by the factory that fdlink/_errors.py
 * registers (_set_error_factory): the record's fields, word for word, plus the link's diagnostic
 * records where there are some. Bad arguments are TypeError or ValueError naming the argument.
 *
 * Thread-safety: an fdlink device family (a device and everything made from it, generators
 * included) is used by one thread at a time: every call that touches one holds the GIL
 * throughout (waits for the GPU included), so Python threads never use a family at once. Only
 * work outside any family releases the GIL: opening a device, links and compiles (distinct
 * links may run at once). Module state: the error factory and a small cache of array types,
 * both per process (the module is single-phase and not for subinterpreters).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#include "fdlink/fdlink.h"

/* ---- DLPack (dlpack.h v0.8 / 1.0 legacy layout: a stable ABI, the same for every producer) -- */

typedef struct {
    int32_t device_type;
    int32_t device_id;
} fdl_py_dldevice;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} fdl_py_dldtype;
typedef struct {
    void *data;
    fdl_py_dldevice device;
    int32_t ndim;
    fdl_py_dldtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} fdl_py_dltensor;
typedef struct fdl_py_dlmanaged {
    fdl_py_dltensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct fdl_py_dlmanaged *self);
} fdl_py_dlmanaged;

/* DLPack 1.x (dlpack.h 1.0, capsule "dltensor_versioned"): the versioned managed tensor */
typedef struct {
    uint32_t major;
    uint32_t minor;
} fdl_py_dlversion;
typedef struct fdl_py_dlversioned {
    fdl_py_dlversion version;
    void *manager_ctx;
    void (*deleter)(struct fdl_py_dlversioned *self);
    uint64_t flags;
    fdl_py_dltensor dl_tensor;
} fdl_py_dlversioned;
#define DL_FLAG_READ_ONLY 1ull
#define DL_FLAG_IS_COPIED 2ull

enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };
enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4, DL_BOOL = 6 };

/* ---- module state ----------------------------------------------------------------------- */

static PyObject *g_error_factory; /* fdlink._errors.from_record */
static PyTypeObject *DeclsType, *LinkType, *DeviceType, *ModuleType, *KernelType, *LaunchType,
    *BufferType, *StreamType, *GenType, *MapType, *ReductionType, *DLHoldType, *ConfiguredType;
static PyObject *s_cai, *s_dlpack, *s_dlpack_device, *s_array_interface, *s_stream, *s_tobytes,
    *s_shape, *s_typestr, *s_data, *s_strides, *s_version, *s_mask, *s_cuda_stream;
/* the attributes read from CuPy's arrays and PyTorch's tensors at every launch */
static PyObject *s_c_contiguous_, *s_ptr, *s_device_id, *s_size, *s_dtype, *s_str, *s_itemsize,
    *s_is_cuda, *s_requires_grad, *s_is_contiguous, *s_get_device, *s_nbytes, *s_data_ptr;

/* ---- errors ----------------------------------------------------------------------------- */

/* Text from the library or a backend (a log, a path, a message) as a str, whatever its bytes:
 * UTF-8 decoded with @p errors ("surrogateescape" for paths, so that os.fsencode() gives the
 * bytes back; "backslashreplace" for messages and logs, always printable); None for NULL.
 * Never raises for bad bytes: an error being reported is never replaced by a decoding error. */
static PyObject *text_of(const char *s, const char *errors)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), errors);
}
#define MSG(s) text_of((s), "backslashreplace")

/* The diagnostics of a link as a list of dicts (the records of --diagnostics-format=json). */
static PyObject *diagnostics_list(const fdl_link *link)
{
    size_t n = fdl_link_diagnostic_count(link);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const fdl_diagnostic *d = fdl_link_diagnostic(link, i);
        PyObject *item = Py_BuildValue("{s:N,s:I,s:I,s:s,s:N,s:N,s:N}", "file",
                                       text_of(d->file, "surrogateescape"), "line", d->line,
                                       "column", d->column, "severity",
                                       fdl_severity_name(d->severity), "code", MSG(d->code),
                                       "message", MSG(d->message), "tool", MSG(d->tool));
        if (!item) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SetItem(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* Raise the exception for @p err (status @p rc); NULL always. @p link adds its diagnostics. */
static PyObject *raise_fdl(int rc, const fdl_error *err, const fdl_link *link)
{
    char line[FDL_ERROR_SOURCE_MAX + FDL_ERROR_SYMBOL_MAX + FDL_ERROR_MESSAGE_MAX + 64];
    fdl_error_format(err, line, sizeof line);
    int code = err->code ? err->code : rc;
    PyObject *diags = NULL;
    if (link) {
        diags = diagnostics_list(link);
        if (!diags)
            return NULL;
    } else {
        diags = Py_None;
        Py_INCREF(diags);
    }
    /* the log's bytes as they are (log_bytes), and as text that always prints (log) */
    PyObject *record = Py_BuildValue(
        "{s:i,s:s,s:i,s:N,s:I,s:I,s:N,s:N,s:N,s:N,s:N,s:N}", "code", code, "status",
        fdl_status_name(code), "backend_code", err->backend_code, "source",
        text_of(err->source, "surrogateescape"), "line", err->line, "column", err->column,
        "symbol", MSG(err->symbol), "message", MSG(err->message), "formatted", MSG(line), "log",
        MSG(err->log), "log_bytes",
        err->log ? PyBytes_FromString(err->log) : (Py_INCREF(Py_None), Py_None), "diagnostics",
        diags);
    if (!record)
        return NULL;
    if (!g_error_factory) {
        PyErr_SetString(PyExc_RuntimeError, line);
        Py_DECREF(record);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunctionObjArgs(g_error_factory, record, NULL);
    Py_DECREF(record);
    if (!exc)
        return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

static const char *tname(PyObject *o);

/* A bad argument of the package's API as an fdlink error: InvalidArgumentError (a ValueError),
 * or ArgumentTypeError (a TypeError) when @p type_error; "argument: message", the argument as
 * the record's symbol. NULL always. */
static PyObject *raise_arg(int type_error, const char *argument, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (!msg)
        return NULL;
    PyObject *line = PyUnicode_FromFormat("%s: %U", argument, msg);
    PyObject *record = line ? Py_BuildValue("{s:i,s:s,s:i,s:s,s:I,s:I,s:s,s:O,s:O,s:O,s:O,s:s}",
                                            "code", FDL_EINVAL, "status",
                                            fdl_status_name(FDL_EINVAL), "backend_code", 0,
                                            "source", "", "line", 0u, "column", 0u, "symbol",
                                            argument, "message", msg, "formatted", line, "log",
                                            Py_None, "diagnostics", Py_None, "python",
                                            type_error ? "TypeError" : "ValueError")
                            : NULL;
    Py_XDECREF(line);
    if (!record || !g_error_factory) {
        if (record)
            PyErr_SetObject(type_error ? PyExc_TypeError : PyExc_ValueError, msg);
        Py_XDECREF(record);
        Py_DECREF(msg);
        return NULL;
    }
    Py_DECREF(msg);
    PyObject *exc = PyObject_CallFunctionObjArgs(g_error_factory, record, NULL);
    Py_DECREF(record);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* A size_t argument (shared_mem, nbytes): a non-negative int, else an fdlink error naming it. */
static int size_arg(PyObject *o, const char *argument, size_t *out)
{
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        raise_arg(1, argument, "must be a non-negative int, not %s", tname(o));
        return -1;
    }
    size_t v = PyLong_AsSize_t(o);
    if (v == (size_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        raise_arg(0, argument, "must be an int from 0 to 2**64-1, not %R", o);
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *set_error_factory(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyCallable_Check(arg))
        return PyErr_Format(PyExc_TypeError, "the error factory must be callable");
    Py_INCREF(arg);
    Py_XDECREF(g_error_factory);
    g_error_factory = arg;
    Py_RETURN_NONE;
}

/* ---- small helpers ---------------------------------------------------------------------- */

/* The name of an object's type, for messages (the Limited API of 3.10 has no PyType_GetName). */
static const char *tname(PyObject *o)
{
    static char buf[128];
    PyObject *n = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__name__");
    const char *u = n && PyUnicode_Check(n) ? PyUnicode_AsUTF8AndSize(n, NULL) : NULL;
    snprintf(buf, sizeof buf, "%s", u ? u : "object");
    Py_XDECREF(n);
    PyErr_Clear();
    return buf;
}

/* UTF-8 of a str, or NULL (None allowed when @p none_ok) with TypeError naming @p what. */
static int utf8_of(PyObject *o, const char **out, int none_ok, const char *what)
{
    *out = NULL;
    if (o == Py_None && none_ok)
        return 0;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str%s, not %s", what,
                     none_ok ? " or None" : "", tname(o));
        return -1;
    }
    Py_ssize_t n;
    *out = PyUnicode_AsUTF8AndSize(o, &n);
    if (!*out)
        return -1;
    if ((size_t)n != strlen(*out)) {
        PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        return -1;
    }
    return 0;
}

/* A path (str, or bytes) as the file system's bytes (os.fsencode: a str's undecodable bytes,
 * kept by surrogateescape, come back as they were). *@p holder receives the bytes object that
 * owns *@p out (the caller's to release). */
static int path_of(PyObject *o, PyObject **holder, const char **out, const char *what)
{
    *holder = NULL;
    *out = NULL;
    if (PyUnicode_Check(o))
        *holder = PyUnicode_EncodeFSDefault(o);
    else if (PyBytes_Check(o))
        *holder = (Py_INCREF(o), o);
    else {
        PyErr_Format(PyExc_TypeError, "%s must be a str or bytes path, not %s", what, tname(o));
        return -1;
    }
    if (!*holder)
        return -1;
    char *p;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(*holder, &p, &n) < 0 || (size_t)n != strlen(p)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s contains a NUL character", what);
        Py_CLEAR(*holder);
        return -1;
    }
    *out = p;
    return 0;
}

/* A list or tuple of str as a NULL-terminated array kept alive by @p seq (freed by caller). */
static const char **str_array(PyObject *seq, const char *what)
{
    if (seq == Py_None)
        return NULL;
    /* a list or a tuple holds its str objects, whose UTF-8 the array borrows */
    if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a list or tuple of str, not %s", what,
                     tname(seq));
        return NULL;
    }
    PyObject *fast = PySequence_Tuple(seq);
    if (!fast)
        return NULL;
    Py_ssize_t n = PyTuple_Size(fast);
    const char **arr = calloc((size_t)n + 1, sizeof *arr);
    if (!arr) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (utf8_of(PyTuple_GetItem(fast, i), &arr[i], 0, what) < 0) {
            free(arr);
            Py_DECREF(fast);
            return NULL;
        }
    }
    /* the strings belong to the items of @p seq, which the caller keeps alive */
    Py_DECREF(fast);
    return arr;
}

/* Bytes-like input: bytes or bytearray. */
static int bytes_of(PyObject *o, const char **data, Py_ssize_t *size, const char *what)
{
    if (PyBytes_Check(o))
        return PyBytes_AsStringAndSize(o, (char **)data, size);
    if (PyByteArray_Check(o)) {
        *data = PyByteArray_AsString(o);
        *size = PyByteArray_Size(o);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be bytes or bytearray, not %s", what, tname(o));
    return -1;
}

static int dim3_of(PyObject *o, fdl_dim3 *d, const char *what)
{
    d->x = d->y = d->z = 1;
    unsigned *v[3] = {&d->x, &d->y, &d->z};
    if (PyLong_Check(o)) {
        unsigned long x = PyLong_AsUnsignedLong(o);
        if (PyErr_Occurred() || x > 0xFFFFFFFFul) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s must be an int from 0 to 2**32-1, not %R", what, o);
            return -1;
        }
        d->x = (unsigned)x;
        return 0;
    }
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints, not %s",
                     what, tname(o));
        return -1;
    }
    Py_ssize_t n = PySequence_Size(o);
    if (n < 1 || n > 3) {
        PyErr_Format(PyExc_ValueError, "%s must have 1 to 3 dimensions, not %zd", what, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(o, i);
        if (!item)
            return -1;
        unsigned long x = PyLong_Check(item) ? PyLong_AsUnsignedLong(item) : (unsigned long)-1;
        int bad = !PyLong_Check(item) || PyErr_Occurred() || x > 0xFFFFFFFFul;
        Py_DECREF(item);
        if (bad) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s[%zd] must be an int from 0 to 2**32-1", what, i);
            return -1;
        }
        *v[i] = (unsigned)x;
    }
    return 0;
}

/* ---- Decls ------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    fdl_decls *decls;
} DeclsObject;

static PyObject *Decls_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)kwds;
    PyObject *text;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:Decls", &text, &name))
        return NULL;
    const char *data;
    Py_ssize_t size;
    if (PyUnicode_Check(text)) {
        data = PyUnicode_AsUTF8AndSize(text, &size);
        if (!data)
            return NULL;
    } else if (bytes_of(text, &data, &size, "declarations") < 0) {
        return NULL;
    }
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    /* without the GIL where the text cannot change meanwhile (a str or bytes argument; a
     * bytearray could be resized by another thread) */
    PyThreadState *ts = PyByteArray_Check(text) ? NULL : PyEval_SaveThread();
    int rc = fdl_decls_parse(&decls, data, (size_t)size, name, &err);
    if (ts)
        PyEval_RestoreThread(ts);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    DeclsObject *self = (DeclsObject *)PyType_GenericAlloc(type, 0);
    if (!self) {
        fdl_decls_destroy(decls);
        return NULL;
    }
    self->decls = decls;
    return (PyObject *)self;
}

/* decls_load(path) -> Decls: a declaration file read by the library's checked reader (devices,
 * FIFOs, directories and files beyond its limit refused at once, with its message), the path
 * as the file system's bytes; without the GIL. */
static PyObject *py_decls_load(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *h;
    const char *path;
    if (path_of(arg, &h, &path, "a declaration path") < 0)
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fdl_decls_load(&decls, path, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(h);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    DeclsObject *o = (DeclsObject *)PyType_GenericAlloc(DeclsType, 0);
    if (!o) {
        fdl_decls_destroy(decls);
        return NULL;
    }
    o->decls = decls;
    return (PyObject *)o;
}

static void Decls_dealloc(DeclsObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_decls_destroy(self->decls);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static const char *abi_name(fdl_abi abi)
{
    return abi == FDL_ABI_C ? "c" : "numba";
}

/* [(name, signature, abi, source, line, column, sig_column, return type, (param types))] */
static PyObject *Decls_items(DeclsObject *self, PyObject *unused)
{
    (void)unused;
    size_t n = fdl_decls_count(self->decls);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const fdl_decl *d = fdl_decls_get(self->decls, i);
        char sig[4096], t[128];
        fdl_sig_format(&d->sig, sig, sizeof sig);
        PyObject *params = PyTuple_New((Py_ssize_t)d->sig.nparams);
        if (!params)
            goto fail;
        for (size_t p = 0; p < d->sig.nparams; p++) {
            fdl_type_format(d->sig.params[p], t, sizeof t);
            PyTuple_SetItem(params, (Py_ssize_t)p, PyUnicode_FromString(t));
        }
        fdl_type_format(d->sig.ret, t, sizeof t);
        PyObject *item = Py_BuildValue("(sssNsIIIsN)", d->name, sig, abi_name(d->abi),
                                       text_of(d->source, "surrogateescape"), "", d->line,
                                       d->column, d->sig_column, t, params);
        if (!item)
            goto fail;
        PyList_SetItem(list, (Py_ssize_t)i, item);
    }
    return list;
fail:
    Py_DECREF(list);
    return NULL;
}

static PyObject *Decls_header(DeclsObject *self, PyObject *args)
{
    const char *guard = NULL;
    if (!PyArg_ParseTuple(args, "|z:header", &guard))
        return NULL;
    char *text = NULL;
    size_t len = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_header_generate(&text, &len, self->decls, guard, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    PyObject *s = PyUnicode_FromStringAndSize(text, (Py_ssize_t)len);
    free(text);
    return s;
}

static PyObject *Decls_source(DeclsObject *self, void *closure)
{
    (void)closure;
    return text_of(fdl_decls_source(self->decls), "surrogateescape"); /* a path's bytes kept */
}

static PyMethodDef Decls_methods[] = {
    {"items", (PyCFunction)Decls_items, METH_NOARGS, "the declarations as tuples"},
    {"header", (PyCFunction)Decls_header, METH_VARARGS, "the prototypes header (.cuh) text"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Decls_getset[] = {{"source", (getter)Decls_source, NULL, NULL, NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot Decls_slots[] = {{Py_tp_new, (void *)Decls_new},
                                    {Py_tp_dealloc, (void *)Decls_dealloc},
                                    {Py_tp_methods, Decls_methods},
                                    {Py_tp_getset, Decls_getset},
                                    {Py_tp_doc, "Decls(text, name): a parsed declaration set"},
                                    {0, NULL}};
static PyType_Spec Decls_spec = {"fdlink._fdlink.Decls", sizeof(DeclsObject), 0,
                                 Py_TPFLAGS_DEFAULT, Decls_slots};

/* ---- link options ----------------------------------------------------------------------- */

/* Strings and arrays borrowed for the duration of fdl_link_create / fdl_gen_create. */
typedef struct {
    fdl_link_options lo;
    fdl_nvrtc_options no;
    const char **extra, **defines, **include_dirs, **nvrtc_extra, **xptxas, **kernels_used,
        **variables_used;
} link_opts;

static void link_opts_free(link_opts *o)
{
    free(o->extra);
    free(o->defines);
    free(o->include_dirs);
    free(o->nvrtc_extra);
    free(o->xptxas);
    free(o->kernels_used);
    free(o->variables_used);
}

static int opt_int(PyObject *d, const char *key, int *out)
{
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || v == Py_None)
        return 0;
    if (PyBool_Check(v)) {
        *out = v == Py_True;
        return 0;
    }
    char what[64];
    snprintf(what, sizeof what, "option %s", key);
    if (!PyLong_Check(v)) {
        raise_arg(1, what, "must be an int or a bool, not %s", tname(v));
        return -1;
    }
    long x = PyLong_AsLong(v);
    if ((x == -1 && PyErr_Occurred()) || x < -1 || x > 1 << 20) {
        PyErr_Clear();
        raise_arg(0, what, "%R is out of range (-1 to %d)", v, 1 << 20);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* A long, checked by fdlink itself (fdl_link_create names a bad value). */
static int opt_long(PyObject *d, const char *key, long *out)
{
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || v == Py_None)
        return 0;
    char what[64];
    snprintf(what, sizeof what, "option %s", key);
    if (!PyLong_Check(v) || PyBool_Check(v)) {
        raise_arg(1, what, "must be an int, not %s", tname(v));
        return -1;
    }
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        raise_arg(0, what, "%R is out of range", v);
        return -1;
    }
    *out = x;
    return 0;
}

static int opt_str(PyObject *d, const char *key, const char **out)
{
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v)
        return 0;
    char what[64];
    snprintf(what, sizeof what, "option %s", key);
    return utf8_of(v, out, 1, what);
}

static int opt_list(PyObject *d, const char *key, const char ***out)
{
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || v == Py_None)
        return 0;
    if (PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "option %s must be a list of str, not a str", key);
        return -1;
    }
    char what[64];
    snprintf(what, sizeof what, "option %s", key);
    *out = str_array(v, what);
    return *out ? 0 : -1;
}

/* The options dict of fdlink/_link.py: every key optional, None for the C default. */
static int link_opts_from(link_opts *o, PyObject *d)
{
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    fdl_nvrtc_options no = FDL_NVRTC_OPTIONS_INIT;
    memset(o, 0, sizeof *o);
    o->lo = lo;
    o->no = no;
    if (d == Py_None)
        return 0;
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "link options must be a dict, not %s", tname(d));
        return -1;
    }
    int backend = -2, lto = -2, cache = -2, output = -2;
    if (opt_str(d, "arch", &o->lo.arch) || opt_int(d, "opt_level", &o->lo.opt_level) ||
        opt_int(d, "debug", &o->lo.debug) || opt_int(d, "lineinfo", &o->lo.lineinfo) ||
        opt_int(d, "verbose", &o->lo.verbose) || opt_list(d, "extra", &o->extra) ||
        opt_int(d, "backend", &backend) || opt_int(d, "lto", &lto) ||
        opt_int(d, "maxrregcount", &o->lo.maxrregcount) || opt_int(d, "ftz", &o->lo.ftz) ||
        opt_int(d, "prec_div", &o->lo.prec_div) || opt_int(d, "prec_sqrt", &o->lo.prec_sqrt) ||
        opt_int(d, "fma", &o->lo.fma) || opt_int(d, "cudadevrt", &o->lo.cudadevrt) ||
        opt_int(d, "cache", &cache) || opt_str(d, "cache_dir", &o->lo.cache_dir) ||
        opt_int(d, "isolate", &o->lo.isolate) || opt_list(d, "xptxas", &o->xptxas) ||
        opt_int(d, "split_compile", &o->lo.split_compile) ||
        opt_str(d, "cache_remote", &o->lo.cache_remote) ||
        opt_list(d, "defines", &o->defines) || opt_list(d, "include_dirs", &o->include_dirs) ||
        opt_str(d, "std", &o->no.std) || opt_int(d, "cuda_output", &output) ||
        opt_list(d, "nvrtc_extra", &o->nvrtc_extra) || opt_int(d, "emit_ptx", &o->lo.emit_ptx) ||
        opt_list(d, "kernels_used", &o->kernels_used) ||
        opt_list(d, "variables_used", &o->variables_used) || opt_int(d, "time", &o->lo.time) ||
        opt_int(d, "optimize_unused_variables", &o->lo.optimize_unused_variables) ||
        opt_int(d, "split_compile_extended", &o->lo.split_compile_extended) ||
        opt_int(d, "jump_table_density", &o->lo.jump_table_density) ||
        opt_int(d, "jl_cache", &o->lo.jl_cache) ||
        opt_int(d, "device_stack_protector", &o->lo.device_stack_protector) ||
        opt_long(d, "cache_lease_ms", &o->lo.cache_lease_ms) || opt_int(d, "jobs", &o->lo.jobs) ||
        opt_int(d, "lto_report", &o->lo.lto_report) ||
        opt_int(d, "require_warm", &o->lo.require_warm) ||
        opt_int(d, "no_toolkit_include", &o->no.no_toolkit_include))
        return -1;
    if (backend != -2)
        o->lo.backend = (fdl_link_backend)backend;
    if (lto != -2)
        o->lo.lto = (fdl_lto_mode)lto;
    if (cache != -2)
        o->lo.cache = (fdl_cache_mode)cache;
    if (output != -2)
        o->no.output = (fdl_cuda_output)output;
    o->lo.extra = o->extra;
    o->lo.xptxas = o->xptxas;
    o->lo.kernels_used = o->kernels_used;
    o->lo.variables_used = o->variables_used;
    o->no.defines = o->defines;
    o->no.include_dirs = o->include_dirs;
    o->no.extra = o->nvrtc_extra;
    o->lo.cuda = &o->no;
    return 0;
}

/* ---- Link ------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_link *link;
    PyObject *decls; /* the Decls objects the link borrows */
} LinkObject;

/* One input of a link, read from its tuple with the GIL, added to the link without it. */
typedef struct {
    const char *data; /* bytes, or NULL for a file */
    Py_ssize_t size;
    const char *path; /* the file system's bytes (held by a bytes object in the holder list) */
    const char *name;
    int kind;
} link_input;

/* Link(options, decls, inputs): inputs are (data: bytes | None, path: str | None, name, kind).
 * Everything of the link but reading the arguments runs without the GIL: creating it (which
 * loads the CUDA libraries), adding declarations and inputs (files read, inputs recognised) and
 * the link or check itself, which may take seconds; none touches a Python object, and every
 * buffer it borrows is held by the arguments (or by @p holders). */
static PyObject *Link_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)kwds;
    PyObject *opts, *decls, *inputs;
    int check_only = 0;
    if (!PyArg_ParseTuple(args, "OO!O!|p:Link", &opts, &PyList_Type, &decls, &PyList_Type, &inputs,
                          &check_only))
        return NULL;
    link_opts lo;
    LinkObject *self = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = FDL_OK, with_diags = 0;
    Py_ssize_t ndecls = 0, ninputs = 0;
    const fdl_decls **dl = NULL;
    link_input *in = NULL;
    PyObject *holders = PyList_New(0), *inputs_t = NULL;
    if (link_opts_from(&lo, opts) < 0) {
        Py_XDECREF(holders);
        return NULL;
    }
    if (!holders)
        goto fail;
    self = (LinkObject *)PyType_GenericAlloc(type, 0);
    if (!self)
        goto fail;
    self->decls = PySequence_Tuple(decls);
    inputs_t = PySequence_Tuple(inputs); /* the items stay alive while the link is made */
    if (!self->decls || !inputs_t)
        goto fail;
    ndecls = PyTuple_Size(self->decls);
    ninputs = PyTuple_Size(inputs_t);
    dl = calloc((size_t)ndecls + 1, sizeof *dl);
    in = calloc((size_t)ninputs + 1, sizeof *in);
    if (!dl || !in) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < ndecls; i++) {
        PyObject *d = PyTuple_GetItem(self->decls, i);
        if (!PyObject_TypeCheck(d, DeclsType)) {
            PyErr_Format(PyExc_TypeError, "decls[%zd] must be a Decls, not %s", i, tname(d));
            goto fail;
        }
        dl[i] = ((DeclsObject *)d)->decls;
    }
    for (Py_ssize_t i = 0; i < ninputs; i++) {
        PyObject *item = PyTuple_GetItem(inputs_t, i), *data, *path;
        if (!PyTuple_Check(item) ||
            !PyArg_ParseTuple(item, "OOsi", &data, &path, &in[i].name, &in[i].kind)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "input %zd must be a tuple", i);
            goto fail;
        }
        if (data != Py_None) {
            if (bytes_of(data, &in[i].data, &in[i].size, "an input") < 0)
                goto fail;
            if (PyByteArray_Check(data)) { /* a bytearray may be resized: a copy is held */
                PyObject *copy = PyBytes_FromStringAndSize(in[i].data, in[i].size);
                if (!copy || PyList_Append(holders, copy) < 0) {
                    Py_XDECREF(copy);
                    goto fail;
                }
                Py_DECREF(copy);
                in[i].data = PyBytes_AsString(copy);
            }
        } else {
            PyObject *h;
            if (path_of(path, &h, &in[i].path, "an input path") < 0)
                goto fail;
            rc = PyList_Append(holders, h);
            Py_DECREF(h);
            if (rc < 0)
                goto fail;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    rc = fdl_link_create(&self->link, &lo.lo, &err);
    for (Py_ssize_t i = 0; rc == FDL_OK && i < ndecls; i++)
        rc = fdl_link_add_decls(self->link, dl[i], &err);
    for (Py_ssize_t i = 0; rc == FDL_OK && i < ninputs; i++)
        rc = in[i].data ? fdl_link_add_data(self->link, in[i].data, (size_t)in[i].size,
                                            in[i].name, (fdl_input_kind)in[i].kind, &err)
                        : fdl_link_add_file(self->link, in[i].path, (fdl_input_kind)in[i].kind,
                                            &err);
    if (rc == FDL_OK)
        rc = check_only ? fdl_link_check(self->link, 0, &err) : fdl_link_complete(self->link, &err);
    Py_END_ALLOW_THREADS
    with_diags = self->link != NULL;
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, with_diags ? self->link : NULL);
        goto fail;
    }
    link_opts_free(&lo);
    free(dl);
    free(in);
    Py_DECREF(holders);
    Py_DECREF(inputs_t);
    return (PyObject *)self;
fail:
    link_opts_free(&lo);
    free(dl);
    free(in);
    Py_XDECREF(holders);
    Py_XDECREF(inputs_t);
    Py_XDECREF(self);
    return NULL;
}

static void Link_dealloc(LinkObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_link_destroy(self->link);
    Py_XDECREF(self->decls);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *Link_cubin(LinkObject *self, void *c)
{
    (void)c;
    size_t size = 0;
    const void *p = fdl_link_cubin(self->link, &size);
    return PyBytes_FromStringAndSize(p, (Py_ssize_t)size);
}

static PyObject *Link_ptx(LinkObject *self, void *c)
{
    (void)c;
    size_t size = 0;
    const char *p = fdl_link_ptx(self->link, &size);
    if (!p)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(p, (Py_ssize_t)size, "replace");
}

static PyObject *Link_info(LinkObject *self, void *c)
{
    (void)c;
    const char *key = NULL;
    fdl_cache_result r = fdl_link_cache_result(self->link, &key);
    size_t hits = 0, compiled = 0, bc_hits = 0, bc_compiled = 0;
    fdl_link_nvrtc_cache(self->link, &hits, &compiled);
    fdl_link_nvvm_cache(self->link, &bc_hits, &bc_compiled);
    /* the logs are the backends' text, whatever its bytes (MSG) */
    return Py_BuildValue("{s:s,s:s,s:i,s:d,s:s,s:s,s:N,s:N,s:N,s:n,s:n,s:n,s:n}", "arch",
                         fdl_link_arch(self->link), "backend",
                         fdl_link_backend_name(fdl_link_get_backend(self->link)), "lto",
                         fdl_link_lto(self->link), "wall_ms", fdl_link_wall_ms(self->link),
                         "cache", fdl_cache_result_name(r), "cache_key", key ? key : "",
                         "cache_warning", MSG(fdl_link_cache_warning(self->link)), "info_log",
                         MSG(fdl_link_info_log(self->link)), "error_log",
                         MSG(fdl_link_error_log(self->link)), "nvrtc_cache_hits", (Py_ssize_t)hits,
                         "nvrtc_compiled", (Py_ssize_t)compiled, "nvvm_cache_hits",
                         (Py_ssize_t)bc_hits, "nvvm_compiled", (Py_ssize_t)bc_compiled);
}

/* input_data(i) -> (bytes, kind name): an input as the backend gets it (NVRTC's output for CUDA C) */
static PyObject *Link_input_data(LinkObject *self, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    size_t size = 0;
    fdl_input_kind kind = FDL_KIND_AUTO;
    const void *p = i >= 0 ? fdl_link_input_data(self->link, (size_t)i, &size, &kind) : NULL;
    if (!p)
        return PyErr_Format(PyExc_IndexError, "input %zd out of range", i);
    return Py_BuildValue("(y#s)", (const char *)p, (Py_ssize_t)size, fdl_input_kind_name(kind));
}

static PyObject *Link_diagnostics(LinkObject *self, void *c)
{
    (void)c;
    return diagnostics_list(self->link);
}

static PyGetSetDef Link_getset[] = {
    {"cubin", (getter)Link_cubin, NULL, "the linked cubin's bytes", NULL},
    {"ptx", (getter)Link_ptx, NULL, "the post-LTO PTX (emit_ptx), or None", NULL},
    {"info", (getter)Link_info, NULL, "arch, backend, cache result, logs, timings", NULL},
    {"diagnostics", (getter)Link_diagnostics, NULL, "diagnostic records", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
/* ((class, size), ...) from an array of fdl_param_info; NULL with an exception on failure */
static PyObject *param_info_tuple(const fdl_param_info *p, size_t n)
{
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; t && i < n; i++) {
        PyObject *e = Py_BuildValue("(in)", (int)p[i].cls, (Py_ssize_t)p[i].size);
        if (!e) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SetItem(t, (Py_ssize_t)i, e);
    }
    return t;
}

/* kernel_params(name) -> ((class, size), ...) or None: fdl_link_kernel_params */
static PyObject *Link_kernel_params(LinkObject *self, PyObject *arg)
{
    const char *name;
    if (utf8_of(arg, &name, 0, "the kernel's name") < 0)
        return NULL;
    fdl_param_info info[256];
    size_t count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_kernel_params(self->link, name, info, 256, &count, &err);
    if (rc == FDL_ENOTFOUND || (rc == FDL_OK && count > 256))
        Py_RETURN_NONE;
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return param_info_tuple(info, count);
}

static PyMethodDef Link_methods[] = {
    {"input_data", (PyCFunction)Link_input_data, METH_O,
     "input_data(i) -> (bytes, kind): input i as the backend gets it"},
    {"kernel_params", (PyCFunction)Link_kernel_params, METH_O,
     "kernel_params(name) -> ((fdl_param_class, size), ...) as the code says, or None"},
    {NULL, NULL, 0, NULL}};
static PyType_Slot Link_slots[] = {{Py_tp_new, (void *)Link_new},
                                   {Py_tp_methods, Link_methods},
                                   {Py_tp_dealloc, (void *)Link_dealloc},
                                   {Py_tp_getset, Link_getset},
                                   {Py_tp_doc, "Link(options, decls, inputs): a completed link"},
                                   {0, NULL}};
static PyType_Spec Link_spec = {"fdlink._fdlink.Link", sizeof(LinkObject), 0, Py_TPFLAGS_DEFAULT,
                                Link_slots};

/* ---- Device ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_device *dev;
    int ordinal;
    fdl_event *order; /* made when first needed: orders a launch after a producer's stream */
} DeviceObject;

static PyObject *Device_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
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

static void Device_dealloc(DeviceObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_event_destroy(self->order);
    fdl_device_destroy(self->dev);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *Device_repr(DeviceObject *self)
{
    return PyUnicode_FromFormat("<fdlink.Device %d: %s (%s)>", self->ordinal,
                                fdl_device_name(self->dev), fdl_device_arch(self->dev));
}

static PyObject *Device_info(DeviceObject *self, void *c)
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

static PyObject *Device_ordinal(DeviceObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->ordinal);
}

/* The C objects' addresses, for fdlink.jax's XLA FFI handler (a C caller of libfdlink in the same
 * process): valid while the Python object lives. */
static PyObject *Device_c_handle(DeviceObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(self->dev);
}

static PyObject *Device_arch(DeviceObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(fdl_device_arch(self->dev));
}

static PyObject *Device_synchronize(DeviceObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_device_synchronize(self->dev, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

/* ---- Module ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_module *mod;
    PyObject *device;
    PyObject *image; /* the bytes it was loaded from */
} ModuleObject;

static PyObject *Device_load(DeviceObject *self, PyObject *args)
{
    PyObject *image;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:load", &image, &name))
        return NULL;
    const char *data;
    Py_ssize_t size;
    if (bytes_of(image, &data, &size, "image") < 0)
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = NULL;
    int rc = fdl_module_load_data(&mod, self->dev, data, (size_t)size, name, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    ModuleObject *m = (ModuleObject *)PyType_GenericAlloc(ModuleType, 0);
    if (!m) {
        fdl_module_destroy(mod);
        return NULL;
    }
    m->mod = mod;
    m->device = (PyObject *)self;
    Py_INCREF(self);
    m->image = PyBytes_FromStringAndSize(data, size);
    if (!m->image) {
        Py_DECREF(m);
        return NULL;
    }
    return (PyObject *)m;
}

static void Module_dealloc(ModuleObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_module_destroy(self->mod);
    Py_XDECREF(self->device);
    Py_XDECREF(self->image);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *Module_kernel_names(ModuleObject *self, PyObject *unused)
{
    (void)unused;
    size_t n = fdl_module_kernel_count(self->mod);
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; t && i < n; i++)
        PyTuple_SetItem(t, (Py_ssize_t)i, PyUnicode_FromString(fdl_module_kernel_name(self->mod, i)));
    return t;
}

static PyObject *Module_check_status(ModuleObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_module_check_status(self->mod, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

static PyObject *Module_image(ModuleObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->image);
    return self->image;
}

static PyObject *Module_info_log(ModuleObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(fdl_module_info_log(self->mod));
}

static PyObject *Module_name(ModuleObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(fdl_module_name(self->mod));
}

/* ---- Stream ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_stream *stream;
    PyObject *device;
} StreamObject;

static PyObject *Device_stream(DeviceObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *s = NULL;
    int rc = fdl_stream_create(&s, self->dev, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    StreamObject *o = (StreamObject *)PyType_GenericAlloc(StreamType, 0);
    if (!o) {
        fdl_stream_destroy(s);
        return NULL;
    }
    o->stream = s;
    o->device = (PyObject *)self;
    Py_INCREF(self);
    return (PyObject *)o;
}

static void Stream_dealloc(StreamObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_stream_destroy(self->stream);
    Py_XDECREF(self->device);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* Device.wrap_stream(handle): another library's CUstream (an int; 1 legacy, 2 per-thread). */
static PyObject *Device_wrap_stream(DeviceObject *self, PyObject *arg)
{
    unsigned long long h = PyLong_Check(arg) ? PyLong_AsUnsignedLongLong(arg) : 0;
    if (!PyLong_Check(arg) || PyErr_Occurred()) {
        PyErr_Clear();
        return PyErr_Format(PyExc_TypeError, "a stream handle must be an int from 0 to 2**64-1");
    }
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *st = NULL;
    int rc = fdl_stream_wrap(&st, self->dev, (void *)(uintptr_t)h, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    StreamObject *o = (StreamObject *)PyType_GenericAlloc(StreamType, 0);
    if (!o) {
        fdl_stream_destroy(st);
        return NULL;
    }
    o->stream = st;
    o->device = (PyObject *)self;
    Py_INCREF(self);
    return (PyObject *)o;
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
    int rc;
    rc = fdl_stream_synchronize(self->stream, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
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
static PyType_Spec Stream_spec = {"fdlink._fdlink.Stream", sizeof(StreamObject), 0,
                                  Py_TPFLAGS_DEFAULT, Stream_slots};

/* The fdl_stream of a launch's stream argument: None for the default stream. */
static int stream_of(PyObject *o, fdl_stream **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    if (PyObject_TypeCheck(o, StreamType)) {
        *out = ((StreamObject *)o)->stream;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "stream must be an fdlink Stream or None, not %s (fdlink.stream() wraps "
                 "another library's stream)", tname(o));
    return -1;
}

/* ---- Buffer ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_buffer *buf;     /* NULL once free() was called (the memory may live on: see mem) */
    PyObject *mem;       /* the memory's owner (memory_new): held by the Buffer, by launches
                          * and preparations that point into it, by exported DLPack capsules */
    PyObject *device;
    char typestr[8];     /* "<f4"; "|u1" for raw bytes */
    Py_ssize_t itemsize;
    PyObject *shape;     /* tuple */
    PyObject *weakrefs;  /* weak references to it (caches of arrays keep them) */
} BufferObject;

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

static PyObject *Device_alloc(DeviceObject *self, PyObject *args)
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
    BufferObject *o = (BufferObject *)PyType_GenericAlloc(BufferType, 0);
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
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
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
    int rc = fdl_buffer_zero(self->buf, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
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
static PyType_Spec Buffer_spec = {"fdlink._fdlink.Buffer", sizeof(BufferObject), 0,
                                  Py_TPFLAGS_DEFAULT, Buffer_slots};

/* ---- DLHold: a consumed DLPack tensor, its deleter called when the holder dies ----------- */

typedef struct {
    PyObject_HEAD
    void *m;       /* fdl_py_dlmanaged, or fdl_py_dlversioned when versioned */
    int versioned;
} DLHoldObject;

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
static PyType_Spec DLHold_spec = {"fdlink._fdlink.DLHold", sizeof(DLHoldObject), 0,
                                  Py_TPFLAGS_DEFAULT, DLHold_slots};

/* ---- arguments -------------------------------------------------------------------------- */

/* What one argument became. */
typedef struct {
    unsigned char value[16]; /* the bytes passed (a pointer, or a scalar) */
    const void *data;        /* NULL: value; else packed bytes of any size, kept alive elsewhere */
    size_t size;
    int is_array;
    uint64_t nbytes;         /* arrays: bytes from the address */
} conv_arg;

/* Where a converted argument's bytes are. */
#define ARG_DATA(v) ((v)->data ? (v)->data : (const void *)(v)->value)

/* Where the argument is, for messages: "argument 2 of kernel 'k'". */
typedef struct {
    const char *what; /* "kernel" / "map" */
    const char *name;
    Py_ssize_t index; /* 0-based */
    DeviceObject *dev; /* the launch's device, for a producer stream to wait for; or NULL */
    fdl_stream *stream; /* the launch's stream (NULL: the legacy default stream) */
    int writes;         /* fdlink writes this array (a map's output): read-only ones refused */
    int cls;            /* the parameter's fdl_param_class from the code (0: not known) */
} arg_ctx;

#define ARGFMT "argument %zd of %s '%s'"
#define ARGV(c) (c)->index + 1, (c)->what, (c)->name

/* The 'f4' part of an array-interface typestr (its byte order is not checked: CUDA is little-endian). */
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

static int check_dtype(const arg_ctx *c, const char *got, const char *want)
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
static int from_cai(const arg_ctx *c, PyObject *obj, PyObject *cai, const char *want,
                    conv_arg *out)
{
    if (!PyDict_Check(cai)) {
        PyErr_Format(PyExc_TypeError, ARGFMT ": __cuda_array_interface__ is a %s, not a dict",
                     ARGV(c), tname(cai));
        return -1;
    }
    PyObject *shape = PyDict_GetItemWithError(cai, s_shape);
    PyObject *typestr = shape ? PyDict_GetItemWithError(cai, s_typestr) : NULL;
    PyObject *data = typestr ? PyDict_GetItemWithError(cai, s_data) : NULL;
    if (!data) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError,
                         ARGFMT ": __cuda_array_interface__ lacks 'shape', 'typestr' or 'data'",
                         ARGV(c));
        return -1;
    }
    PyObject *version = PyDict_GetItemWithError(cai, s_version);
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
    PyObject *mask = PyDict_GetItemWithError(cai, s_mask);
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
    PyObject *strides = PyDict_GetItemWithError(cai, s_strides);
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
        PyObject *stream = PyDict_GetItemWithError(cai, s_stream);
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
static int from_dlpack(const arg_ctx *c, PyObject *obj, const char *want, int ordinal,
                       PyObject *keep, conv_arg *out)
{
    PyObject *dev = PyObject_CallMethodObjArgs(obj, s_dlpack_device, NULL);
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
    PyObject *meth = PyObject_GetAttr(obj, s_dlpack);
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
    DLHoldObject *hold = (DLHoldObject *)PyType_GenericAlloc(DLHoldType, 0);
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
static int pack_int(const arg_ctx *c, PyObject *o, size_t size, char k, conv_arg *out)
{
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    unsigned long long u = (unsigned long long)v;
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow > 0) {
        u = PyLong_AsUnsignedLongLong(o);
        if (PyErr_Occurred())
            goto range;
    } else if (overflow < 0) {
        goto range;
    }
    if (size < 8) {
        long long lo = k == 'u' ? 0 : -(1LL << (size * 8 - 1));
        unsigned long long hi = k == 'i' ? (1ULL << (size * 8 - 1)) - 1 : (1ULL << (size * 8)) - 1;
        if (overflow > 0 || v < lo || (v >= 0 && (unsigned long long)v > hi))
            goto range;
    } else if (k == 'u' && overflow == 0 && v < 0) {
        goto range;
    } else if (k == 'i' && overflow > 0) {
        goto range;
    }
    out->size = size;
    memcpy(out->value, &u, size); /* little-endian: the low bytes first */
    return 0;
range:
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, ARGFMT ": %R does not fit the parameter's %zu bytes%s",
                 ARGV(c), o, size, k == 'u' ? " (unsigned)" : k == 'i' ? " (signed)" : "");
    return -1;
}

static uint16_t half_of(double d)
{
    float f = (float)d;
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7FFFFFu;
    int exp = (int)((x >> 23) & 0xFF);
    if (exp == 0xFF)
        return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
    int e = exp - 127 + 15;
    if (e >= 0x1F)
        return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = (uint32_t)e << 10 | mant >> 13, rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

/* A Python float (or an int where a float was declared) for a floating parameter. */
static int pack_float(const arg_ctx *c, PyObject *o, size_t size, conv_arg *out)
{
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    out->size = size;
    if (size == 8) {
        memcpy(out->value, &d, 8);
    } else if (size == 4) {
        float f = (float)d;
        memcpy(out->value, &f, 4);
    } else if (size == 2) {
        uint16_t h = half_of(d);
        memcpy(out->value, &h, 2);
    } else {
        PyErr_Format(PyExc_TypeError, ARGFMT ": a float cannot fill a parameter of %zu bytes",
                     ARGV(c), size);
        return -1;
    }
    return 0;
}

/* Per-type classification of array objects, cached by type (CuPy, PyTorch and others are read
 * through their protocols; the cache saves the attribute probes). */
enum { K_UNKNOWN = 0, K_CAI, K_DLPACK, K_HOSTARRAY, K_SCALAR_BYTES, K_NONE, K_TORCH, K_CUPY,
       K_NPSCALAR, K_CTYPES };
#define TYPE_CACHE 32
static struct {
    PyTypeObject *type;
    int kind;
} g_types[TYPE_CACHE];
static int g_ntypes;

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

static int classify(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    for (int i = 0; i < g_ntypes; i++)
        if (g_types[i].type == t)
            return g_types[i].kind;
    /* the type's attributes first: a property is not called here (it may raise, or cost) */
    PyObject *tp = (PyObject *)t;
    int kind = K_NONE, cacheable = 1;
    if (is_type_named(t, "torch", "Tensor"))
        kind = K_TORCH;
    else if (is_type_named(t, "cupy", "ndarray"))
        kind = K_CUPY;
    else if (PyObject_HasAttr(tp, s_cai))
        kind = K_CAI;
    else if (PyObject_HasAttr(tp, s_dlpack) && PyObject_HasAttr(tp, s_dlpack_device))
        kind = K_DLPACK;
    else if (PyObject_HasAttr(tp, s_array_interface))
        /* NumPy: arrays are refused; scalars (np.int32(n), np.float32(x)) are read by value
         * (from_npscalar), other 0-d objects packed by their bytes (from_host) */
        kind = is_type_named(t, "numpy", "generic") ? K_NPSCALAR : K_HOSTARRAY;
    else if (is_type_named(t, "_ctypes", "Structure") || is_type_named(t, "_ctypes", "Union") ||
             is_type_named(t, "_ctypes", "Array"))
        kind = K_CTYPES; /* a struct (or array) by value, as its bytes */
    else {
        /* an instance may have the attribute where its type does not: not cached */
        cacheable = 0;
        if (PyObject_HasAttr(o, s_cai))
            kind = K_CAI;
        else if (PyObject_HasAttr(o, s_dlpack) && PyObject_HasAttr(o, s_dlpack_device))
            kind = K_DLPACK;
    }
    if (PyErr_Occurred())
        PyErr_Clear();
    if (cacheable && g_ntypes < TYPE_CACHE) {
        Py_INCREF(t);
        g_types[g_ntypes].type = t;
        g_types[g_ntypes++].kind = kind;
    }
    return kind;
}

/* A tensor that requires grad refuses its interface: say so, naming the argument. */
static int refuse_grad(const arg_ctx *c, PyObject *o)
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
static int from_packed(const arg_ctx *c, PyObject *b, size_t size, const char *what,
                       PyObject *keep, conv_arg *out)
{
    if (!b)
        return -1;
    char *p;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(b, &p, &n) < 0) {
        Py_DECREF(b);
        return -1;
    }
    if (n == 0 || (size && (size_t)n != size)) {
        if (size)
            PyErr_Format(PyExc_ValueError, ARGFMT " is %zd bytes (%s), but the parameter takes "
                         "%zu", ARGV(c), n, what, size);
        else
            PyErr_Format(PyExc_ValueError, ARGFMT " is 0 bytes (%s)", ARGV(c), what);
        Py_DECREF(b);
        return -1;
    }
    int rc = PyList_Append(keep, b);
    Py_DECREF(b); /* the list holds it until the launch is made */
    if (rc < 0)
        return -1;
    out->data = p;
    out->size = (size_t)n;
    return 0;
}

/*
 * A host NumPy-style object: a 0-d scalar gives its bytes, and so does a structured (void) array
 * of one element (a struct by value); other arrays are refused.
 */
static int from_host(const arg_ctx *c, PyObject *o, size_t size, const char *want,
                     PyObject *keep, conv_arg *out)
{
    PyObject *ai = PyObject_GetAttr(o, s_array_interface);
    if (!ai)
        return -1;
    PyObject *shape = PyDict_Check(ai) ? PyDict_GetItemWithError(ai, s_shape) : NULL;
    PyObject *ts = PyDict_Check(ai) ? PyDict_GetItemWithError(ai, s_typestr) : NULL;
    char tsbuf[16] = "";
    if (ts && PyUnicode_Check(ts)) {
        const char *s = PyUnicode_AsUTF8AndSize(ts, NULL);
        if (s)
            snprintf(tsbuf, sizeof tsbuf, "%s", s);
    }
    int scalar = shape && PyTuple_Check(shape) && PyTuple_Size(shape) == 0;
    int is_void = tsbuf[0] && tsbuf[1] == 'V';
    if (!scalar && is_void && shape && PyTuple_Check(shape)) {
        scalar = 1; /* one element of a structured array: a struct */
        for (Py_ssize_t i = 0; i < PyTuple_Size(shape); i++) {
            PyObject *d = PyTuple_GetItem(shape, i);
            if (!PyLong_Check(d) || PyLong_AsLong(d) != 1)
                scalar = 0;
        }
    }
    Py_DECREF(ai);
    if (PyErr_Occurred())
        return -1;
    if (!scalar) {
        PyErr_Format(PyExc_TypeError,
                     ARGFMT " is a host array (%s), not device memory; copy it to the GPU first "
                     "(e.g. cupy.asarray, torch.as_tensor(..., device='cuda') or fdlink.to_device)",
                     ARGV(c), tname(o));
        return -1;
    }
    if (!is_void && want && want[0] != '*' && check_dtype(c, tsbuf, want) < 0)
        return -1;
    char what[40];
    snprintf(what, sizeof what, "a %s (%s)", is_void ? "struct" : "scalar", tsbuf);
    return from_packed(c, PyObject_CallMethodObjArgs(o, s_tobytes, NULL), size, what, keep, out);
}

/*
 * The per-launch reads of CuPy's arrays and PyTorch's tensors, without creating objects that are
 * thrown away (CuPy's flags and Device objects, attribute names, dtype strings): attribute names
 * are interned once (PyInit__fdlink), methods are called through PyObject_CallMethodObjArgs (no
 * bound method is made), and a dtype object's code and item size are cached by identity (the
 * cache holds a reference, so an address is never reused for another dtype while cached).
 */

/* A value of @o: an attribute (@call 0) or a method called without arguments. New reference. */
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

#define DTYPE_CACHE 32
static struct {
    PyObject *dtype; /* a strong reference */
    char code[24];   /* "<f4" (NumPy's dtype.str) or "f4" (a torch dtype) */
    long long itemsize; /* NumPy's dtype.itemsize; 0 for a torch dtype */
} g_dtypes[DTYPE_CACHE];
static int g_ndtypes;

/*
 * The type code of @p dt into @p code (24 bytes): NumPy's dtype.str (@p torch 0) or the code
 * of str(torch dtype) (@p torch 1; its name where unknown). Cached by the dtype's identity.
 */
static int dtype_of(PyObject *dt, int torch, char *code, long long *itemsize)
{
    for (int i = 0; i < g_ndtypes; i++)
        if (g_dtypes[i].dtype == dt) {
            memcpy(code, g_dtypes[i].code, sizeof g_dtypes[i].code);
            if (itemsize)
                *itemsize = g_dtypes[i].itemsize;
            return 0;
        }
    long long is = 0;
    if (!torch && (is = get_ll(dt, s_itemsize, 0, "dtype.itemsize")) == -1 && PyErr_Occurred())
        return -1;
    if (itemsize)
        *itemsize = is;
    PyObject *ds = torch ? PyObject_Str(dt) : PyObject_GetAttr(dt, s_str);
    const char *name = ds && PyUnicode_Check(ds) ? PyUnicode_AsUTF8AndSize(ds, NULL) : NULL;
    const char *c = name && torch ? dtype_code(name) : name;
    snprintf(code, 24, "%s", c ? c : (name ? name : "?"));
    Py_XDECREF(ds);
    if (PyErr_Occurred())
        return -1;
    if (g_ndtypes < DTYPE_CACHE && (torch ? c != NULL : name != NULL)) {
        Py_INCREF(dt);
        g_dtypes[g_ndtypes].dtype = dt;
        g_dtypes[g_ndtypes].itemsize = is;
        memcpy(g_dtypes[g_ndtypes++].code, code, 24);
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
static int from_torch(const arg_ctx *c, PyObject *o, const char *want, int ordinal,
                      conv_arg *out)
{
    int r = get_true(o, s_is_cuda, 0);
    if (r < 0)
        return -1;
    if (!r) {
        PyErr_Format(PyExc_TypeError, ARGFMT " is a tensor in host (CPU) memory; move it to the "
                     "GPU first (tensor.cuda())", ARGV(c));
        return -1;
    }
    if ((r = get_true(o, s_requires_grad, 0)) != 0) {
        if (r > 0)
            PyErr_Format(PyExc_ValueError, ARGFMT " is a tensor that requires grad; pass "
                         "tensor.detach() (fdlink kernels are not differentiable)", ARGV(c));
        return -1;
    }
    if ((r = get_true(o, s_is_contiguous, 1)) != 1) {
        if (r == 0)
            PyErr_Format(PyExc_ValueError, ARGFMT " is not C-contiguous (a strided view); pass "
                         "tensor.contiguous()", ARGV(c));
        return -1;
    }
    long long dev = get_ll(o, s_get_device, 1, "get_device()");
    if ((dev == -1 && PyErr_Occurred()) || check_device(c, dev, ordinal) < 0)
        return -1;
    if (want) {
        PyObject *dt = PyObject_GetAttr(o, s_dtype);
        char got[24];
        int rc = dt ? dtype_of(dt, 1, got, NULL) : -1;
        Py_XDECREF(dt);
        if (rc < 0 || check_dtype(c, got, want) < 0)
            return -1;
    }
    long long nbytes = get_ll(o, s_nbytes, 0, "nbytes");
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
    unsigned long long ptr = get_ptr(o, s_data_ptr, 1, "data_ptr()");
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
static int from_cupy(const arg_ctx *c, PyObject *o, const char *want, int ordinal,
                     conv_arg *out)
{
    PyObject *cc = PyObject_GetAttr(o, s_c_contiguous_);
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
    PyObject *mem = PyObject_GetAttr(o, s_data);
    if (!mem)
        return -1;
    long long dev = get_ll(mem, s_device_id, 0, "data.device_id");
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
    PyObject *dt = PyObject_GetAttr(o, s_dtype);
    char got[24] = "?";
    long long itemsize = -1;
    if (!dt || dtype_of(dt, 0, got, &itemsize) < 0 || (want && check_dtype(c, got, want) < 0)) {
        Py_XDECREF(dt);
        Py_DECREF(mem);
        return -1;
    }
    Py_DECREF(dt);
    long long size = get_ll(o, s_size, 0, "size");
    unsigned long long ptr = PyErr_Occurred() ? 0 : get_ptr(mem, s_ptr, 0, "data.ptr");
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

/*
 * What a parameter takes: from its declaration (signature=, a map's declared types), else from
 * the class its code gives it (fdl_param_class), else nothing but its size (P_ANY).
 */
enum { P_ANY = 0, P_FLOAT, P_SIGNED, P_UNSIGNED, P_INT, P_BOOL, P_POINTER, P_BYTES };

static int param_kind(const arg_ctx *c, const char *want)
{
    if (want) {
        if (want[0] == '*')
            return P_POINTER;
        switch (want[0]) {
        case 'f': return P_FLOAT;
        case 'i': return P_SIGNED;
        case 'u': return P_UNSIGNED;
        case 'b': return P_BOOL;
        default: break;
        }
    }
    switch (c->cls) {
    case FDL_PARAM_FLOAT: return P_FLOAT;
    case FDL_PARAM_SIGNED: return P_SIGNED;
    /* PTX's .u32 is C's int and unsigned alike (nvcc writes .u32 for both), .u64 a pointer or
     * a 64-bit integer: either sign is taken, in two's complement, as C converts */
    case FDL_PARAM_UNSIGNED:
    case FDL_PARAM_BITS: return P_INT;
    case FDL_PARAM_BYTES: return P_BYTES;
    default: return P_ANY;
    }
}

/* "a float of 4 bytes", for messages. */
static const char *kind_words(int kind, size_t size, const char *want, char *buf, size_t n)
{
    if (want && (kind == P_POINTER || want[0] != '*')) {
        snprintf(buf, n, "%s %s was declared", kind == P_POINTER ? "a pointer" : "a scalar",
                 want);
        return buf;
    }
    static const char *words[] = {"a parameter", "a float", "a signed integer",
                                  "an unsigned integer", "an integer or pointer", "a bool",
                                  "a pointer", "a struct"};
    snprintf(buf, n, "the parameter is %s of %zu bytes", words[kind], size);
    return buf;
}

static int refuse_kind(const arg_ctx *c, const char *what, int kind, size_t size,
                       const char *want, const char *hint)
{
    char w[96];
    PyErr_Format(PyExc_TypeError, ARGFMT " is %s, but %s%s", ARGV(c), what,
                 kind_words(kind, size, want, w, sizeof w), hint);
    return -1;
}

static const char STRUCT_HINT[] = " (pass its bytes: bytes, bytearray, memoryview, a "
                                  "ctypes.Structure or a NumPy structured scalar)";

/* A Python bool, int or float for a scalar parameter, converted as C converts an argument to
 * its prototype (docs/python.md): @p kind from param_kind, @p size 0 when not known. */
static int convert_number(const arg_ctx *c, PyObject *o, size_t size, const char *want, int kind,
                          conv_arg *out)
{
    size_t wsize = want && want[0] != '*' ? (size_t)atoi(want + 1) : 0;
    if (!size)
        size = wsize;
    if (PyBool_Check(o)) { /* a bool only where an integer is */
        if (kind == P_FLOAT || kind == P_POINTER || kind == P_BYTES)
            return refuse_kind(c, "a bool", kind, size, want, kind == P_BYTES ? STRUCT_HINT : "");
        if (size > 8)
            return refuse_kind(c, "a bool", P_BYTES, size, NULL, STRUCT_HINT);
        out->value[0] = o == Py_True;
        out->size = size ? size : 1;
        return 0;
    }
    if (PyFloat_Check(o)) {
        if (kind != P_FLOAT && kind != P_ANY) {
            if (want && want[0] != '*') {
                PyErr_Format(PyExc_TypeError, ARGFMT ": a float where %s was declared", ARGV(c),
                             want);
                return -1;
            }
            return refuse_kind(c, "a float", kind, size, want, kind == P_BYTES ? STRUCT_HINT : "");
        }
        return pack_float(c, o, size ? size : 8, out);
    }
    /* an int */
    if (kind == P_FLOAT)
        return pack_float(c, o, size ? size : 8, out); /* as C converts an int to float */
    if (kind == P_BYTES || (size && size != 1 && size != 2 && size != 4 && size != 8))
        return refuse_kind(c, "an int", P_BYTES, size, NULL, STRUCT_HINT);
    if (kind == P_BOOL) {
        int t = PyObject_IsTrue(o);
        if (t < 0)
            return -1;
        out->value[0] = (unsigned char)t;
        out->size = size ? size : 1;
        return 0;
    }
    char k = kind == P_SIGNED ? 'i' : kind == P_UNSIGNED || kind == P_POINTER ? 'u' : 0;
    return pack_int(c, o, size ? size : 8, k, out);
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1F;
    double m = h & 0x3FF, v;
    if (e == 31)
        return 0.0; /* inf and NaN: float_exact takes them before */
    v = e == 0 ? m : m + 1024;
    for (int i = e ? e : 1; i < 25; i++)
        v /= 2; /* exact: powers of two */
    for (int i = 25; i < e; i++)
        v *= 2;
    return (h & 0x8000) ? -v : v;
}

/* Whether double @p d is exactly a float of @p size bytes (NaN counts as exact). */
static int float_exact(double d, size_t size)
{
    if (d != d || size == 8 || d - d != 0.0) /* NaN, a double, an infinity */
        return 1;
    if (size == 4)
        return (double)(float)d == d;
    if (size == 2)
        return half_to_double(half_of(d)) == d;
    return 0;
}

/*
 * A NumPy scalar of a native-order integer, bool or float type: converted as the Python number
 * it holds when the parameter's kind is known, exactly or not at all (np.float64(0.1) for a
 * float parameter is refused: it is no float32; np.int64(8) for an int parameter is 8); packed as
 * its own type's bytes when only the size is known. Other scalars (structured ones among them)
 * are packed bytes (from_host).
 */
static int from_npscalar(const arg_ctx *c, PyObject *o, size_t size, const char *want,
                         PyObject *keep, conv_arg *out)
{
    PyObject *dt = PyObject_GetAttr(o, s_dtype);
    char code[24];
    int rc = dt ? dtype_of(dt, 0, code, NULL) : -1;
    Py_XDECREF(dt);
    if (rc < 0)
        return -1;
    char k = code[0] ? code[1] : 0;
    long n = k ? strtol(code + 2, NULL, 10) : 0;
    if (!strchr("<|=", code[0]) || !k || !strchr("iubf", k) || n < 1 || n > 8 ||
        (k == 'f' && n != 2 && n != 4 && n != 8))
        return from_host(c, o, size, want, keep, out);
    int kind = param_kind(c, want);
    if (kind == P_ANY) {
        /* only the size is known: the scalar's own bytes, which must have it */
        if (size && (size_t)n != size) {
            PyErr_Format(PyExc_ValueError, ARGFMT " is a scalar of %ld bytes (%s), but the "
                         "parameter takes %zu", ARGV(c), n, code, size);
            return -1;
        }
        return from_packed(c, PyObject_CallMethodObjArgs(o, s_tobytes, NULL), size, "a scalar",
                           keep, out);
    }
    if (!size && want && want[0] != '*')
        size = (size_t)atoi(want + 1);
    PyObject *v = NULL;
    if (k == 'b') {
        int t = PyObject_IsTrue(o);
        if (t < 0)
            return -1;
        v = PyBool_FromLong(t);
    } else if (k == 'f') {
        double d = PyFloat_AsDouble(o); /* exact: float16, 32 and 64 are doubles */
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        if (kind == P_FLOAT && !float_exact(d, size ? size : 8)) {
            PyErr_Format(PyExc_ValueError, ARGFMT " is %R (%s), which is not exactly a float "
                         "of %zu bytes; convert it first", ARGV(c), o, code, size);
            return -1;
        }
        v = PyFloat_FromDouble(d);
    } else {
        v = PyNumber_Index(o);
        if (v && kind == P_FLOAT) {
            double d = PyLong_AsDouble(v);
            int exact = 0;
            if (!(d == -1.0 && PyErr_Occurred()) && float_exact(d, size ? size : 8)) {
                PyObject *back = PyLong_FromDouble(d);
                exact = back ? PyObject_RichCompareBool(back, v, Py_EQ) : -1;
                Py_XDECREF(back);
            }
            PyErr_Clear();
            if (exact != 1) {
                PyErr_Format(PyExc_ValueError, ARGFMT " is %R (%s), which is not exactly a "
                             "float of %zu bytes; convert it first", ARGV(c), o, code, size);
                Py_DECREF(v);
                return -1;
            }
        }
    }
    if (!v)
        return -1;
    rc = convert_number(c, v, size, want, kind, out);
    Py_DECREF(v);
    return rc;
}

/*
 * Convert one argument. @p size: the parameter's bytes (0 when unknown). @p want: declared type,
 * "*f4" for an array of float32, "f4" for a float32 scalar, NULL when undeclared; c->cls the
 * code's class of the parameter. @p ordinal: the launch's device (-1: any). Objects that must
 * outlive the launch go to @p keep.
 */
static int convert_arg_raw(const arg_ctx *c, PyObject *o, size_t size, const char *want,
                           int ordinal, PyObject *keep, conv_arg *out)
{
    memset(out, 0, sizeof *out);
    const char *want_arr = want && want[0] == '*' ? want + 1 : NULL;
    const char *want_scalar = want && want[0] != '*' ? want : NULL;
    int kind = param_kind(c, want);
    if (PyObject_TypeCheck(o, BufferType)) {
        BufferObject *b = (BufferObject *)o;
        if (!b->buf) {
            PyErr_Format(PyExc_ValueError, ARGFMT " is a freed buffer", ARGV(c));
            return -1;
        }
        if (check_dtype(c, b->typestr, want_arr) < 0)
            return -1;
        if (ordinal >= 0 && ((DeviceObject *)b->device)->ordinal != ordinal) {
            PyErr_Format(PyExc_ValueError, ARGFMT " is a buffer of device %d, but the kernel "
                         "runs on device %d", ARGV(c), ((DeviceObject *)b->device)->ordinal,
                         ordinal);
            return -1;
        }
        uint64_t a = fdl_buffer_address(b->buf);
        memcpy(out->value, &a, 8);
        out->size = 8;
        out->is_array = 1;
        out->nbytes = fdl_buffer_size(b->buf);
        /* the memory outlives the launch, whatever Buffer.free() says meanwhile */
        return PyList_Append(keep, b->mem) < 0 ? -1 : PyList_Append(keep, o);
    }
    if (PyFloat_Check(o) && !PyFloat_CheckExact(o) && classify(o) == K_NPSCALAR)
        return from_npscalar(c, o, size, want_scalar, keep, out); /* np.float64: exact only */
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o)) {
        if (PyLong_Check(o) && !PyBool_Check(o) && kind == P_POINTER && size > 8)
            return refuse_kind(c, "an int", P_BYTES, size, NULL, STRUCT_HINT);
        return convert_number(c, o, size, want, kind, out);
    }
    if (kind == P_FLOAT && PyBytes_Check(o) == 0 && PyByteArray_Check(o) == 0 &&
        !PyObject_HasAttr(o, s_array_interface) && !PyObject_HasAttr(o, s_cai) &&
        PyObject_HasAttrString(o, "__float__"))
        return pack_float(c, o, size ? size : (want_scalar ? (size_t)atoi(want_scalar + 1) : 8),
                          out);
    if (PyErr_Occurred())
        return -1;
    if (!size && want_scalar)
        size = (size_t)atoi(want_scalar + 1);
    /* packed bytes of any size (a struct by value): passed as they are */
    if (PyBytes_Check(o)) {
        Py_INCREF(o);
        return from_packed(c, o, size, "bytes", keep, out);
    }
    if (PyByteArray_Check(o) || PyMemoryView_Check(o))
        return from_packed(c, PyBytes_FromObject(o), size,
                           PyByteArray_Check(o) ? "a bytearray" : "a memoryview", keep, out);
    int k = classify(o);
    if (k == K_CTYPES)
        return from_packed(c, PyBytes_FromObject(o), size, "a ctypes object", keep, out);
    if (k == K_DLPACK && kind == P_BYTES &&
        PyObject_HasAttr((PyObject *)Py_TYPE(o), s_array_interface))
        k = K_HOSTARRAY; /* NumPy's arrays export DLPack too: a struct's one-element array */
    if (k == K_TORCH || k == K_CUPY || k == K_CAI || k == K_DLPACK) {
        if (kind == P_FLOAT || kind == P_SIGNED || kind == P_UNSIGNED || kind == P_BOOL ||
            kind == P_BYTES || (size && size != 8))
            return refuse_kind(c, "an array (a pointer)", kind ? kind : P_BYTES, size, want,
                               kind == P_BYTES || !kind ? STRUCT_HINT : "");
    }
    if (k == K_TORCH || k == K_CUPY) {
        int rc = k == K_TORCH ? from_torch(c, o, want_arr, ordinal, out)
                              : from_cupy(c, o, want_arr, ordinal, out);
        return rc < 0 ? -1 : PyList_Append(keep, o);
    }
    if (k == K_CAI) {
        PyObject *cai = PyObject_GetAttr(o, s_cai);
        if (!cai) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            if (refuse_grad(c, o) < 0) {
                Py_XDECREF(et);
                Py_XDECREF(ev);
                Py_XDECREF(tb);
                return -1;
            }
            PyErr_Restore(et, ev, tb);
            return -1;
        }
        int rc = from_cai(c, o, cai, want_arr, out);
        Py_DECREF(cai);
        return rc < 0 ? -1 : PyList_Append(keep, o);
    }
    if (k == K_DLPACK) {
        if (from_dlpack(c, o, want_arr, ordinal, keep, out) < 0)
            return -1;
        return PyList_Append(keep, o);
    }
    if (k == K_NPSCALAR)
        return from_npscalar(c, o, size, want_scalar, keep, out);
    if (k == K_HOSTARRAY)
        return from_host(c, o, size, want_scalar, keep, out);
    PyErr_Format(PyExc_TypeError,
                 ARGFMT " is a %s: expected an array (__cuda_array_interface__ or DLPack), an "
                 "fdlink Buffer, an int (a scalar or a raw device pointer), a float, a NumPy "
                 "scalar, or a struct's bytes (bytes, bytearray, memoryview, ctypes.Structure)",
                 ARGV(c), tname(o));
    return -1;
}

/*
 * A refused argument as an fdlink error: the TypeError, ValueError or OverflowError that the
 * conversion raised becomes fdlink's InvalidArgumentError (a ValueError) or ArgumentTypeError (a
 * TypeError too), naming the argument; other exceptions (a producer's own) pass unchanged.
 */
static void arg_error(const arg_ctx *c)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int is_type = et == PyExc_TypeError;
    if ((!is_type && et != PyExc_ValueError && et != PyExc_OverflowError) || !g_error_factory) {
        PyErr_Restore(et, ev, tb);
        return;
    }
    PyErr_NormalizeException(&et, &ev, &tb);
    PyObject *s = ev ? PyObject_Str(ev) : NULL;
    PyObject *msg = NULL;
    if (s && c && PyUnicode_Check(s)) {
        const char *t = PyUnicode_AsUTF8AndSize(s, NULL);
        if (t && strncmp(t, "argument ", 9) != 0 && strncmp(t, "kernel ", 7) != 0)
            msg = PyUnicode_FromFormat(ARGFMT ": %U", ARGV(c), s);
    }
    if (!msg && s) {
        msg = s;
        Py_INCREF(msg);
    }
    PyObject *record = msg ? Py_BuildValue("{s:i,s:s,s:i,s:s,s:I,s:I,s:s,s:O,s:O,s:O,s:O,s:s,"
                                           "s:n}", "code", FDL_EINVAL, "status",
                                           fdl_status_name(FDL_EINVAL), "backend_code", 0,
                                           "source", "", "line", 0u, "column", 0u, "symbol",
                                           c ? c->name : "", "message", msg, "formatted", msg,
                                           "log", Py_None, "diagnostics", Py_None, "python",
                                           is_type ? "TypeError" : "ValueError", "argument",
                                           c ? c->index + 1 : (Py_ssize_t)0)
                              : NULL;
    PyObject *exc = record ? PyObject_CallFunctionObjArgs(g_error_factory, record, NULL) : NULL;
    Py_XDECREF(record);
    Py_XDECREF(msg);
    Py_XDECREF(s);
    if (!exc) { /* the original is better than none */
        PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        return;
    }
    if (ev)
        PyException_SetCause(exc, ev); /* steals ev */
    else
        Py_XDECREF(ev);
    Py_XDECREF(et);
    Py_XDECREF(tb);
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
}

static int convert_arg(const arg_ctx *c, PyObject *o, size_t size, const char *want, int ordinal,
                       PyObject *keep, conv_arg *out)
{
    if (convert_arg_raw(c, o, size, want, ordinal, keep, out) == 0)
        return 0;
    arg_error(c);
    return -1;
}

/* ---- Kernel ----------------------------------------------------------------------------- */

#define MAX_PARAMS 256

typedef struct {
    PyObject_HEAD
    fdl_kernel *kernel;
    PyObject *module;
    int ordinal;
    DeviceObject *dev;
    int params_known;
    Py_ssize_t nparams;
    size_t sizes[MAX_PARAMS];
    PyObject *types; /* tuple of declared types ("*f4", "i4", None) or None */
    const char *name;
    /* the parameters as the kernel's code says them (fdl_link_kernel_params,
     * fdl_image_kernel_param_info; set by fdlink._core): classes and sizes */
    int code_known;
    Py_ssize_t ncode;
    unsigned char code_cls[MAX_PARAMS];
    size_t code_size[MAX_PARAMS];
    PyObject *code_params; /* the tuple given, or None */
} KernelObject;

static PyObject *Module_kernel(ModuleObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:kernel", &name))
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_kernel *k = NULL;
    int rc = fdl_module_get_kernel(&k, self->mod, name, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    KernelObject *o = (KernelObject *)PyType_GenericAlloc(KernelType, 0);
    if (!o)
        return NULL;
    o->kernel = k;
    o->module = (PyObject *)self;
    Py_INCREF(self);
    o->ordinal = ((DeviceObject *)self->device)->ordinal;
    o->dev = (DeviceObject *)self->device;
    o->name = fdl_kernel_name(k);
    o->types = Py_None;
    Py_INCREF(Py_None);
    o->code_params = Py_None;
    Py_INCREF(Py_None);
    fdl_kernel_attrs attrs;
    if (fdl_kernel_get_attrs(k, &attrs, &err) == FDL_OK && attrs.params_known &&
        attrs.nparams <= MAX_PARAMS) {
        o->params_known = 1;
        o->nparams = (Py_ssize_t)attrs.nparams;
        for (size_t i = 0; i < attrs.nparams; i++)
            if (fdl_kernel_param(k, i, NULL, &o->sizes[i], &err) != FDL_OK)
                o->params_known = 0;
    }
    return (PyObject *)o;
}

static void Kernel_dealloc(KernelObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->module);
    Py_XDECREF(self->types);
    Py_XDECREF(self->code_params);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* Convert a whole argument tuple; @p vals receives @p n converted arguments. */
/* Parameter @p i's size (the driver's, else the code's; 0: not known) and code class. */
static size_t param_of(const KernelObject *k, Py_ssize_t i, int *cls)
{
    size_t code = k->code_known && i < k->ncode ? k->code_size[i] : 0;
    size_t size = k->params_known && i < k->nparams ? k->sizes[i] : code;
    /* a class is believed only for a parameter of the size the code gives it */
    *cls = k->code_known && i < k->ncode && (!code || code == size) ? k->code_cls[i] : 0;
    return size;
}

/* The number of parameters, from the driver or else the code; -1 when neither says. */
static Py_ssize_t param_count(const KernelObject *k)
{
    return k->params_known ? k->nparams : k->code_known ? k->ncode : -1;
}

static int convert_args(KernelObject *k, PyObject *const *args, Py_ssize_t n, conv_arg *vals,
                        PyObject *keep, fdl_stream *stream)
{
    Py_ssize_t want_n = param_count(k);
    if (want_n >= 0 && n != want_n) {
        arg_ctx c = {"kernel", k->name, -1, k->dev, stream, 0, 0};
        PyErr_Format(PyExc_TypeError, "kernel %s takes %zd parameters, but %zd arguments were "
                     "given", k->name, want_n, n);
        arg_error(&c);
        return -1;
    }
    if (n > MAX_PARAMS) {
        PyErr_Format(PyExc_TypeError, "at most %d arguments", MAX_PARAMS);
        return -1;
    }
    Py_ssize_t ntypes = k->types != Py_None ? PyTuple_Size(k->types) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        arg_ctx c = {"kernel", k->name, i, k->dev, stream, 0, 0};
        const char *want = NULL;
        if (i < ntypes) {
            PyObject *t = PyTuple_GetItem(k->types, i);
            if (t != Py_None && utf8_of(t, &want, 0, "a declared type") < 0)
                return -1;
        }
        size_t size = param_of(k, i, &c.cls);
        if (convert_arg(&c, args[i], size, want, k->ordinal, keep, &vals[i]) < 0)
            return -1;
    }
    return 0;
}

/* launch(grid, block, shared_mem, stream, flags, *args) */
static PyObject *Kernel_launch(KernelObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 5)
        return PyErr_Format(PyExc_TypeError, "launch(grid, block, shared_mem, stream, flags, *args)");
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    if (dim3_of(args[0], &cfg.grid, "grid") < 0 || dim3_of(args[1], &cfg.block, "block") < 0 ||
        stream_of(args[3], &cfg.stream) < 0)
        return NULL;
    size_t shared;
    if (size_arg(args[2], "shared_mem", &shared) < 0)
        return NULL;
    unsigned long flags = PyLong_AsUnsignedLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    cfg.shared_bytes = shared;
    cfg.flags = (unsigned)flags;
    Py_ssize_t n = nargs - 5;
    conv_arg vals[MAX_PARAMS > 64 ? 64 : MAX_PARAMS];
    conv_arg *v = n <= 64 ? vals : calloc((size_t)n, sizeof *v);
    fdl_arg a[64];
    fdl_arg *ap = n <= 64 ? a : calloc((size_t)n, sizeof *ap);
    PyObject *keep = PyList_New(0), *ret = NULL;
    if (!v || !ap || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    if (convert_args(self, args + 5, n, v, keep, cfg.stream) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        ap[i] = fdl_arg_make(ARG_DATA(&v[i]), v[i].size);
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    if (cfg.flags & FDL_LAUNCH_SYNC) {
        rc = fdl_kernel_launch_ex(self->kernel, &cfg, ap, (size_t)n, &err);
    } else {
        rc = fdl_kernel_launch_ex(self->kernel, &cfg, ap, (size_t)n, &err);
    }
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    Py_XDECREF(keep);
    if (v != vals)
        free(v);
    if (ap != a)
        free(ap);
    return ret;
}

/* _time_launches(n, grid, block, shared_mem, stream, flags, *args) -> seconds: the arguments
 * converted once, then n checked launches (fdl_kernel_launch_ex) in a C loop: the C cost of an
 * unprepared launch, the baseline of bench/python_launch.py */
static PyObject *Kernel_time_launches(KernelObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 6)
        return PyErr_Format(PyExc_TypeError, "_time_launches(n, grid, block, shared_mem, stream, "
                            "flags, *args)");
    Py_ssize_t reps = PyLong_AsSsize_t(args[0]);
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    if ((reps < 0 && PyErr_Occurred()) || dim3_of(args[1], &cfg.grid, "grid") < 0 ||
        dim3_of(args[2], &cfg.block, "block") < 0 || stream_of(args[4], &cfg.stream) < 0)
        return NULL;
    if (size_arg(args[3], "shared_mem", &cfg.shared_bytes) < 0)
        return NULL;
    cfg.flags = (unsigned)PyLong_AsUnsignedLong(args[5]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t n = nargs - 6;
    conv_arg *v = calloc((size_t)(n ? n : 1), sizeof *v);
    fdl_arg *ap = calloc((size_t)(n ? n : 1), sizeof *ap);
    PyObject *keep = PyList_New(0), *ret = NULL;
    if (!v || !ap || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    if (convert_args(self, args + 6, n, v, keep, cfg.stream) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        ap[i] = fdl_arg_make(ARG_DATA(&v[i]), v[i].size);
    fdl_error err = FDL_ERROR_INIT;
    struct timespec t0, t1;
    int rc = FDL_OK;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (Py_ssize_t i = 0; i < reps && rc == FDL_OK; i++)
        rc = fdl_kernel_launch_ex(self->kernel, &cfg, ap, (size_t)n, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
done:
    Py_XDECREF(keep);
    free(v);
    free(ap);
    return ret;
}

/* ---- Configured: kernel[grid, block] ---------------------------------------------------- */

/* A kernel with its geometry, stream and flags, called with the arguments (Numba's
 * kernel[grid, block](*args)): the arguments converted and checked at every call, in C. */
typedef struct {
    PyObject_HEAD
    PyObject *kernel;
    PyObject *grid, *block, *shared, *stream, *flags;
    PyObject *fallback; /* called with keyword arguments (the Python layer's), or None */
} ConfiguredObject;

static PyObject *Kernel_configure(KernelObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError,
                            "configure(grid, block, shared_mem, stream, flags, fallback)");
    fdl_dim3 d;
    fdl_stream *st;
    if (dim3_of(args[0], &d, "grid") < 0 || dim3_of(args[1], &d, "block") < 0 ||
        stream_of(args[3], &st) < 0)
        return NULL;
    ConfiguredObject *o = (ConfiguredObject *)PyType_GenericAlloc(ConfiguredType, 0);
    if (!o)
        return NULL;
    PyObject **slots[7] = {&o->kernel, &o->grid,  &o->block,   &o->shared,
                           &o->stream, &o->flags, &o->fallback};
    PyObject *vals[7] = {(PyObject *)self, args[0], args[1], args[2], args[3], args[4], args[5]};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(vals[i]);
        *slots[i] = vals[i];
    }
    return (PyObject *)o;
}

static void Configured_dealloc(ConfiguredObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->kernel);
    Py_XDECREF(self->grid);
    Py_XDECREF(self->block);
    Py_XDECREF(self->shared);
    Py_XDECREF(self->stream);
    Py_XDECREF(self->flags);
    Py_XDECREF(self->fallback);
    PyObject_Free(self);
    Py_DECREF(tp);
}

static PyObject *Kernel_launch(KernelObject *self, PyObject *const *args, Py_ssize_t nargs);

/* c(*args): Kernel.launch(grid, block, shared, stream, flags, *args); with keyword arguments,
 * the fallback (fdlink._core._Configured, which converts streams and flags) */
static PyObject *Configured_call(ConfiguredObject *self, PyObject *args, PyObject *kwds)
{
    if (kwds && PyDict_Size(kwds)) {
        if (self->fallback == Py_None)
            return PyErr_Format(PyExc_TypeError, "a configured kernel takes no keyword arguments");
        return PyObject_Call(self->fallback, args, kwds);
    }
    Py_ssize_t n = PyTuple_Size(args);
    PyObject *small[5 + 16];
    PyObject **all = n <= 16 ? small : PyMem_Malloc((size_t)(n + 5) * sizeof *all);
    if (!all)
        return PyErr_NoMemory();
    all[0] = self->grid;
    all[1] = self->block;
    all[2] = self->shared;
    all[3] = self->stream;
    all[4] = self->flags;
    for (Py_ssize_t i = 0; i < n; i++)
        all[5 + i] = PyTuple_GetItem(args, i);
    PyObject *r = Kernel_launch((KernelObject *)self->kernel, all, n + 5);
    if (all != small)
        PyMem_Free(all);
    return r;
}

static PyType_Slot Configured_slots[] = {{Py_tp_dealloc, (void *)Configured_dealloc},
                                         {Py_tp_call, (void *)Configured_call},
                                         {0, NULL}};
static PyType_Spec Configured_spec = {"fdlink._fdlink.Configured", sizeof(ConfiguredObject), 0,
                                      Py_TPFLAGS_DEFAULT, Configured_slots};

/* ---- Launch (prepared) ------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    fdl_launch *launch;
    PyObject *kernel;
    PyObject *stream;
    PyObject *keep; /* list: arrays and consumed tensors the launch points into */
    PyObject *rebound; /* dict: index -> what set_arg's value needs kept (replaced each time) */
} LaunchObject;

/* prepare(grid, block, shared_mem, stream, flags, *args) */
static PyObject *Kernel_prepare(KernelObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 5)
        return PyErr_Format(PyExc_TypeError, "prepare(grid, block, shared_mem, stream, flags, *args)");
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    if (dim3_of(args[0], &cfg.grid, "grid") < 0 || dim3_of(args[1], &cfg.block, "block") < 0 ||
        stream_of(args[3], &cfg.stream) < 0)
        return NULL;
    if (size_arg(args[2], "shared_mem", &cfg.shared_bytes) < 0)
        return NULL;
    cfg.flags = (unsigned)PyLong_AsUnsignedLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (cfg.flags & FDL_LAUNCH_SYNC)
        return PyErr_Format(PyExc_ValueError, "a prepared launch cannot be synchronous (sync=True); "
                            "call module.check_status() or device.synchronize() after it");
    Py_ssize_t n = nargs - 5;
    if (n > MAX_PARAMS)
        return PyErr_Format(PyExc_TypeError, "at most %d arguments", MAX_PARAMS);
    conv_arg *v = calloc((size_t)(n ? n : 1), sizeof *v);
    fdl_arg *ap = calloc((size_t)(n ? n : 1), sizeof *ap);
    LaunchObject *o = (LaunchObject *)PyType_GenericAlloc(LaunchType, 0);
    PyObject *ret = NULL;
    if (!v || !ap || !o) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    o->kernel = (PyObject *)self;
    Py_INCREF(self);
    o->stream = args[3];
    Py_INCREF(args[3]);
    o->keep = PyList_New(0);
    if (!o->keep || convert_args(self, args + 5, n, v, o->keep, cfg.stream) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        ap[i] = fdl_arg_make(ARG_DATA(&v[i]), v[i].size);
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_launch_create(&o->launch, self->kernel, &cfg, ap, (size_t)n, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = (PyObject *)o;
    o = NULL;
done:
    Py_XDECREF(o);
    free(v);
    free(ap);
    return ret;
}

static PyObject *Launch_repr(LaunchObject *self)
{
    return PyUnicode_FromFormat("<fdlink.PreparedLaunch of kernel '%s'>",
                                ((KernelObject *)self->kernel)->name);
}

static void Launch_dealloc(LaunchObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_launch_destroy(self->launch);
    Py_XDECREF(self->keep);
    Py_XDECREF(self->rebound);
    Py_XDECREF(self->stream);
    Py_XDECREF(self->kernel);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* launch() runs it: the C prepared launch, nothing else */
static PyObject *Launch_call(LaunchObject *self, PyObject *args, PyObject *kwds)
{
    if ((args && PyTuple_Size(args)) || (kwds && PyDict_Size(kwds)))
        return PyErr_Format(PyExc_TypeError, "a prepared launch takes no arguments (use set_arg)");
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_launch_run(self->launch, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

/* set_arg(index, value): a new value for one argument, converted as at preparation. */
static PyObject *Launch_set_arg(LaunchObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyLong_Check(args[0]))
        return PyErr_Format(PyExc_TypeError, "set_arg(index, value)");
    KernelObject *k = (KernelObject *)self->kernel;
    Py_ssize_t i = PyLong_AsSsize_t(args[0]);
    if (i < 0 || (param_count(k) >= 0 && i >= param_count(k)))
        return PyErr_Format(PyExc_IndexError, "argument index %zd out of range", i);
    const char *want = NULL;
    if (k->types != Py_None && i < PyTuple_Size(k->types)) {
        PyObject *t = PyTuple_GetItem(k->types, i);
        if (t != Py_None && utf8_of(t, &want, 0, "a declared type") < 0)
            return NULL;
    }
    arg_ctx c = {"kernel", k->name, i, k->dev, NULL, 0, 0};
    stream_of(self->stream, &c.stream);
    conv_arg v;
    PyObject *keep = PyList_New(0), *key = NULL;
    if (!keep)
        return NULL;
    size_t size = param_of(k, i, &c.cls);
    if (convert_arg(&c, args[1], size, want, k->ordinal, keep, &v) < 0) {
        Py_DECREF(keep);
        return NULL;
    }
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_launch_set_arg(self->launch, (size_t)i, ARG_DATA(&v), v.size, &err);
    if (rc != FDL_OK) {
        Py_DECREF(keep);
        return raise_fdl(rc, &err, NULL);
    }
    /* what the new value needs kept replaces what the previous set_arg of @i kept */
    if (!self->rebound && !(self->rebound = PyDict_New())) {
        Py_DECREF(keep);
        return NULL;
    }
    key = PyLong_FromSsize_t(i);
    rc = key ? PyDict_SetItem(self->rebound, key, keep) : -1;
    Py_XDECREF(key);
    Py_DECREF(keep);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* _time_runs(n) -> seconds: n runs of fdl_launch_run in a C loop (bench/python_launch.py's
 * baseline: the C prepared launch's cost, in the same process, driver and kernel) */
static PyObject *Launch_time_runs(LaunchObject *self, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n < 0 && PyErr_Occurred())
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    struct timespec t0, t1;
    int rc = FDL_OK;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (Py_ssize_t i = 0; i < n && rc == FDL_OK; i++)
        rc = fdl_launch_run(self->launch, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
}

/* set_geometry(grid, block, shared_mem): checked as at preparation */
static PyObject *Launch_set_geometry(LaunchObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3)
        return PyErr_Format(PyExc_TypeError, "set_geometry(grid, block, shared_mem=0)");
    fdl_dim3 grid, block;
    if (dim3_of(args[0], &grid, "grid") < 0 || dim3_of(args[1], &block, "block") < 0)
        return NULL;
    size_t shared = 0;
    if (nargs > 2 && size_arg(args[2], "shared_mem", &shared) < 0)
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_launch_set_geometry(self->launch, grid, block, shared, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

/* set_stream(stream): the next runs go to that stream: an fdlink Stream, None (the default
 * stream), an int handle or an object with __cuda_stream__ (wrapped on the kernel's device) */
static PyObject *Launch_set_stream(LaunchObject *self, PyObject *arg)
{
    fdl_stream *st = NULL;
    PyObject *wrapped = NULL;
    if (arg != Py_None && !PyObject_TypeCheck(arg, StreamType)) {
        PyObject *h = NULL;
        if (PyLong_Check(arg)) {
            h = arg;
            Py_INCREF(h);
        } else if (PyObject_HasAttrString(arg, "__cuda_stream__")) {
            PyObject *v = PyObject_CallMethod(arg, "__cuda_stream__", NULL);
            if (!v)
                return NULL;
            if (PyTuple_Check(v) && PyTuple_Size(v) == 2 && PyLong_Check(PyTuple_GetItem(v, 1))) {
                h = PyTuple_GetItem(v, 1);
                Py_INCREF(h);
            }
            Py_DECREF(v);
        }
        if (!h)
            return PyErr_Format(PyExc_TypeError, "set_stream: %s is not a stream (pass "
                                "fdlink.stream(s) for other libraries' stream objects)", tname(arg));
        wrapped = Device_wrap_stream(((KernelObject *)self->kernel)->dev, h);
        Py_DECREF(h);
        if (!wrapped)
            return NULL;
        arg = wrapped;
    }
    if (stream_of(arg, &st) < 0) {
        Py_XDECREF(wrapped);
        return NULL;
    }
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_launch_set_stream(self->launch, st, &err);
    if (rc != FDL_OK) {
        Py_XDECREF(wrapped);
        return raise_fdl(rc, &err, NULL);
    }
    PyObject *old = self->stream; /* the stream must outlive the launch: keep the new one */
    Py_INCREF(arg);
    self->stream = arg;
    Py_XDECREF(old);
    Py_XDECREF(wrapped);
    Py_RETURN_NONE;
}

static PyMethodDef Launch_methods[] = {
    {"set_geometry", (PyCFunction)(void (*)(void))Launch_set_geometry, METH_FASTCALL,
     "set_geometry(grid, block, shared_mem=0): new geometry for the next runs (checked)"},
    {"set_stream", (PyCFunction)Launch_set_stream, METH_O,
     "set_stream(stream): the stream of the next runs (a Stream, None, a handle, __cuda_stream__)"},
    {"set_arg", (PyCFunction)(void (*)(void))Launch_set_arg, METH_FASTCALL,
     "set_arg(index, value): change one argument for the next runs"},
    {"_time_runs", (PyCFunction)Launch_time_runs, METH_O,
     "_time_runs(n) -> seconds of n fdl_launch_run calls in C (benchmark baseline)"},
    {NULL, NULL, 0, NULL}};
static PyType_Slot Launch_slots[] = {{Py_tp_dealloc, (void *)Launch_dealloc},
                                     {Py_tp_call, (void *)Launch_call},
                                     {Py_tp_repr, (void *)Launch_repr},
                                     {Py_tp_methods, Launch_methods},
                                     {Py_tp_doc, "a prepared launch: call it to launch"},
                                     {0, NULL}};
static PyType_Spec Launch_spec = {"fdlink._fdlink.Launch", sizeof(LaunchObject), 0,
                                  Py_TPFLAGS_DEFAULT, Launch_slots};

static PyObject *Kernel_attrs(KernelObject *self, void *c)
{
    (void)c;
    fdl_kernel_attrs a;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_kernel_get_attrs(self->kernel, &a, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    PyObject *sizes = PyTuple_New(self->params_known ? self->nparams : 0);
    for (Py_ssize_t i = 0; sizes && self->params_known && i < self->nparams; i++)
        PyTuple_SetItem(sizes, i, PyLong_FromSize_t(self->sizes[i]));
    return Py_BuildValue("{s:i,s:n,s:n,s:n,s:I,s:n,s:i,s:i,s:O,s:N,s:O}", "registers",
                         a.registers, "static_shared", (Py_ssize_t)a.static_shared, "local",
                         (Py_ssize_t)a.local, "constant", (Py_ssize_t)a.constant,
                         "max_threads_per_block", a.max_threads_per_block, "max_dynamic_shared",
                         (Py_ssize_t)a.max_dynamic_shared, "ptx_version", a.ptx_version,
                         "binary_version", a.binary_version, "params_known",
                         self->params_known ? Py_True : Py_False, "param_sizes", sizes,
                         "cooperative_groups", a.cooperative_groups ? Py_True : Py_False);
}

/* A `types` attribute's setter: a tuple of argument types, or None (the slot is owned). */
static int set_types(PyObject **slot, PyObject *v)
{
    if (!v || (v != Py_None && !PyTuple_Check(v))) {
        PyErr_SetString(PyExc_TypeError, "types must be a tuple or None");
        return -1;
    }
    PyObject *old = *slot;
    Py_INCREF(v);
    *slot = v;
    Py_XDECREF(old);
    return 0;
}

static PyObject *Kernel_c_handle(KernelObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(self->kernel);
}

static PyObject *Kernel_name(KernelObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->name);
}

static PyObject *Kernel_get_types(KernelObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->types);
    return self->types;
}

static int Kernel_set_types(KernelObject *self, PyObject *v, void *c)
{
    (void)c;
    return set_types(&self->types, v);
}

static PyObject *Kernel_get_code_params(KernelObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->code_params);
    return self->code_params;
}

/* _code_params = ((cls, size), ...): the parameters as the code says them; None: not known */
static int Kernel_set_code_params(KernelObject *self, PyObject *v, void *c)
{
    (void)c;
    if (!v || (v != Py_None && (!PyTuple_Check(v) || PyTuple_Size(v) > MAX_PARAMS))) {
        PyErr_Format(PyExc_TypeError, "_code_params must be a tuple of at most %d (class, size) "
                     "pairs, or None", MAX_PARAMS);
        return -1;
    }
    Py_ssize_t n = v == Py_None ? 0 : PyTuple_Size(v);
    unsigned char cls[MAX_PARAMS];
    size_t size[MAX_PARAMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PyTuple_GetItem(v, i);
        long cl = -1;
        size_t sz = 0;
        if (PyTuple_Check(p) && PyTuple_Size(p) == 2) {
            cl = PyLong_AsLong(PyTuple_GetItem(p, 0));
            sz = PyLong_AsSize_t(PyTuple_GetItem(p, 1));
        }
        if (PyErr_Occurred() || cl < FDL_PARAM_UNKNOWN || cl > FDL_PARAM_BYTES) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "_code_params: each entry is (class, size)");
            return -1;
        }
        cls[i] = (unsigned char)cl;
        size[i] = sz;
    }
    memcpy(self->code_cls, cls, (size_t)n);
    memcpy(self->code_size, size, (size_t)n * sizeof *size);
    self->ncode = n;
    self->code_known = v != Py_None;
    PyObject *old = self->code_params;
    Py_INCREF(v);
    self->code_params = v;
    Py_XDECREF(old);
    return 0;
}

static PyObject *Kernel_set_max_dynamic_shared(KernelObject *self, PyObject *arg)
{
    size_t bytes;
    if (size_arg(arg, "set_max_dynamic_shared: nbytes", &bytes) < 0)
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_kernel_set_max_dynamic_shared(self->kernel, bytes, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef Kernel_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Kernel_launch, METH_FASTCALL,
     "launch(grid, block, shared_mem, stream, flags, *args)"},
    {"_time_launches", (PyCFunction)(void (*)(void))Kernel_time_launches, METH_FASTCALL,
     "_time_launches(n, grid, block, shared_mem, stream, flags, *args) -> seconds (benchmark)"},
    {"configure", (PyCFunction)(void (*)(void))Kernel_configure, METH_FASTCALL,
     "configure(grid, block, shared_mem, stream, flags) -> a callable launching with *args"},
    {"prepare", (PyCFunction)(void (*)(void))Kernel_prepare, METH_FASTCALL,
     "prepare(grid, block, shared_mem, stream, flags, *args) -> Launch"},
    {"set_max_dynamic_shared", (PyCFunction)Kernel_set_max_dynamic_shared, METH_O,
     "allow more dynamic shared memory"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Kernel_getset[] = {
    {"name", (getter)Kernel_name, NULL, NULL, NULL},
    {"attributes", (getter)Kernel_attrs, NULL, "what the driver says about the kernel", NULL},
    {"types", (getter)Kernel_get_types, (setter)Kernel_set_types,
     "declared parameter types ('*f4' an array of float32, 'i4' an int32, None unchecked)", NULL},
    {"_c_handle", (getter)Kernel_c_handle, NULL, "the fdl_kernel's address (fdlink.jax)", NULL},
    {"_code_params", (getter)Kernel_get_code_params, (setter)Kernel_set_code_params,
     "the parameters as the code says them: ((fdl_param_class, size), ...), or None", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot Kernel_slots[] = {{Py_tp_dealloc, (void *)Kernel_dealloc},
                                     {Py_tp_methods, Kernel_methods},
                                     {Py_tp_getset, Kernel_getset},
                                     {Py_tp_doc, "a kernel of a module (Module.kernel())"},
                                     {0, NULL}};
static PyType_Spec Kernel_spec = {"fdlink._fdlink.Kernel", sizeof(KernelObject), 0,
                                  Py_TPFLAGS_DEFAULT, Kernel_slots};

static PyMethodDef Module_methods[] = {
    {"kernel", (PyCFunction)Module_kernel, METH_VARARGS, "kernel(name) -> Kernel"},
    {"kernel_names", (PyCFunction)Module_kernel_names, METH_NOARGS, "names of the kernels"},
    {"check_status", (PyCFunction)Module_check_status, METH_NOARGS,
     "wait, then raise the device status record's failure"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Module_getset[] = {
    {"image", (getter)Module_image, NULL, "the image it was loaded from", NULL},
    {"info_log", (getter)Module_info_log, NULL, "the driver's JIT info log", NULL},
    {"name", (getter)Module_name, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot Module_slots[] = {{Py_tp_dealloc, (void *)Module_dealloc},
                                     {Py_tp_methods, Module_methods},
                                     {Py_tp_getset, Module_getset},
                                     {Py_tp_doc, "a loaded module (Device.load())"},
                                     {0, NULL}};
static PyType_Spec Module_spec = {"fdlink._fdlink.Module", sizeof(ModuleObject), 0,
                                  Py_TPFLAGS_DEFAULT, Module_slots};

/* ---- Gen, Map, Reduction ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_gen *gen;
    PyObject *device; /* or None */
    PyObject *decls;  /* or None */
    int ordinal;
    /* the link options the generator borrows (their arrays and strings, fdl_gen_create's rule),
     * and the dict whose str objects hold those strings */
    link_opts *lo;
    PyObject *opts;
} GenObject;

/* Gen(device_or_None, decls_or_None, arch_or_None, input_paths, data_inputs, link_options) */
static PyObject *Gen_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)kwds;
    PyObject *device, *decls, *arch_o, *paths, *datas, *opts;
    if (!PyArg_ParseTuple(args, "OOOOO!O:Gen", &device, &decls, &arch_o, &paths, &PyList_Type,
                          &datas, &opts))
        return NULL;
    if (device != Py_None && !PyObject_TypeCheck(device, DeviceType))
        return PyErr_Format(PyExc_TypeError, "device must be a Device or None");
    if (decls != Py_None && !PyObject_TypeCheck(decls, DeclsType))
        return PyErr_Format(PyExc_TypeError, "decls must be a Decls or None");
    fdl_gen_options go = FDL_GEN_OPTIONS_INIT;
    GenObject *self = (GenObject *)PyType_GenericAlloc(type, 0);
    const char **inputs = NULL;
    PyObject *held = NULL;
    if (!self)
        return NULL;
    self->device = device;
    Py_INCREF(device);
    self->decls = decls;
    Py_INCREF(decls);
    self->opts = PyDict_Check(opts) ? PyDict_Copy(opts) : (Py_INCREF(opts), opts);
    self->lo = calloc(1, sizeof *self->lo);
    if (!self->opts || !self->lo) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_DECREF(self);
        return NULL;
    }
    if (utf8_of(arch_o, &go.arch, 1, "arch") < 0 || link_opts_from(self->lo, self->opts) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    /* the paths as the file system's bytes, held by @p held while the generator is made */
    if (paths != Py_None) {
        if (!PyList_Check(paths) && !PyTuple_Check(paths)) {
            PyErr_Format(PyExc_TypeError, "input paths must be a list, not %s", tname(paths));
            goto fail;
        }
        Py_ssize_t np = PySequence_Size(paths);
        inputs = calloc((size_t)np + 1, sizeof *inputs);
        held = PyList_New(0);
        if (!inputs || !held) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t i = 0; i < np; i++) {
            PyObject *item = PySequence_GetItem(paths, i), *h = NULL;
            int bad = !item || path_of(item, &h, &inputs[i], "an input path") < 0 ||
                      PyList_Append(held, h) < 0;
            Py_XDECREF(item);
            Py_XDECREF(h);
            if (bad)
                goto fail;
        }
    }
    go.decls = decls != Py_None ? ((DeclsObject *)decls)->decls : NULL;
    go.inputs = inputs;
    go.link = &self->lo->lo;
    self->ordinal = device != Py_None ? ((DeviceObject *)device)->ordinal : -1;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_gen_create(&self->gen,
                            device != Py_None ? ((DeviceObject *)device)->dev : NULL, &go, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < PyList_Size(datas); i++) {
        PyObject *data;
        const char *name, *bytes;
        int kind;
        Py_ssize_t size;
        PyObject *item = PyList_GetItem(datas, i);
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "Osi", &data, &name, &kind) ||
            bytes_of(data, &bytes, &size, "an input") < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "data inputs are (bytes, name, kind)");
            goto fail;
        }
        rc = fdl_gen_add_data(self->gen, bytes, (size_t)size, name, (fdl_input_kind)kind, &err);
        if (rc != FDL_OK) {
            raise_fdl(rc, &err, NULL);
            goto fail;
        }
    }
    free(inputs);
    Py_XDECREF(held);
    return (PyObject *)self;
fail:
    free(inputs);
    Py_XDECREF(held);
    Py_XDECREF(self);
    return NULL;
}

static void Gen_dealloc(GenObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_gen_destroy(self->gen);
    if (self->lo) {
        link_opts_free(self->lo);
        free(self->lo);
    }
    Py_XDECREF(self->opts);
    Py_XDECREF(self->device);
    Py_XDECREF(self->decls);
    PyObject_Free(self);
    Py_DECREF(tp);
}

typedef struct {
    PyObject_HEAD
    fdl_map *map;
    fdl_reduction *red;
    PyObject *gen;
    PyObject *types; /* tuple of declared types per argument, or None */
    const char *name;
    int out_first;   /* the first argument is written (a map's output, a reduction's out) */
} MapObject;

static PyObject *new_map(GenObject *gen, fdl_map *map, fdl_reduction *red, PyTypeObject *type)
{
    MapObject *o = (MapObject *)PyType_GenericAlloc(type, 0);
    if (!o) {
        fdl_map_destroy(map);
        fdl_reduction_destroy(red);
        return NULL;
    }
    o->map = map;
    o->red = red;
    o->gen = (PyObject *)gen;
    Py_INCREF(gen);
    o->types = Py_None;
    Py_INCREF(Py_None);
    o->name = map ? fdl_map_kernel_name(map) : "reduction";
    return (PyObject *)o;
}

static PyObject *Gen_map(GenObject *self, PyObject *args)
{
    const char *name, *modes = NULL;
    if (!PyArg_ParseTuple(args, "s|z:map", &name, &modes))
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_map *map = NULL;
    int rc;
    rc = fdl_map_create(&map, self->gen, name, modes, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    PyObject *o = new_map(self, map, NULL, MapType);
    if (o)
        ((MapObject *)o)->out_first = 1; /* out[i] = f(...) */
    return o;
}

static PyObject *Gen_elementwise(GenObject *self, PyObject *args)
{
    const char *arguments, *operation;
    if (!PyArg_ParseTuple(args, "ss:elementwise", &arguments, &operation))
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_map *map = NULL;
    int rc;
    rc = fdl_elementwise_create(&map, self->gen, arguments, operation, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return new_map(self, map, NULL, MapType);
}

static PyObject *Gen_reduction(GenObject *self, PyObject *args)
{
    fdl_reduction_spec spec = FDL_REDUCTION_SPEC_INIT;
    if (!PyArg_ParseTuple(args, "ssss|z:reduction", &spec.type, &spec.arguments, &spec.map,
                          &spec.reduce, &spec.neutral))
        return NULL;
    fdl_error err = FDL_ERROR_INIT;
    fdl_reduction *red = NULL;
    int rc;
    rc = fdl_reduction_create(&red, self->gen, &spec, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return new_map(self, NULL, red, ReductionType);
}

static PyObject *Gen_arch(GenObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(fdl_gen_arch(self->gen));
}

static PyMethodDef Gen_methods[] = {
    {"map", (PyCFunction)Gen_map, METH_VARARGS, "map(name, modes=None) -> Map"},
    {"elementwise", (PyCFunction)Gen_elementwise, METH_VARARGS,
     "elementwise(arguments, operation) -> Map"},
    {"reduction", (PyCFunction)Gen_reduction, METH_VARARGS,
     "reduction(type, arguments, map, reduce, neutral=None) -> Reduction"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Gen_getset[] = {{"arch", (getter)Gen_arch, NULL, NULL, NULL},
                                   {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot Gen_slots[] = {{Py_tp_new, (void *)Gen_new},
                                  {Py_tp_dealloc, (void *)Gen_dealloc},
                                  {Py_tp_methods, Gen_methods},
                                  {Py_tp_getset, Gen_getset},
                                  {Py_tp_doc, "a kernel generator"},
                                  {0, NULL}};
static PyType_Spec Gen_spec = {"fdlink._fdlink.Gen", sizeof(GenObject), 0, Py_TPFLAGS_DEFAULT,
                               Gen_slots};

static void Map_dealloc(MapObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    fdl_map_destroy(self->map);
    fdl_reduction_destroy(self->red);
    Py_XDECREF(self->types);
    Py_XDECREF(self->gen);
    PyObject_Free(self);
    Py_DECREF(tp);
}

/* The arguments of a map or reduction: arrays (any protocol) or packed scalars (bytes). */
static int gen_args(MapObject *self, PyObject *const *args, Py_ssize_t n, fdl_gen_arg *ga,
                    conv_arg *v, PyObject *keep, fdl_stream *stream)
{
    Py_ssize_t ntypes = self->types != Py_None ? PyTuple_Size(self->types) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        GenObject *g = (GenObject *)self->gen;
        arg_ctx c = {self->map ? "map" : "reduction", self->name, i,
                     g->device != Py_None ? (DeviceObject *)g->device : NULL, stream,
                     i == 0 && self->out_first, 0};
        const char *want = NULL;
        if (i < ntypes) {
            PyObject *t = PyTuple_GetItem(self->types, i);
            if (t != Py_None && utf8_of(t, &want, 0, "a declared type") < 0)
                return -1;
        }
        if (PyLong_Check(args[i]) && !PyBool_Check(args[i]) && (!want || want[0] == '*')) {
            PyErr_Format(PyExc_TypeError, ARGFMT " is an int: give arrays as objects (their size "
                         "is checked), and scalars packed to their declared type", ARGV(&c));
            arg_error(&c);
            return -1;
        }
        if (convert_arg(&c, args[i], 0, want, ((GenObject *)self->gen)->ordinal, keep, &v[i]) < 0)
            return -1;
        if (v[i].is_array) {
            uint64_t addr;
            memcpy(&addr, v[i].value, 8);
            ga[i] = fdl_gen_array(addr, (size_t)v[i].nbytes);
        } else {
            ga[i] = fdl_gen_scalar(ARG_DATA(&v[i]), v[i].size);
        }
    }
    return 0;
}

/* launch(n, sync, stream, *args): map or elementwise kernel over 0..n-1 queued in the stream
 * (None: the default stream); sync waits and checks (fdl_map_check). */
/*
 * Refuse @p what (a call that waits for its result) in a stream being captured into a CUDA graph,
 * before anything is queued: waiting would invalidate the capture. 0, or -1 with an exception.
 */
static int refuse_in_capture(fdl_stream *stream, const char *what, const char *name)
{
    int capturing = 0;
    fdl_error err = FDL_ERROR_INIT;
    if (!stream)
        return 0;
    int rc = fdl_stream_is_capturing(stream, &capturing, &err);
    if (rc == FDL_OK && !capturing)
        return 0;
    if (rc == FDL_OK) {
        rc = err.code = FDL_EINVAL;
        snprintf(err.symbol, sizeof err.symbol, "%s", name ? name : "");
        snprintf(err.message, sizeof err.message,
                 "%s '%s' waits for its result, but its stream is being captured into a CUDA "
                 "graph: waiting would invalidate the capture (use sync=False or out=, and "
                 "check() after a replay)", what, name ? name : "");
    }
    raise_fdl(rc, &err, NULL);
    return -1;
}

static PyObject *Map_launch(MapObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3)
        return PyErr_Format(PyExc_TypeError, "launch(n, sync, stream, *args)");
    size_t n;
    if (size_arg(args[0], "n", &n) < 0)
        return NULL;
    int sync = PyObject_IsTrue(args[1]);
    fdl_stream *stream = NULL;
    if (PyErr_Occurred() || sync < 0 || stream_of(args[2], &stream) < 0 ||
        (sync && refuse_in_capture(stream, "map", self->name) < 0))
        return NULL;
    Py_ssize_t na = nargs - 3;
    fdl_gen_arg *ga = calloc((size_t)(na ? na : 1), sizeof *ga);
    conv_arg *v = calloc((size_t)(na ? na : 1), sizeof *v);
    PyObject *keep = PyList_New(0), *ret = NULL;
    if (!ga || !v || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    if (gen_args(self, args + 3, na, ga, v, keep, stream) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_map_launch_async(self->map, n, ga, (size_t)na, stream, &err);
    if (rc == FDL_OK && sync)
        rc = fdl_map_check(self->map, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    Py_XDECREF(keep);
    free(ga);
    free(v);
    return ret;
}

static PyObject *Map_check(MapObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_map_check(self->map, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

/* run(n, stream, *args) -> bytes of the result (waits for it) */
static PyObject *Reduction_run(MapObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2)
        return PyErr_Format(PyExc_TypeError, "run(n, stream, *args)");
    size_t n;
    fdl_stream *stream = NULL;
    if (size_arg(args[0], "n", &n) < 0 || stream_of(args[1], &stream) < 0 ||
        refuse_in_capture(stream, "reduction", self->name) < 0)
        return NULL;
    Py_ssize_t na = nargs - 2;
    size_t rs = fdl_reduction_result_size(self->red);
    fdl_gen_arg *ga = calloc((size_t)(na ? na : 1), sizeof *ga);
    conv_arg *v = calloc((size_t)(na ? na : 1), sizeof *v);
    PyObject *keep = PyList_New(0), *ret = NULL;
    unsigned char out[64];
    if (!ga || !v || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    if (rs > sizeof out) {
        PyErr_SetString(PyExc_ValueError, "result type too large");
        goto done;
    }
    if (gen_args(self, args + 2, na, ga, v, keep, stream) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_reduction_launch_async(self->red, n, ga, (size_t)na, stream, &err);
    if (rc == FDL_OK)
        rc = fdl_reduction_result(self->red, out, rs, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)rs);
done:
    Py_XDECREF(keep);
    free(ga);
    free(v);
    return ret;
}

/* run_async(n, stream, out, *args): the result written to @out (device memory) in the stream,
 * nothing waits; check() reports failed calls later */
static PyObject *Reduction_run_async(MapObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3)
        return PyErr_Format(PyExc_TypeError, "run_async(n, stream, out, *args)");
    size_t n;
    fdl_stream *stream = NULL;
    if (size_arg(args[0], "n", &n) < 0 || stream_of(args[1], &stream) < 0)
        return NULL;
    Py_ssize_t na = nargs - 3;
    size_t rs = fdl_reduction_result_size(self->red);
    fdl_gen_arg *ga = calloc((size_t)(na + 1), sizeof *ga);
    conv_arg *v = calloc((size_t)(na + 1), sizeof *v);
    PyObject *keep = PyList_New(0), *ret = NULL;
    if (!ga || !v || !keep) {
        PyErr_NoMemory();
        goto done;
    }
    /* the output first, as an array of at least the result's size */
    PyObject *saved = self->types;
    self->types = Py_None;
    self->out_first = 1;
    int rc0 = gen_args(self, args + 2, 1, ga, v, keep, stream);
    self->out_first = 0;
    self->types = saved;
    if (rc0 < 0)
        goto done;
    if (!v[0].is_array || v[0].nbytes < rs) {
        PyErr_Format(PyExc_ValueError, "out must be device memory of at least %zu bytes "
                     "(the reduction's result)", rs);
        goto done;
    }
    if (gen_args(self, args + 3, na, ga + 1, v + 1, keep, stream) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_reduction_launch_async(self->red, n, ga + 1, (size_t)na, stream, &err);
    if (rc == FDL_OK)
        rc = fdl_reduction_result_async(self->red, ga[0].address, rs, stream, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = Py_None;
    Py_INCREF(ret);
done:
    Py_XDECREF(keep);
    free(ga);
    free(v);
    return ret;
}

static PyObject *Reduction_check(MapObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_reduction_check(self->red, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    Py_RETURN_NONE;
}

static PyObject *Map_source(MapObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->map ? fdl_map_source(self->map)
                                          : fdl_reduction_source(self->red));
}

static PyObject *Map_cubin(MapObject *self, void *c)
{
    (void)c;
    size_t size = 0;
    const void *p = self->map ? fdl_map_cubin(self->map, &size)
                              : fdl_reduction_cubin(self->red, &size);
    return PyBytes_FromStringAndSize(p, (Py_ssize_t)size);
}

static PyObject *Map_kernel_name(MapObject *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->name);
}

static PyObject *Map_c_handle(MapObject *self, void *c)
{
    (void)c;
    return PyLong_FromVoidPtr(self->map ? (void *)self->map : (void *)self->red);
}

static PyObject *Map_arg_count(MapObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(self->map ? fdl_map_arg_count(self->map) : 0);
}

static PyObject *Map_result_size(MapObject *self, void *c)
{
    (void)c;
    return PyLong_FromSize_t(self->red ? fdl_reduction_result_size(self->red) : 0);
}

static PyObject *Map_get_types(MapObject *self, void *c)
{
    (void)c;
    Py_INCREF(self->types);
    return self->types;
}

static int Map_set_types(MapObject *self, PyObject *v, void *c)
{
    (void)c;
    return set_types(&self->types, v);
}

static PyGetSetDef Map_getset[] = {
    {"source", (getter)Map_source, NULL, "the generated CUDA C", NULL},
    {"cubin", (getter)Map_cubin, NULL, "the linked cubin", NULL},
    {"kernel_name", (getter)Map_kernel_name, NULL, NULL, NULL},
    {"arg_count", (getter)Map_arg_count, NULL, NULL, NULL},
    {"result_size", (getter)Map_result_size, NULL, NULL, NULL},
    {"types", (getter)Map_get_types, (setter)Map_set_types, "declared argument types", NULL},
    {"_c_handle", (getter)Map_c_handle, NULL, "the fdl_map's (fdl_reduction's) address", NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyMethodDef Map_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))Map_launch, METH_FASTCALL,
     "launch(n, sync, stream, *args)"},
    {"check", (PyCFunction)Map_check, METH_NOARGS, "wait and raise the lowest failing index"},
    {NULL, NULL, 0, NULL}};
static PyType_Slot Map_slots[] = {{Py_tp_dealloc, (void *)Map_dealloc},
                                  {Py_tp_methods, Map_methods},
                                  {Py_tp_getset, Map_getset},
                                  {0, NULL}};
static PyType_Spec Map_spec = {"fdlink._fdlink.Map", sizeof(MapObject), 0, Py_TPFLAGS_DEFAULT,
                               Map_slots};
static PyMethodDef Reduction_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Reduction_run, METH_FASTCALL,
     "run(n, stream, *args) -> bytes"},
    {"run_async", (PyCFunction)(void (*)(void))Reduction_run_async, METH_FASTCALL,
     "run_async(n, stream, out, *args): the result into device memory, nothing waits"},
    {"check", (PyCFunction)Reduction_check, METH_NOARGS,
     "wait, then raise a failed FDL_MAP_CALL of the launches since the last check"},
    {NULL, NULL, 0, NULL}};
static PyType_Slot Reduction_slots[] = {{Py_tp_dealloc, (void *)Map_dealloc},
                                        {Py_tp_methods, Reduction_methods},
                                        {Py_tp_getset, Map_getset},
                                        {0, NULL}};
static PyType_Spec Reduction_spec = {"fdlink._fdlink.Reduction", sizeof(MapObject), 0,
                                     Py_TPFLAGS_DEFAULT, Reduction_slots};

/* ---- Device's methods (after the types they make) ----------------------------------------- */

static PyMethodDef Device_methods[] = {
    {"load", (PyCFunction)Device_load, METH_VARARGS, "load(image, name) -> Module"},
    {"alloc", (PyCFunction)Device_alloc, METH_VARARGS,
     "alloc(nbytes, typestr='|u1', shape=None) -> Buffer"},
    {"stream", (PyCFunction)Device_stream, METH_NOARGS, "a new stream"},
    {"wrap_stream", (PyCFunction)Device_wrap_stream, METH_O,
     "wrap_stream(handle) -> Stream over another library's CUstream"},
    {"synchronize", (PyCFunction)Device_synchronize, METH_NOARGS,
     "wait for the device and check every module's status record"},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef Device_getset[] = {
    {"info", (getter)Device_info, NULL, "the device's description", NULL},
    {"ordinal", (getter)Device_ordinal, NULL, NULL, NULL},
    {"_c_handle", (getter)Device_c_handle, NULL, "the fdl_device's address (fdlink.jax)", NULL},
    {"arch", (getter)Device_arch, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};
static PyType_Slot Device_slots[] = {{Py_tp_new, (void *)Device_new},
                                     {Py_tp_dealloc, (void *)Device_dealloc},
                                     {Py_tp_methods, Device_methods},
                                     {Py_tp_getset, Device_getset},
                                     {Py_tp_doc, "Device(ordinal=-1): a GPU and its context"},
                                     {Py_tp_repr, (void *)Device_repr},
                                     {0, NULL}};
static PyType_Spec Device_spec = {"fdlink._fdlink.Device", sizeof(DeviceObject), 0,
                                  Py_TPFLAGS_DEFAULT, Device_slots};

/* ---- module functions ------------------------------------------------------------------- */

static PyObject *py_device_count(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int n = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&n, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyLong_FromLong(n);
}

static PyObject *py_driver_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int v = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_driver_version(&v, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyLong_FromLong(v);
}

static PyObject *py_linker_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    unsigned major = 0, minor = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_backend_version(&major, &minor, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return Py_BuildValue("(II)", major, minor);
}

static PyObject *py_nvrtc_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    unsigned major = 0, minor = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_nvrtc_version(&major, &minor, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return Py_BuildValue("(II)", major, minor);
}

static PyObject *py_cache_dir(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    char buf[4096];
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_cache_dir(buf, sizeof buf, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyUnicode_FromString(buf);
}

/* PyArg "O&" converter: a path (str, bytes, os.PathLike) or None as a bytes object or NULL, the
 * file system's bytes (os.fsencode) */
static int fs_opt(PyObject *o, void *out)
{
    if (o == Py_None) {
        *(PyObject **)out = NULL;
        return 1;
    }
    return PyUnicode_FSConverter(o, out);
}
#define FSP(b) ((b) ? PyBytes_AsString(b) : NULL)

static PyObject *py_cache_stats(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir = NULL;
    if (!PyArg_ParseTuple(args, "|O&:cache_stats", fs_opt, &dir))
        return NULL;
    fdl_cache_stats s;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_cache_stats_get(&s, FSP(dir), &err);
    Py_XDECREF(dir);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return Py_BuildValue("{s:n,s:K,s:K,s:n,s:K,s:K,s:K,s:K}", "entries", (Py_ssize_t)s.entries,
                         "bytes", (unsigned long long)s.bytes, "max_size",
                         (unsigned long long)s.max_size, "temporaries",
                         (Py_ssize_t)s.temporaries, "hits", (unsigned long long)s.hits,
                         "misses", (unsigned long long)s.misses, "corrupt",
                         (unsigned long long)s.corrupt, "unsigned_forged",
                         (unsigned long long)s.unsigned_forged);
}

static PyObject *py_cache_clear(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir = NULL;
    if (!PyArg_ParseTuple(args, "|O&:cache_clear", fs_opt, &dir))
        return NULL;
    size_t removed = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_cache_clear(FSP(dir), &removed, &err);
    Py_XDECREF(dir);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyLong_FromSize_t(removed);
}

static PyObject *py_cache_export(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir = NULL, *path = NULL;
    PyObject *keys_o = Py_None;
    if (!PyArg_ParseTuple(args, "O&O&|O:cache_export", fs_opt, &dir, PyUnicode_FSConverter,
                          &path, &keys_o))
        return NULL; /* the converters' results are released by the parser */
    const char **keys = str_array(keys_o, "a key");
    if (!keys && PyErr_Occurred()) {
        Py_XDECREF(dir);
        Py_DECREF(path);
        return NULL;
    }
    size_t exported = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_cache_export(FSP(dir), FSP(path), keys, &exported, &err);
    free(keys);
    Py_XDECREF(dir);
    Py_DECREF(path);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyLong_FromSize_t(exported);
}

static PyObject *py_cache_import(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *dir = NULL, *path = NULL;
    if (!PyArg_ParseTuple(args, "O&O&:cache_import", fs_opt, &dir, PyUnicode_FSConverter,
                          &path))
        return NULL;
    size_t imported = 0, rejected = 0, forged = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_cache_import(FSP(dir), FSP(path), &imported, &rejected, &forged, &err);
    Py_XDECREF(dir);
    Py_DECREF(path);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return Py_BuildValue("{s:n,s:n,s:n}", "imported", (Py_ssize_t)imported, "rejected",
                         (Py_ssize_t)rejected, "unsigned_forged", (Py_ssize_t)forged);
}

static PyObject *py_detect(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:detect", &data, &name))
        return NULL;
    const char *bytes;
    Py_ssize_t size;
    if (bytes_of(data, &bytes, &size, "data") < 0)
        return NULL;
    fdl_input_kind kind;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_input_detect(&kind, bytes, (size_t)size, name, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyUnicode_FromString(fdl_input_kind_name(kind));
}

static PyObject *py_kind_parse(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name;
    if (utf8_of(arg, &name, 0, "kind") < 0)
        return NULL;
    fdl_input_kind kind;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_input_kind_parse(&kind, name, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return PyLong_FromLong((long)kind);
}

/* fatbin([(kind, arch, bytes), ...]) -> bytes: fdl_fatbin_create (issue 40) */
static PyObject *py_fatbin(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *out = NULL, **items = NULL;
    fdl_fatbin_entry *e = NULL;
    void *fat = NULL;
    size_t size = 0;
    Py_ssize_t n = PySequence_Size(arg), got = 0;
    if (n < 0)
        return NULL;
    if (!(e = PyMem_Calloc(n ? (size_t)n : 1, sizeof *e)) ||
        !(items = PyMem_Calloc(n ? (size_t)n : 1, sizeof *items))) {
        PyErr_NoMemory();
        goto cleanup;
    }
    for (; got < n; got++) {
        int kind;
        unsigned int arch;
        const char *data;
        Py_ssize_t len;
        if (!(items[got] = PySequence_GetItem(arg, got)))
            goto cleanup;
        if (!PyArg_ParseTuple(items[got], "iIy#:fatbin", &kind, &arch, &data, &len))
            goto cleanup;
        e[got].kind = (fdl_input_kind)kind;
        e[got].arch = arch;
        e[got].data = data; /* borrowed from items[got], alive until cleanup */
        e[got].size = (size_t)len;
    }
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_fatbin_create(&fat, &size, e, (size_t)n, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto cleanup;
    }
    out = PyBytes_FromStringAndSize(fat, (Py_ssize_t)size);
cleanup:
    for (Py_ssize_t i = 0; items && i <= got && i < n; i++)
        Py_XDECREF(items[i]);
    free(fat);
    PyMem_Free(items);
    PyMem_Free(e);
    return out;
}

/* cuda_compile(source, name, arch, decls, options) -> (bytes, kind name, log or None) */
static PyObject *py_cuda_compile(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *source, *decls, *opts;
    const char *name, *arch = NULL;
    if (!PyArg_ParseTuple(args, "OszOO:cuda_compile", &source, &name, &arch, &decls, &opts))
        return NULL;
    const char *text;
    Py_ssize_t len;
    PyObject *frozen = NULL; /* a bytearray's copy: the compile runs without the GIL */
    if (PyByteArray_Check(source)) {
        if (!(frozen = PyBytes_FromObject(source)))
            return NULL;
        source = frozen;
    }
    if (PyUnicode_Check(source)) {
        text = PyUnicode_AsUTF8AndSize(source, &len);
        if (!text) {
            Py_XDECREF(frozen);
            return NULL;
        }
    } else if (bytes_of(source, &text, &len, "source") < 0) {
        Py_XDECREF(frozen);
        return NULL;
    }
    link_opts lo;
    if (decls != Py_None && !PyObject_TypeCheck(decls, DeclsType)) {
        Py_XDECREF(frozen);
        return PyErr_Format(PyExc_TypeError, "decls must be a Decls or None");
    }
    if (link_opts_from(&lo, opts) < 0) {
        Py_XDECREF(frozen);
        return NULL;
    }
    void *out = NULL;
    size_t size = 0;
    fdl_input_kind kind = FDL_KIND_AUTO;
    char *log = NULL;
    fdl_error err = FDL_ERROR_INIT;
    const fdl_decls *d = decls != Py_None ? ((DeclsObject *)decls)->decls : NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fdl_cuda_compile(&out, &size, &kind, &log, text, (size_t)len, name, arch, d, &lo.lo,
                          &lo.no, &err);
    Py_END_ALLOW_THREADS
    link_opts_free(&lo);
    PyObject *ret = NULL;
    if (rc != FDL_OK) {
        err.log = log; /* the whole NVRTC log, for the exception */
        raise_fdl(rc, &err, NULL);
    } else {
        ret = Py_BuildValue("(y#sN)", (const char *)out, (Py_ssize_t)size,
                            fdl_input_kind_name(kind), MSG(log));
    }
    free(out);
    free(log);
    Py_XDECREF(frozen);
    return ret;
}

static PyObject *py_status_name(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(fdl_status_name((int)v));
}

/* image_kernel_params(image, name) -> ((class, size), ...) or None:
 * fdl_image_kernel_param_info (PTX: classes; a cubin: sizes only, class 0) */
static PyObject *py_image_kernel_params(PyObject *self, PyObject *args)
{
    (void)self;
    const char *data, *name;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "y#s:image_kernel_params", &data, &len, &name))
        return NULL;
    fdl_param_info info[256];
    size_t count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fdl_image_kernel_param_info(data, (size_t)len, name, info, 256, &count, &err);
    Py_END_ALLOW_THREADS
    if (rc == FDL_ENOTFOUND || (rc == FDL_OK && count > 256))
        Py_RETURN_NONE;
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    return param_info_tuple(info, count);
}

static PyMethodDef module_methods[] = {
    {"_set_error_factory", set_error_factory, METH_O, NULL},
    {"image_kernel_params", py_image_kernel_params, METH_VARARGS,
     "image_kernel_params(image, name) -> ((fdl_param_class, size), ...) or None"},
    {"device_count", py_device_count, METH_NOARGS, "number of CUDA devices"},
    {"driver_version", py_driver_version, METH_NOARGS, "the driver's version (13000 = 13.0)"},
    {"linker_version", py_linker_version, METH_NOARGS, "nvJitLink's (major, minor)"},
    {"nvrtc_version", py_nvrtc_version, METH_NOARGS, "NVRTC's (major, minor)"},
    {"cache_dir", py_cache_dir, METH_NOARGS, "the default cache directory"},
    {"cache_stats", py_cache_stats, METH_VARARGS, "cache_stats(dir=None) -> dict"},
    {"cache_clear", py_cache_clear, METH_VARARGS, "cache_clear(dir=None) -> removed"},
    {"cache_export", py_cache_export, METH_VARARGS, "cache_export(dir, path, keys=None)"},
    {"cache_import", py_cache_import, METH_VARARGS, "cache_import(dir, path)"},
    {"detect", py_detect, METH_VARARGS, "detect(data, name) -> kind name"},
    {"cuda_compile", py_cuda_compile, METH_VARARGS,
     "cuda_compile(source, name, arch, decls, options) -> (bytes, kind, log)"},
    {"kind_parse", py_kind_parse, METH_O, "kind_parse(name) -> kind number"},
    {"fatbin", py_fatbin, METH_O, "fatbin([(kind, arch, bytes), ...]) -> the fatbin's bytes"},
    {"decls_load", py_decls_load, METH_O, "decls_load(path) -> Decls: a declaration file"},
    {"status_name", py_status_name, METH_O, "status_name(code) -> 'FDL_E...'"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_fdlink",
                                       "fdlink's C extension (use the fdlink package)", -1,
                                       module_methods, NULL, NULL, NULL, NULL};

static int add_type(PyObject *m, PyTypeObject **slot, PyType_Spec *spec, const char *name)
{
    *slot = (PyTypeObject *)PyType_FromSpec(spec);
    if (!*slot)
        return -1;
    Py_INCREF(*slot);
    if (PyModule_AddObject(m, name, (PyObject *)*slot) < 0) {
        Py_DECREF(*slot);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__fdlink(void)
{
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
#define INTERN(var, s)                                                                             \
    if (!(var = PyUnicode_InternFromString(s)))                                                    \
        goto fail;
    INTERN(s_cai, "__cuda_array_interface__")
    INTERN(s_dlpack, "__dlpack__")
    INTERN(s_dlpack_device, "__dlpack_device__")
    INTERN(s_array_interface, "__array_interface__")
    INTERN(s_stream, "stream")
    INTERN(s_tobytes, "tobytes")
    INTERN(s_shape, "shape")
    INTERN(s_typestr, "typestr")
    INTERN(s_data, "data")
    INTERN(s_strides, "strides")
    INTERN(s_version, "version")
    INTERN(s_mask, "mask")
    INTERN(s_cuda_stream, "__cuda_stream__")
    INTERN(s_c_contiguous_, "_c_contiguous")
    INTERN(s_ptr, "ptr")
    INTERN(s_device_id, "device_id")
    INTERN(s_size, "size")
    INTERN(s_dtype, "dtype")
    INTERN(s_str, "str")
    INTERN(s_itemsize, "itemsize")
    INTERN(s_is_cuda, "is_cuda")
    INTERN(s_requires_grad, "requires_grad")
    INTERN(s_is_contiguous, "is_contiguous")
    INTERN(s_get_device, "get_device")
    INTERN(s_nbytes, "nbytes")
    INTERN(s_data_ptr, "data_ptr")
#undef INTERN
    if (add_type(m, &DeclsType, &Decls_spec, "Decls") < 0 ||
        add_type(m, &LinkType, &Link_spec, "Link") < 0 ||
        add_type(m, &DeviceType, &Device_spec, "Device") < 0 ||
        add_type(m, &ModuleType, &Module_spec, "Module") < 0 ||
        add_type(m, &KernelType, &Kernel_spec, "Kernel") < 0 ||
        add_type(m, &LaunchType, &Launch_spec, "Launch") < 0 ||
        add_type(m, &BufferType, &Buffer_spec, "Buffer") < 0 ||
        add_type(m, &StreamType, &Stream_spec, "Stream") < 0 ||
        add_type(m, &GenType, &Gen_spec, "Gen") < 0 ||
        add_type(m, &MapType, &Map_spec, "Map") < 0 ||
        add_type(m, &ReductionType, &Reduction_spec, "Reduction") < 0 ||
        add_type(m, &DLHoldType, &DLHold_spec, "_DLHold") < 0 ||
        add_type(m, &ConfiguredType, &Configured_spec, "Configured") < 0)
        goto fail;
    if (PyModule_AddStringConstant(m, "version", fdl_version()) < 0 ||
        PyModule_AddIntConstant(m, "LAUNCH_COOPERATIVE", FDL_LAUNCH_COOPERATIVE) < 0 ||
        PyModule_AddIntConstant(m, "LAUNCH_NOT_COOPERATIVE", FDL_LAUNCH_NOT_COOPERATIVE) < 0 ||
        PyModule_AddIntConstant(m, "LAUNCH_SYNC", FDL_LAUNCH_SYNC) < 0 ||
        PyModule_AddIntConstant(m, "PARAM_UNKNOWN", FDL_PARAM_UNKNOWN) < 0 ||
        PyModule_AddIntConstant(m, "PARAM_FLOAT", FDL_PARAM_FLOAT) < 0 ||
        PyModule_AddIntConstant(m, "PARAM_SIGNED", FDL_PARAM_SIGNED) < 0 ||
        PyModule_AddIntConstant(m, "PARAM_UNSIGNED", FDL_PARAM_UNSIGNED) < 0 ||
        PyModule_AddIntConstant(m, "PARAM_BITS", FDL_PARAM_BITS) < 0 ||
        PyModule_AddIntConstant(m, "PARAM_BYTES", FDL_PARAM_BYTES) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
