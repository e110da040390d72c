/* py_link: Decls, the link options, Link and cuda_compile (the _fdlink extension: py_fdlink.h). */
#include "py_fdlink.h"

/* ---- Decls ------------------------------------------------------------------------------ */

/* The Decls (of @p type) over @p decls, made with status @p rc: the exception for @p err when
 * that failed; @p decls destroyed when the object cannot be made. */
static PyObject *decls_object(PyTypeObject *type, int rc, const fdl_error *err, fdl_decls *decls)
{
    if (rc != FDL_OK)
        return raise_fdl(rc, err, NULL);
    DeclsObject *self = (DeclsObject *)PyType_GenericAlloc(type, 0);
    if (!self) {
        fdl_decls_destroy(decls);
        return NULL;
    }
    self->decls = decls;
    return (PyObject *)self;
}

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
    return decls_object(type, rc, &err, decls);
}

/* decls_load(path) -> Decls: a declaration file read by the library's checked reader (devices,
 * FIFOs, directories and files beyond its limit refused at once, with its message), the path
 * as the file system's bytes; without the GIL. */
PyObject *py_decls_load(PyObject *self, PyObject *arg)
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
    return decls_object(g_state->DeclsType, rc, &err, decls);
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
PyType_Spec Decls_spec = {"fdlink._fdlink.Decls", sizeof(DeclsObject), 0,
                                 Py_TPFLAGS_DEFAULT, Decls_slots};

/* ---- link options ----------------------------------------------------------------------- */

void link_opts_free(link_opts *o)
{
    for (size_t i = 0; i < o->nowned; i++)
        free(o->owned[i]);
    o->nowned = 0;
}

/* The library's option table, as _fdlink.LINK_OPTIONS: a tuple of dicts (name, kind, min, max,
 * default, words, expect, help, nvrtc, nvjitlink_only, long), in the table's order. */
PyObject *link_options_table(void)
{
    static const char *const kinds[] = {"int", "bool", "tri", "enum", "string", "list"};
    PyObject *rows = PyList_New(0);
    for (const fdl_link_option *p = fdl_link_option_next(NULL); rows && p;
         p = fdl_link_option_next(p)) {
        PyObject *words = Py_None;
        Py_INCREF(words);
        if (p->words) {
            Py_DECREF(words);
            words = PyList_New(0);
            for (size_t i = 0; words && p->words[i]; i++) {
                PyObject *w = PyUnicode_FromString(p->words[i]);
                if (!w || PyList_Append(words, w) < 0)
                    Py_CLEAR(words);
                Py_XDECREF(w);
            }
            if (words) {
                PyObject *t = PyList_AsTuple(words);
                Py_DECREF(words);
                words = t;
            }
        }
        /* a string's or a list's default is NULL: None */
        int text = p->kind == FDL_OPTION_STRING || p->kind == FDL_OPTION_LIST;
        PyObject *def = text ? (Py_INCREF(Py_None), Py_None) : PyLong_FromLong(p->def);
        PyObject *row =
            words && def
                ? Py_BuildValue("{s:s,s:s,s:l,s:l,s:O,s:O,s:z,s:s,s:O,s:O,s:O}", "name", p->name,
                                  "kind", kinds[p->kind], "min", p->min, "max", p->max,
                                  "default", def, "words", words, "expect", p->expect, "help",
                                  p->help, "nvrtc",
                                  (p->flags & FDL_OPTION_NVRTC) ? Py_True : Py_False,
                                  "nvjitlink_only",
                                  (p->flags & FDL_OPTION_NVJITLINK_ONLY) ? Py_True : Py_False,
                                  "long", (p->flags & FDL_OPTION_LONG) ? Py_True : Py_False)
                : NULL;
        Py_XDECREF(words);
        Py_XDECREF(def);
        if (!row || PyList_Append(rows, row) < 0)
            Py_CLEAR(rows);
        Py_XDECREF(row);
    }
    PyObject *t = rows ? PyList_AsTuple(rows) : NULL;
    Py_XDECREF(rows);
    return t;
}

/* A number option's value: None not set; a bool 0 or 1; an int within the extension's range
 * (a long option: any long), which fdl_link_options_set then checks against the option's. */
