/*
 * py_fdlink.h: what the files of the _fdlink extension share, as CPython's
 * Modules/_sqlite/module.h: the module state (the type objects, the interned attribute names, the
 * error factory, the type caches), the objects' structs and the functions one file gives another.
 *
 * _fdlink: the CPython extension of the fdlink package (docs/python.md), on the Limited API of
 * CPython 3.10 (one abi3 wheel for 3.10 and later), over libfdlink's public headers only: no
 * struct is described twice. These files own argument marshalling (arrays by
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
 * registers (_set_error_factory): the record's fields, word for word (its details, error.h's
 * FDL_ERROR_HAS_*, as keys where set), plus the link's diagnostic records where there are some. Bad arguments are TypeError or ValueError naming the argument.
 *
 * Thread-safety: an fdlink device family (a device and everything made from it, generators
 * included) is used by one thread at a time: every call that touches one holds the GIL
 * throughout (waits for the GPU included), so Python threads never use a family at once. Only
 * work outside any family releases the GIL: opening a device, links and compiles (distinct
 * links may run at once). Module state (below): the types, the error factory and small caches
 * of array types and dtypes, in the module object, one instance per process.
 *
 * The files, bottom to top (a file calls only the files below it: ctest layers_python):
 *   py_state.c   the module state; errors (raise_fdl: an fdl_error as the exception that
 *                fdlink/_errors.py makes); small converters (tname, utf8_of, bytes_of, ...)
 *   py_link.c    Decls, the link options, Link, cuda_compile
 *   py_device.c  Device (less its method table), Stream, Buffer, DLHold
 *   py_views.c   arrays to views: __cuda_array_interface__, DLPack, CuPy's and PyTorch's
 *                attributes, the classification of argument types (cuda.core's _memoryview)
 *   py_params.c  views and scalars to kernel parameters: scalar packing, host and NumPy scalars,
 *                convert_arg (cuda.core's _kernel_arg_handler)
 *   py_kernel.c  Module, Kernel, Configured (kernel[grid, block]), Launch (a prepared launch)
 *   py_gen.c     Gen, Map, Reduction
 *   _fdlink.c    the module: PyInit__fdlink, the module functions, Device's method table (after
 *                the types its methods make)
 */
#ifndef FDL_PY_FDLINK_H
#define FDL_PY_FDLINK_H

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

/* Per-type classification of array objects, cached by type (CuPy, PyTorch and others are read
 * through their protocols; the cache saves the attribute probes). */
enum { K_UNKNOWN = 0, K_CAI, K_DLPACK, K_HOSTARRAY, K_SCALAR_BYTES, K_NONE, K_TORCH, K_CUPY,
       K_NPSCALAR, K_CTYPES };

#define TYPE_CACHE  32
#define DTYPE_CACHE 32

/* The types: X(Name, attribute) for state->NameType, made from Name_spec (the module's Name) */
#define FDL_PY_TYPES(X)                                                                            \
    X(Decls, "Decls")                                                                              \
    X(Link, "Link")                                                                                \
    X(Device, "Device")                                                                            \
    X(Module, "Module")                                                                            \
    X(Kernel, "Kernel")                                                                            \
    X(Launch, "Launch")                                                                            \
    X(Buffer, "Buffer")                                                                            \
    X(Stream, "Stream")                                                                            \
    X(Gen, "Gen")                                                                                  \
    X(Map, "Map")                                                                                  \
    X(Reduction, "Reduction")                                                                      \
    X(DLHold, "_DLHold")                                                                           \
    X(Configured, "Configured")

/* The interned attribute names: X(field, text); from s_c_contiguous_ on, those read from CuPy's
 * arrays and PyTorch's tensors at every launch */
#define FDL_PY_NAMES(X)                                                                            \
    X(s_cai, "__cuda_array_interface__")                                                           \
    X(s_dlpack, "__dlpack__")                                                                      \
    X(s_dlpack_device, "__dlpack_device__")                                                        \
    X(s_array_interface, "__array_interface__")                                                    \
    X(s_stream, "stream")                                                                          \
    X(s_tobytes, "tobytes")                                                                        \
    X(s_shape, "shape")                                                                            \
    X(s_typestr, "typestr")                                                                        \
    X(s_data, "data")                                                                              \
    X(s_strides, "strides")                                                                        \
    X(s_version, "version")                                                                        \
    X(s_mask, "mask")                                                                              \
    X(s_cuda_stream, "__cuda_stream__")                                                            \
    X(s_c_contiguous_, "_c_contiguous")                                                            \
    X(s_ptr, "ptr")                                                                                \
    X(s_device_id, "device_id")                                                                    \
    X(s_size, "size")                                                                              \
    X(s_dtype, "dtype")                                                                            \
    X(s_str, "str")                                                                                \
    X(s_itemsize, "itemsize")                                                                      \
    X(s_is_cuda, "is_cuda")                                                                        \
    X(s_requires_grad, "requires_grad")                                                            \
    X(s_is_contiguous, "is_contiguous")                                                            \
    X(s_get_device, "get_device")                                                                  \
    X(s_nbytes, "nbytes")                                                                          \
    X(s_data_ptr, "data_ptr")

