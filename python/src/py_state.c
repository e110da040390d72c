/*
 * py_state: the module state, errors (raise_fdl: an fdl_error as the exception that
 * fdlink/_errors.py makes) and small converters, at the bottom of the _fdlink extension
 * (py_fdlink.h).
 */
#include "py_fdlink.h"

/* ---- module state ----------------------------------------------------------------------- */

fdl_py_state *g_state;

/* Take @p module's state as the process's (py_fdlink.h: g_state); ImportError while another
 * instance lives. */
int state_claim(PyObject *module)
{
    if (g_state) {
        PyErr_SetString(PyExc_ImportError,
                        "fdlink._fdlink is already loaded in this process (one instance per "
                        "process: a second module object, or a subinterpreter, is refused)");
        return -1;
    }
    g_state = PyModule_GetState(module);
    return g_state ? 0 : -1;
}

int state_traverse(PyObject *module, visitproc visit, void *arg)
{
    fdl_py_state *st = PyModule_GetState(module);
    if (!st)
        return 0;
    Py_VISIT(st->error_factory);
#define VISIT_TYPE(name, attribute) Py_VISIT(st->name##Type);
    FDL_PY_TYPES(VISIT_TYPE)
#undef VISIT_TYPE
    for (int i = 0; i < st->ntypes; i++)
        Py_VISIT(st->types[i].type);
    for (int i = 0; i < st->ndtypes; i++)
        Py_VISIT(st->dtypes[i].dtype);
    return 0;
}

int state_clear(PyObject *module)
{
    fdl_py_state *st = PyModule_GetState(module);
    if (!st)
        return 0;
    Py_CLEAR(st->error_factory);
#define CLEAR_TYPE(name, attribute) Py_CLEAR(st->name##Type);
    FDL_PY_TYPES(CLEAR_TYPE)
#undef CLEAR_TYPE
#define CLEAR_NAME(field, text) Py_CLEAR(st->field);
    FDL_PY_NAMES(CLEAR_NAME)
#undef CLEAR_NAME
    for (; st->ntypes > 0; st->ntypes--)
        Py_CLEAR(st->types[st->ntypes - 1].type);
    for (; st->ndtypes > 0; st->ndtypes--)
        Py_CLEAR(st->dtypes[st->ndtypes - 1].dtype);
    return 0;
}

/* m_free: the state released; the process's state no more if it was this module's. */
void state_free(void *module)
{
    fdl_py_state *st = PyModule_GetState((PyObject *)module);
    state_clear((PyObject *)module);
    if (st && st == g_state)
        g_state = NULL;
}

/* ---- errors ----------------------------------------------------------------------------- */

/* Text from the library or a backend (a log, a path, a message) as a str, whatever its bytes:
 * UTF-8 decoded with @p errors ("surrogateescape" for paths, so that os.fsencode() gives the
 * bytes back; "backslashreplace" for messages and logs, always printable); None for NULL.
 * Never raises for bad bytes: an error being reported is never replaced by a decoding error. */
PyObject *text_of(const char *s, const char *errors)
{
    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), errors);
}
#define MSG(s) text_of((s), "backslashreplace")

/* The diagnostics of a link as a list of dicts (the records of --diagnostics-format=json). */
PyObject *diagnostics_list(const fdl_link *link)
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

/* Set @p key of @p record to @p value (a new reference, stolen; NULL: the error already set). */
static int put(PyObject *record, const char *key, PyObject *value)
{
    int rc = value ? PyDict_SetItemString(record, key, value) : -1;
    Py_XDECREF(value);
    return rc;
}

/* The details @p err carries (error.h's FDL_ERROR_HAS_*) into @p record, each key only where
 * its bit is set: rule, decl_source/decl_line/decl_column, library, index, block and thread (3
 * ints each), count. -1 with the error set. */
