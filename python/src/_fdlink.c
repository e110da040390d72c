/*
 * _fdlink: the CPython extension of the fdlink package (docs/python.md); this file is the module:
 * PyInit__fdlink, the module functions and Device's method table. What the files share, and
 * which file holds what: py_fdlink.h.
 */
#include "py_fdlink.h"

/* ---- Device's methods (after the types they make) ----------------------------------------- */

static PyMethodDef Device_methods[] = {
    {"load", (PyCFunction)Device_load, METH_VARARGS, "load(image, name) -> Module"},
    {"alloc", (PyCFunction)Device_alloc, METH_VARARGS,
     "alloc(nbytes, typestr='|u1', shape=None) -> Buffer"},
    {"stream", (PyCFunction)Device_stream, METH_NOARGS, "a new stream"},
    {"wrap_stream", (PyCFunction)Device_wrap_stream, METH_VARARGS,
     "wrap_stream(handle[, owner]) -> Stream over another library's CUstream, holding owner"},
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
    {"parse_type", py_parse_type, METH_O,
     "parse_type(text) -> (array-interface code or None for void, pointer depth)"},
    {"fatbin", py_fatbin, METH_O, "fatbin([(kind, arch, bytes), ...]) -> the fatbin's bytes"},
    {"decls_load", py_decls_load, METH_O, "decls_load(path) -> Decls: a declaration file"},
    {"status_name", py_status_name, METH_O, "status_name(code) -> 'FDL_E...'"},
    {NULL, NULL, 0, NULL}};

static int add_type(PyObject *m, PyTypeObject **slot, PyType_Spec *spec, const char *name)
{
    *slot = (PyTypeObject *)PyType_FromModuleAndSpec(m, spec, NULL);
    if (!*slot)
        return -1;
    Py_INCREF(*slot);
    if (PyModule_AddObject(m, name, (PyObject *)*slot) < 0) {
        Py_DECREF(*slot);
        return -1;
    }
    return 0;
}

/* The names interned, the types made and the constants added into @p st, @p m's state */
static int fill_module(PyObject *m, fdl_py_state *st)
{
#define INTERN(field, text)                                                                        \
    if (!(st->field = PyUnicode_InternFromString(text)))                                           \
        return -1;
    FDL_PY_NAMES(INTERN)
#undef INTERN
#define ADD_TYPE(name, attribute)                                                                  \
    if (add_type(m, &st->name##Type, &name##_spec, attribute) < 0)                                 \
        return -1;
    FDL_PY_TYPES(ADD_TYPE)
#undef ADD_TYPE
    PyObject *table = link_options_table();
    if (!table || PyModule_AddObject(m, "LINK_OPTIONS", table) < 0) {
        Py_XDECREF(table);
        return -1;
    }
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
        return -1;
    return 0;
}

/* Py_mod_exec: the state claimed for the process (py_fdlink.h: g_state) and filled; a module
 * that fails gives the claim back (its state is released with it: state_free). */
static int exec_module(PyObject *m)
{
    if (state_claim(m) < 0)
        return -1;
    if (fill_module(m, g_state) < 0) {
        g_state = NULL;
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, (void *)exec_module}, {0, NULL}};

/* Multi-phase initialisation, the state in the module object (py_fdlink.h) */
static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT,
                                       "_fdlink",
                                       "fdlink's C extension (use the fdlink package)",
                                       sizeof(fdl_py_state),
                                       module_methods,
                                       module_slots,
                                       state_traverse,
                                       state_clear,
                                       state_free};

PyMODINIT_FUNC PyInit__fdlink(void)
{
    return PyModuleDef_Init(&moduledef);
}