#define FDL_PY_TYPE_FIELD(name, attribute) PyTypeObject *name##Type;
#define FDL_PY_NAME_FIELD(field, text) PyObject *field;

/* The module's state (PyModule_GetState): every object it holds is a strong reference, cleared
 * and visited by state_clear and state_traverse (py_state.c). */
typedef struct {
    PyObject *error_factory; /* fdlink._errors.from_record, set by _set_error_factory */
    FDL_PY_TYPES(FDL_PY_TYPE_FIELD)
    FDL_PY_NAMES(FDL_PY_NAME_FIELD)
    /* array types by their classification (py_views.c classify) */
    struct {
        PyTypeObject *type;
        int kind;
    } types[TYPE_CACHE];
    int ntypes;
    /* dtypes by their type code (py_views.c dtype_of) */
    struct {
        PyObject *dtype;    /* a strong reference */
        char code[24];      /* "<f4" (NumPy's dtype.str) or "f4" (a torch dtype) */
        long long itemsize; /* NumPy's dtype.itemsize; 0 for a torch dtype */
    } dtypes[DTYPE_CACHE];
    int ndtypes;
} fdl_py_state;

/*
 * The state of the one module instance, cached at exec (state_claim) and read by every file as
 * g_state->... without a lookup. The module is on multi-phase initialisation with its state in
 * the module object (m_size), and its types are made with PyType_FromModuleAndSpec, but a
 * function reached from a launch has no cheap way back to its module on the Limited API of 3.10
 * (PyType_GetModuleByDef is 3.13's; PyType_GetModuleState needs the defining class, which a
 * subclass's method or a converter deep in the argument path does not have at hand), and a
 * launch is benchmarked against a raw cuLaunchKernel (bench/python_launch.py). So one instance
 * per process: a second one (importlib.util.module_from_spec while the first lives, or a
 * subinterpreter) is refused with ImportError at its exec, and g_state is cleared when the one
 * that set it is freed (tests/python/test_module_state.py).
 */
extern fdl_py_state *g_state;

#define MSG(s) text_of((s), "backslashreplace")

PyObject *raise_fdl(int rc, const fdl_error *err, const fdl_link *link);

/* None when @p rc is FDL_OK, else the exception for @p err (NULL): a call that returns nothing */
static inline PyObject *none_or_raise(int rc, const fdl_error *err)
{
    if (rc != FDL_OK)
        return raise_fdl(rc, err, NULL);
    Py_INCREF(Py_None);
    return Py_None;
}

/* ---- the objects several files read ------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    fdl_decls *decls;
} DeclsObject;

/* Strings and arrays borrowed for the duration of fdl_link_create / fdl_gen_create. */
typedef struct {
    fdl_link_options lo;
    fdl_nvrtc_options no;
    const char **owned[16]; /* the list options' arrays (str_array), freed by link_opts_free */
    size_t nowned;
} link_opts;

typedef struct {
    PyObject_HEAD
    fdl_device *dev;
    int ordinal;
    fdl_event *order; /* made when first needed: orders a launch after a producer's stream */
} DeviceObject;

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

typedef struct {
    PyObject_HEAD
    void *m;       /* fdl_py_dlmanaged, or fdl_py_dlversioned when versioned */
    int versioned;
} DLHoldObject;

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

/*
 * The arguments of one launch (cuda.core's ParamHolder): the converted values (v), the array the
 * launch takes (a: fdl_arg or fdl_gen_arg, n of them) and the list (keep) that holds what they
 * point into until the launch is queued; in place up to LAUNCH_ARGS_INLINE arguments, else
 * allocated. launch_args_begin first (zeroed; -1: MemoryError), launch_args_end always.
 */
#define LAUNCH_ARGS_INLINE 64
typedef struct {
    Py_ssize_t n;
    conv_arg *v;
    void *a;
    PyObject *keep;
    conv_arg v_inline[LAUNCH_ARGS_INLINE];
    union {
        fdl_arg kernel[LAUNCH_ARGS_INLINE];
        fdl_gen_arg gen[LAUNCH_ARGS_INLINE];
    } a_inline;
} launch_args;