static int put_details(PyObject *record, const fdl_error *err)
{
    unsigned f = err->fields;
    if ((f & FDL_ERROR_HAS_RULE) && put(record, "rule", PyLong_FromLong(err->rule)) < 0)
        return -1;
    if ((f & FDL_ERROR_HAS_DECL) &&
        (put(record, "decl_source", text_of(err->decl_source, "surrogateescape")) < 0 ||
         put(record, "decl_line", PyLong_FromUnsignedLong(err->decl_line)) < 0 ||
         put(record, "decl_column", PyLong_FromUnsignedLong(err->decl_column)) < 0))
        return -1;
    if ((f & FDL_ERROR_HAS_LIBRARY) &&
        put(record, "library", text_of(err->library, "surrogateescape")) < 0)
        return -1;
    if ((f & FDL_ERROR_HAS_INDEX) &&
        put(record, "index", PyLong_FromUnsignedLongLong(err->index)) < 0)
        return -1;
    if ((f & FDL_ERROR_HAS_PLACE) &&
        (put(record, "block", Py_BuildValue("(III)", err->block[0], err->block[1],
                                            err->block[2])) < 0 ||
         put(record, "thread", Py_BuildValue("(III)", err->thread[0], err->thread[1],
                                             err->thread[2])) < 0))
        return -1;
    if ((f & FDL_ERROR_HAS_COUNT) &&
        put(record, "count", PyLong_FromUnsignedLongLong(err->count)) < 0)
        return -1;
    return 0;
}

/* Raise the exception for @p err (status @p rc); NULL always. @p link adds its diagnostics. */
PyObject *raise_fdl(int rc, const fdl_error *err, const fdl_link *link)
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
    if (put_details(record, err) < 0) {
        Py_DECREF(record);
        return NULL;
    }
    if (!g_state->error_factory) {
        PyErr_SetString(PyExc_RuntimeError, line);
        Py_DECREF(record);
        return NULL;
    }
    PyObject *exc = PyObject_CallFunctionObjArgs(g_state->error_factory, record, NULL);
    Py_DECREF(record);
    if (!exc)
        return NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* A bad argument of the package's API as an fdlink error: InvalidArgumentError (a ValueError),
 * or ArgumentTypeError (a TypeError) when @p type_error; "argument: message", the argument as
 * the record's symbol. NULL always. */
PyObject *raise_arg(int type_error, const char *argument, const char *fmt, ...)
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
    if (!record || !g_state->error_factory) {
        if (record)
            PyErr_SetObject(type_error ? PyExc_TypeError : PyExc_ValueError, msg);
        Py_XDECREF(record);
        Py_DECREF(msg);
        return NULL;
    }
    Py_DECREF(msg);
    PyObject *exc = PyObject_CallFunctionObjArgs(g_state->error_factory, record, NULL);
    Py_DECREF(record);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* A size_t argument (shared_mem, nbytes): a non-negative int, else an fdlink error naming it. */
int size_arg(PyObject *o, const char *argument, size_t *out)
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

/* _set_error_factory(callable): the module's (self's) state holds it */
PyObject *set_error_factory(PyObject *self, PyObject *arg)
{
    fdl_py_state *st = PyModule_GetState(self);
    if (!st)
        return NULL;
    if (!PyCallable_Check(arg))
        return PyErr_Format(PyExc_TypeError, "the error factory must be callable");
    Py_INCREF(arg);
    Py_XDECREF(st->error_factory);
    st->error_factory = arg;
    Py_RETURN_NONE;
}

/* ---- small helpers ---------------------------------------------------------------------- */

/* The name of an object's type, for messages (the Limited API of 3.10 has no PyType_GetName). */
const char *tname(PyObject *o)
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
int utf8_of(PyObject *o, const char **out, int none_ok, const char *what)
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
int path_of(PyObject *o, PyObject **holder, const char **out, const char *what)
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
const char **str_array(PyObject *seq, const char *what)
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
int bytes_of(PyObject *o, const char **data, Py_ssize_t *size, const char *what)
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

int dim3_of(PyObject *o, fdl_dim3 *d, const char *what)
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
