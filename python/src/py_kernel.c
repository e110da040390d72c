/*
 * py_kernel: Module, Kernel, Configured (kernel[grid, block]) and Launch (a prepared launch) (the
 * _fdlink extension: py_fdlink.h).
 */
#include "py_fdlink.h"

/* ---- Module ----------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    fdl_module *mod;
    PyObject *device;
    PyObject *image; /* the bytes it was loaded from */
} ModuleObject;

PyObject *Device_load(DeviceObject *self, PyObject *args)
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
    ModuleObject *m = (ModuleObject *)PyType_GenericAlloc(g_state->ModuleType, 0);
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
    return none_or_raise(fdl_module_check_status(self->mod, &err), &err);
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
     * fdl_image_kernel_param_info; set by fdlink._kernel): classes and sizes */
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
    KernelObject *o = (KernelObject *)PyType_GenericAlloc(g_state->KernelType, 0);
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

/* grid, block, shared_mem, stream, flags (@p args[0..4]) into @p cfg: launch, _time_launches and
 * prepare take them so */
static int config_of(PyObject *const *args, fdl_launch_config *cfg)
{
    if (dim3_of(args[0], &cfg->grid, "grid") < 0 || dim3_of(args[1], &cfg->block, "block") < 0 ||
        stream_of(args[3], &cfg->stream) < 0)
        return -1;
    if (size_arg(args[2], "shared_mem", &cfg->shared_bytes) < 0)
        return -1;
    cfg->flags = (unsigned)PyLong_AsUnsignedLong(args[4]);
    return PyErr_Occurred() ? -1 : 0;
}

/* @p n arguments of kernel @p k converted into @p la (launch_args_begin: launch_args_end after
 * it, whatever it returns), its fdl_arg array made */
static int kernel_args(KernelObject *k, PyObject *const *args, Py_ssize_t n, fdl_stream *stream,
                       launch_args *la)
{
    if (launch_args_begin(la, n, sizeof(fdl_arg)) < 0 ||
        convert_args(k, args, n, la->v, la->keep, stream) < 0)
        return -1;
    fdl_arg *ap = la->a;
    for (Py_ssize_t i = 0; i < n; i++)
        ap[i] = fdl_arg_make(ARG_DATA(&la->v[i]), la->v[i].size);
    return 0;
}

/* launch(grid, block, shared_mem, stream, flags, *args) */
static PyObject *Kernel_launch(KernelObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 5)
        return PyErr_Format(PyExc_TypeError, "launch(grid, block, shared_mem, stream, flags, *args)");
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    if (config_of(args, &cfg) < 0)
        return NULL;
    launch_args la;
    PyObject *ret = NULL;
    if (kernel_args(self, args + 5, nargs - 5, cfg.stream, &la) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_kernel_launch_ex(self->kernel, &cfg, la.a, (size_t)la.n, &err);
    ret = none_or_raise(rc, &err);
done:
    launch_args_end(&la);
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
    if ((reps < 0 && PyErr_Occurred()) || config_of(args + 1, &cfg) < 0)
        return NULL;
    launch_args la;
    PyObject *ret = NULL;
    if (kernel_args(self, args + 6, nargs - 6, cfg.stream, &la) < 0)
        goto done;
    fdl_error err = FDL_ERROR_INIT;
    struct timespec t0, t1;
    int rc = FDL_OK;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (Py_ssize_t i = 0; i < reps && rc == FDL_OK; i++)
        rc = fdl_kernel_launch_ex(self->kernel, &cfg, la.a, (size_t)la.n, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = PyFloat_FromDouble((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
done:
    launch_args_end(&la);
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
    ConfiguredObject *o = (ConfiguredObject *)PyType_GenericAlloc(g_state->ConfiguredType, 0);
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
 * the fallback (fdlink._kernel._Configured, which converts streams and flags) */
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
PyType_Spec Configured_spec = {"fdlink._fdlink.Configured", sizeof(ConfiguredObject), 0,
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
    if (config_of(args, &cfg) < 0)
        return NULL;
    if (cfg.flags & FDL_LAUNCH_SYNC)
        return PyErr_Format(PyExc_ValueError, "a prepared launch cannot be synchronous (sync=True); "
                            "call module.check_status() or device.synchronize() after it");
    Py_ssize_t n = nargs - 5;
    if (n > MAX_PARAMS)
        return PyErr_Format(PyExc_TypeError, "at most %d arguments", MAX_PARAMS);
    launch_args la;
    LaunchObject *o = NULL;
    PyObject *ret = NULL;
    if (kernel_args(self, args + 5, n, cfg.stream, &la) < 0 ||
        !(o = (LaunchObject *)PyType_GenericAlloc(g_state->LaunchType, 0)))
        goto done;
    o->kernel = (PyObject *)self;
    Py_INCREF(self);
    o->stream = args[3];
    Py_INCREF(args[3]);
    o->keep = la.keep; /* the launch keeps what its arguments point into */
    la.keep = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_launch_create(&o->launch, self->kernel, &cfg, la.a, (size_t)n, &err);
    if (rc != FDL_OK) {
        raise_fdl(rc, &err, NULL);
        goto done;
    }
    ret = (PyObject *)o;
    o = NULL;
done:
    Py_XDECREF(o);
    launch_args_end(&la);
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
    return none_or_raise(fdl_launch_run(self->launch, &err), &err);
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
    return none_or_raise(fdl_launch_set_geometry(self->launch, grid, block, shared, &err), &err);
}

/* set_stream(stream): the next runs go to that stream: an fdlink Stream, None (the default
 * stream), an int handle or an object with __cuda_stream__ (wrapped on the kernel's device) */
static PyObject *Launch_set_stream(LaunchObject *self, PyObject *arg)
{
    fdl_stream *st = NULL;
    PyObject *wrapped = NULL;
    if (arg != Py_None && !PyObject_TypeCheck(arg, g_state->StreamType)) {
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
        wrapped = stream_wrap(((KernelObject *)self->kernel)->dev, h, arg);
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
PyType_Spec Launch_spec = {"fdlink._fdlink.Launch", sizeof(LaunchObject), 0,
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
int set_types(PyObject **slot, PyObject *v)
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
    return none_or_raise(fdl_kernel_set_max_dynamic_shared(self->kernel, bytes, &err), &err);
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
PyType_Spec Kernel_spec = {"fdlink._fdlink.Kernel", sizeof(KernelObject), 0,
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
PyType_Spec Module_spec = {"fdlink._fdlink.Module", sizeof(ModuleObject), 0,
                                  Py_TPFLAGS_DEFAULT, Module_slots};