#define ARGFMT "argument %zd of %s '%s'"
#define ARGV(c) (c)->index + 1, (c)->what, (c)->name


/* ---- py_state.c ----------------------------------------------------------------------------- */
int state_claim(PyObject *module);
int state_traverse(PyObject *module, visitproc visit, void *arg);
int state_clear(PyObject *module);
void state_free(void *module);
PyObject *text_of(const char *s, const char *errors);
PyObject *diagnostics_list(const fdl_link *link);
PyObject *raise_arg(int type_error, const char *argument, const char *fmt, ...);
int size_arg(PyObject *o, const char *argument, size_t *out);
PyObject *set_error_factory(PyObject *self, PyObject *arg);
const char *tname(PyObject *o);
int utf8_of(PyObject *o, const char **out, int none_ok, const char *what);
int path_of(PyObject *o, PyObject **holder, const char **out, const char *what);
const char **str_array(PyObject *seq, const char *what);
int bytes_of(PyObject *o, const char **data, Py_ssize_t *size, const char *what);
int dim3_of(PyObject *o, fdl_dim3 *d, const char *what);

/* ---- py_link.c ------------------------------------------------------------------------------ */
PyObject *py_decls_load(PyObject *self, PyObject *arg);
extern PyType_Spec Decls_spec;
void link_opts_free(link_opts *o);
int link_opts_from(link_opts *o, PyObject *d);
PyObject *link_options_table(void);
PyObject *param_info_tuple(const fdl_param_info *p, size_t n);
extern PyType_Spec Link_spec;
PyObject *py_cuda_compile(PyObject *self, PyObject *args);

/* ---- py_device.c ---------------------------------------------------------------------------- */
PyObject *Device_new(PyTypeObject *type, PyObject *args, PyObject *kwds);
void Device_dealloc(DeviceObject *self);
PyObject *Device_repr(DeviceObject *self);
PyObject *Device_info(DeviceObject *self, void *c);
PyObject *Device_ordinal(DeviceObject *self, void *c);
PyObject *Device_c_handle(DeviceObject *self, void *c);
PyObject *Device_arch(DeviceObject *self, void *c);
PyObject *Device_synchronize(DeviceObject *self, PyObject *unused);
PyObject *Device_stream(DeviceObject *self, PyObject *unused);
PyObject *Device_wrap_stream(DeviceObject *self, PyObject *args);
PyObject *stream_wrap(DeviceObject *dev, PyObject *handle, PyObject *owner);
extern PyType_Spec Stream_spec;
int stream_of(PyObject *o, fdl_stream **out);
PyObject *Device_alloc(DeviceObject *self, PyObject *args);
extern PyType_Spec Buffer_spec;
extern PyType_Spec DLHold_spec;

/* ---- py_views.c ----------------------------------------------------------------------------- */
int check_dtype(const arg_ctx *c, const char *got, const char *want);
int from_cai(const arg_ctx *c, PyObject *obj, PyObject *cai, const char *want, conv_arg *out);
int from_dlpack(const arg_ctx *c, PyObject *obj, const char *want, int ordinal, PyObject *keep,
                conv_arg *out);
int classify(PyObject *o);
int refuse_grad(const arg_ctx *c, PyObject *o);
int dtype_of(PyObject *dt, int torch, char *code, long long *itemsize);
int from_torch(const arg_ctx *c, PyObject *o, const char *want, int ordinal, conv_arg *out);
int from_cupy(const arg_ctx *c, PyObject *o, const char *want, int ordinal, conv_arg *out);

/* ---- py_params.c ---------------------------------------------------------------------------- */
void arg_error(const arg_ctx *c);
int launch_args_begin(launch_args *la, Py_ssize_t n, size_t elem);
void launch_args_end(launch_args *la);
int convert_arg(const arg_ctx *c, PyObject *o, size_t size, const char *want, int ordinal,
                PyObject *keep, conv_arg *out);

/* ---- py_kernel.c ---------------------------------------------------------------------------- */
PyObject *Device_load(DeviceObject *self, PyObject *args);
extern PyType_Spec Configured_spec;
extern PyType_Spec Launch_spec;
int set_types(PyObject **slot, PyObject *v);
extern PyType_Spec Kernel_spec;
extern PyType_Spec Module_spec;

/* ---- py_gen.c ------------------------------------------------------------------------------- */
extern PyType_Spec Gen_spec;
extern PyType_Spec Map_spec;
extern PyType_Spec Reduction_spec;
PyObject *py_parse_type(PyObject *self, PyObject *arg);

#endif
