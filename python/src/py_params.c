/*
 * py_params: views and scalars to kernel parameters (cuda.core's _kernel_arg_handler): scalar
 * packing, host and NumPy scalars, convert_arg (the _fdlink extension: py_fdlink.h).
 */
#include "py_fdlink.h"

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
    PyObject *ai = PyObject_GetAttr(o, g_state->s_array_interface);
    if (!ai)
        return -1;
    PyObject *shape = PyDict_Check(ai) ? PyDict_GetItemWithError(ai, g_state->s_shape) : NULL;
    PyObject *ts = PyDict_Check(ai) ? PyDict_GetItemWithError(ai, g_state->s_typestr) : NULL;
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
    return from_packed(c, PyObject_CallMethodObjArgs(o, g_state->s_tobytes, NULL), size, what,
                       keep, out);
}

/*
 * The per-launch reads of CuPy's arrays and PyTorch's tensors, without creating objects that are
 * thrown away (CuPy's flags and Device objects, attribute names, dtype strings): attribute names
 * are interned once (PyInit__fdlink), methods are called through PyObject_CallMethodObjArgs (no
 * bound method is made), and a dtype object's code and item size are cached by identity (the
 * cache holds a reference, so an address is never reused for another dtype while cached).
 */

/* A value of @o: an attribute (@call 0) or a method called without arguments. New reference. */

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
    PyObject *dt = PyObject_GetAttr(o, g_state->s_dtype);
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
        return from_packed(c, PyObject_CallMethodObjArgs(o, g_state->s_tobytes, NULL), size, "a scalar",
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
    if (PyObject_TypeCheck(o, g_state->BufferType)) {
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
        !PyObject_HasAttr(o, g_state->s_array_interface) && !PyObject_HasAttr(o, g_state->s_cai) &&
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
        PyObject_HasAttr((PyObject *)Py_TYPE(o), g_state->s_array_interface))
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
        PyObject *cai = PyObject_GetAttr(o, g_state->s_cai);
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
void arg_error(const arg_ctx *c)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int is_type = et == PyExc_TypeError;
    if ((!is_type && et != PyExc_ValueError && et != PyExc_OverflowError) ||
        !g_state->error_factory) {
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
    PyObject *exc =
        record ? PyObject_CallFunctionObjArgs(g_state->error_factory, record, NULL) : NULL;
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

int convert_arg(const arg_ctx *c, PyObject *o, size_t size, const char *want, int ordinal,
                       PyObject *keep, conv_arg *out)
{
    if (convert_arg_raw(c, o, size, want, ordinal, keep, out) == 0)
        return 0;
    arg_error(c);
    return -1;
}

/* ---- the arguments of a launch (py_fdlink.h: launch_args) -------------------------------- */

/* @p n arguments, @p elem bytes each in the launch's array: every field set, so that
 * launch_args_end may follow whatever this returns. */
int launch_args_begin(launch_args *la, Py_ssize_t n, size_t elem)
{
    la->n = n;
    la->keep = PyList_New(0);
    if (n <= LAUNCH_ARGS_INLINE) {
        la->v = la->v_inline;
        la->a = &la->a_inline;
        memset(la->v, 0, (size_t)n * sizeof *la->v);
        memset(la->a, 0, (size_t)n * elem);
    } else {
        la->v = calloc((size_t)n, sizeof *la->v);
        la->a = calloc((size_t)n, elem);
    }
    if (!la->v || !la->a || !la->keep) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    return 0;
}

void launch_args_end(launch_args *la)
{
    Py_XDECREF(la->keep);
    if (la->v != la->v_inline)
        free(la->v);
    if (la->a != (void *)&la->a_inline)
        free(la->a);
}