static int opt_number(const fdl_link_option *p, PyObject *v, fdl_option_value *out)
{
    char what[64];
    snprintf(what, sizeof what, "option %s", p->name);
    if (p->flags & FDL_OPTION_LONG) {
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
        out->number = x;
        return 0;
    }
    if (PyBool_Check(v)) {
        out->number = v == Py_True;
        return 0;
    }
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
    out->number = x;
    return 0;
}

/* Option @p p's value in @p d as the library takes it: 1 when given, 0 when not, -1 raised. */
static int opt_value(link_opts *o, const fdl_link_option *p, PyObject *d, fdl_option_value *out)
{
    PyObject *v = PyDict_GetItemString(d, p->name);
    memset(out, 0, sizeof *out);
    char what[64];
    snprintf(what, sizeof what, "option %s", p->name);
    switch (p->kind) {
    case FDL_OPTION_STRING: /* None: NULL, the default */
        if (!v)
            return 0;
        out->type = FDL_VALUE_TEXT;
        return utf8_of(v, &out->text, 1, what) < 0 ? -1 : 1;
    case FDL_OPTION_LIST: {
        if (!v || v == Py_None)
            return 0;
        if (PyUnicode_Check(v)) {
            PyErr_Format(PyExc_TypeError, "option %s must be a list of str, not a str", p->name);
            return -1;
        }
        if (o->nowned == sizeof o->owned / sizeof o->owned[0]) {
            PyErr_Format(PyExc_RuntimeError, "more list options than _fdlink holds");
            return -1;
        }
        const char **list = str_array(v, what);
        if (!list)
            return -1;
        o->owned[o->nowned++] = list;
        out->type = FDL_VALUE_LIST;
        out->list = list;
        return 1;
    }
    default: /* the enums' words are numbers by now (fdlink/_core.py) */
        if (!v || v == Py_None)
            return 0;
        out->type = FDL_VALUE_NUMBER;
        return opt_number(p, v, out) < 0 ? -1 : 1;
    }
}

/* The options dict of fdlink/_core.py: every key optional, None for the C default; the keys
 * are the library's option table's, read in its order (others are not looked at: _core.py
 * refuses them). Every value is converted before any is set, so that a value of the wrong type
 * is named before a bad value, as when fdl_link_create checked them; each is then set by name
 * (fdl_link_options_set: the library's own check of it, its message). */
int link_opts_from(link_opts *o, PyObject *d)
{
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    fdl_nvrtc_options no = FDL_NVRTC_OPTIONS_INIT;
    memset(o, 0, sizeof *o);
    o->lo = lo;
    o->no = no;
    o->lo.cuda = &o->no;
    if (d == Py_None)
        return 0;
    if (!PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "link options must be a dict, not %s", tname(d));
        return -1;
    }
    enum { MOST = 128 };
    const fdl_link_option *given[MOST];
    fdl_option_value values[MOST];
    size_t n = 0;
    for (const fdl_link_option *p = fdl_link_option_next(NULL); p; p = fdl_link_option_next(p)) {
        if (n == MOST) {
            PyErr_Format(PyExc_RuntimeError, "more link options than _fdlink holds");
            goto fail;
        }
        int rc = opt_value(o, p, d, &values[n]);
        if (rc < 0)
            goto fail;
        if (rc > 0)
            given[n++] = p;
    }
    for (size_t i = 0; i < n; i++) {
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_link_options_set(&o->lo, &o->no, given[i]->name, &values[i], &err);
        if (rc != FDL_OK) {
            raise_fdl(rc, &err, NULL);
            goto fail;
        }
    }
    return 0;
fail:
    link_opts_free(o);
    return -1;
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
        if (!PyObject_TypeCheck(d, g_state->DeclsType)) {
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
PyObject *param_info_tuple(const fdl_param_info *p, size_t n)
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
PyType_Spec Link_spec = {"fdlink._fdlink.Link", sizeof(LinkObject), 0, Py_TPFLAGS_DEFAULT,
                                Link_slots};

/* cuda_compile(source, name, arch, decls, options) -> (bytes, kind name, log or None) */
PyObject *py_cuda_compile(PyObject *self, PyObject *args)
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
    if (decls != Py_None && !PyObject_TypeCheck(decls, g_state->DeclsType)) {
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
