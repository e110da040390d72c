/* py_gen: Gen, Map and Reduction (the _fdlink extension: py_fdlink.h). */
#include "py_fdlink.h"

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
    if (device != Py_None && !PyObject_TypeCheck(device, g_state->DeviceType))
        return PyErr_Format(PyExc_TypeError, "device must be a Device or None");
    if (decls != Py_None && !PyObject_TypeCheck(decls, g_state->DeclsType))
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
    PyObject *o = new_map(self, map, NULL, g_state->MapType);
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
    return new_map(self, map, NULL, g_state->MapType);
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
    return new_map(self, NULL, red, g_state->ReductionType);
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
PyType_Spec Gen_spec = {"fdlink._fdlink.Gen", sizeof(GenObject), 0, Py_TPFLAGS_DEFAULT,
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
    launch_args la;
    PyObject *ret = NULL;
    if (launch_args_begin(&la, na, sizeof(fdl_gen_arg)) < 0 ||
        gen_args(self, args + 3, na, la.a, la.v, la.keep, stream) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_map_launch_async(self->map, n, la.a, (size_t)na, stream, &err);
    if (rc == FDL_OK && sync)
        rc = fdl_map_check(self->map, &err);
    ret = none_or_raise(rc, &err);
done:
    launch_args_end(&la);
    return ret;
}

static PyObject *Map_check(MapObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    return none_or_raise(fdl_map_check(self->map, &err), &err);
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
    launch_args la;
    PyObject *ret = NULL;
    unsigned char out[64];
    if (launch_args_begin(&la, na, sizeof(fdl_gen_arg)) < 0)
        goto done;
    if (rs > sizeof out) {
        PyErr_SetString(PyExc_ValueError, "result type too large");
        goto done;
    }
    if (gen_args(self, args + 2, na, la.a, la.v, la.keep, stream) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    rc = fdl_reduction_launch_async(self->red, n, la.a, (size_t)na, stream, &err);
    if (rc == FDL_OK)
        rc = fdl_reduction_result(self->red, out, rs, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)rs);
done:
    launch_args_end(&la);
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
    launch_args la;
    PyObject *ret = NULL;
    if (launch_args_begin(&la, na + 1, sizeof(fdl_gen_arg)) < 0)
        goto done;
    fdl_gen_arg *ga = la.a;
    conv_arg *v = la.v;
    /* the output first, as an array of at least the result's size */
    PyObject *saved = self->types;
    self->types = Py_None;
    self->out_first = 1;
    int rc0 = gen_args(self, args + 2, 1, ga, v, la.keep, stream);
    self->out_first = 0;
    self->types = saved;
    if (rc0 < 0)
        goto done;
    if (!v[0].is_array || v[0].nbytes < rs) {
        PyErr_Format(PyExc_ValueError, "out must be device memory of at least %zu bytes "
                     "(the reduction's result)", rs);
        goto done;
    }
    if (gen_args(self, args + 3, na, ga + 1, v + 1, la.keep, stream) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_reduction_launch_async(self->red, n, ga + 1, (size_t)na, stream, &err);
    if (rc == FDL_OK)
        rc = fdl_reduction_result_async(self->red, ga[0].address, rs, stream, &err);
    ret = none_or_raise(rc, &err);
done:
    launch_args_end(&la);
    return ret;
}

static PyObject *Reduction_check(MapObject *self, PyObject *unused)
{
    (void)unused;
    fdl_error err = FDL_ERROR_INIT;
    return none_or_raise(fdl_reduction_check(self->red, &err), &err);
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
PyType_Spec Map_spec = {"fdlink._fdlink.Map", sizeof(MapObject), 0, Py_TPFLAGS_DEFAULT,
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
PyType_Spec Reduction_spec = {"fdlink._fdlink.Reduction", sizeof(MapObject), 0,
                                     Py_TPFLAGS_DEFAULT, Reduction_slots};

/* ---- types ---------------------------------------------------------------------------------- */

/* parse_type(text) -> (code, depth): fdl_gen_parse_type, the type vocabulary the C library and the
 * Python package share. code: the scalar's array-interface code ('f4', 'i8', 'u1', 'b1'), None
 * for void; depth: its levels of pointer. A type the library does not know raises its error. */
PyObject *py_parse_type(PyObject *self, PyObject *arg)
{
    (void)self;
    if (!PyUnicode_Check(arg))
        return PyErr_Format(PyExc_TypeError, "type must be a str, not %s", tname(arg));
    Py_ssize_t len;
    const char *text = PyUnicode_AsUTF8AndSize(arg, &len);
    if (!text)
        return NULL;
    fdl_type t;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_gen_parse_type(&t, text, (size_t)len, &err);
    if (rc != FDL_OK)
        return raise_fdl(rc, &err, NULL);
    char kind;
    switch (t.base) {
    case FDL_VOID:
        return Py_BuildValue("(OI)", Py_None, t.depth);
    case FDL_BOOL:
        kind = 'b';
        break;
    case FDL_UINT8:
    case FDL_UINT16:
    case FDL_UINT32:
    case FDL_UINT64:
    case FDL_UINTP:
        kind = 'u';
        break;
    case FDL_FLOAT16:
    case FDL_FLOAT32:
    case FDL_FLOAT64:
        kind = 'f';
        break;
    default:
        kind = 'i';
        break;
    }
    char code[8];
    snprintf(code, sizeof code, "%c%zu", kind, fdl_type_size((fdl_type){t.base, 0}));
    return Py_BuildValue("(sI)", code, t.depth);
}
