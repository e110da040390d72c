/*
 * fdlink's XLA FFI handler (fdlink.jax, docs/python.md "Inside jax.jit"): one handler, written on
 * XLA's FFI C API (xla/ffi/api/c_api.h, shipped with jaxlib: jax.ffi.include_dir()), that
 * launches an fdlink kernel, map (or elementwise kernel) or reduction on XLA's stream, over the
 * buffers XLA hands it (operands and the results XLA allocated from the declared shapes): no
 * copy, no host synchronisation (unless the call asks for a status check).
 *
 * It is built by fdlink.jax at first use, with the system C compiler, against the headers of the
 * jaxlib in use and fdlink's own (fdlink.include_dir()), linked with the libfdlink the extension
 * loaded; jaxlib is not linked: XLA hands the handler its API table in every call frame.
 *
 * What to launch comes in the call's attributes (fdlink.jax sets them):
 *   fdl_kind      s32: 0 a kernel, 1 a map or elementwise kernel, 2 a reduction
 *   fdl_target    u64: the fdl_kernel, fdl_map or fdl_reduction (kept alive by fdlink.jax)
 *   fdl_device    u64: its fdl_device
 *   fdl_plan      s64[3k]: the launch's arguments, each (what, index, size): what 0 operand
 *                 @index, 1 result @index, 2 scalar of @size bytes at byte @index of fdl_scalars
 *   fdl_scalars   u8[]: the scalar arguments' bytes
 *   fdl_geometry  s64[]: a kernel's grid x,y,z, block x,y,z, dynamic shared bytes; a map's or
 *                 reduction's n
 *   fdl_check     s32: 1 to wait for the stream and raise a failed FDL_CALL / FDL_MAP_CALL
 *                 (the function and the index) from this call
 * fdl_xla_decode is the decoding alone (tested with hand-built call frames, tests/python).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fdlink/fdlink.h"
#include "xla/ffi/api/c_api.h"

#define FDL_XLA_MAX_ARGS 64

#if defined(__GNUC__)
#define FDL_XLA_EXPORT __attribute__((visibility("default")))
#else
#define FDL_XLA_EXPORT
#endif

/* One call, decoded. */
typedef struct fdl_xla_call {
    int kind;
    void *target;
    void *device;
    int check;
    size_t nargs;
    int64_t geometry[7];
    size_t ngeometry;
    fdl_gen_arg gen[FDL_XLA_MAX_ARGS];   /* maps and reductions */
    fdl_arg karg[FDL_XLA_MAX_ARGS];      /* kernels: pointers to values */
    uint64_t address[FDL_XLA_MAX_ARGS];  /* kernels: the buffers' addresses */
} fdl_xla_call;

static size_t dtype_size(XLA_FFI_DataType t)
{
    switch (t) {
    case XLA_FFI_DataType_PRED: case XLA_FFI_DataType_S8: case XLA_FFI_DataType_U8:
    case XLA_FFI_DataType_F8E5M2: case XLA_FFI_DataType_F8E4M3FN:
        return 1;
    case XLA_FFI_DataType_S16: case XLA_FFI_DataType_U16: case XLA_FFI_DataType_F16:
    case XLA_FFI_DataType_BF16:
        return 2;
    case XLA_FFI_DataType_S32: case XLA_FFI_DataType_U32: case XLA_FFI_DataType_F32:
        return 4;
    case XLA_FFI_DataType_S64: case XLA_FFI_DataType_U64: case XLA_FFI_DataType_F64:
    case XLA_FFI_DataType_C64:
        return 8;
    case XLA_FFI_DataType_C128:
        return 16;
    default:
        return 0;
    }
}

static int fail(char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static const void *find_attr(const XLA_FFI_CallFrame *cf, const char *name, XLA_FFI_AttrType *type)
{
    size_t len = strlen(name);
    for (int64_t i = 0; i < cf->attrs.size; i++) {
        const XLA_FFI_ByteSpan *n = cf->attrs.names[i];
        if (n && n->len == len && memcmp(n->ptr, name, len) == 0) {
            *type = cf->attrs.types[i];
            return cf->attrs.attrs[i];
        }
    }
    return NULL;
}

/* An integer scalar attribute (any integer dtype) into @out. */
static int scalar_attr(const XLA_FFI_CallFrame *cf, const char *name, int64_t *out, char *msg,
                       size_t cap)
{
    XLA_FFI_AttrType t;
    const XLA_FFI_Scalar *s = find_attr(cf, name, &t);
    if (!s)
        return fail(msg, cap, "attribute %s is missing", name);
    if (t != XLA_FFI_AttrType_SCALAR)
        return fail(msg, cap, "attribute %s is not a scalar", name);
    switch (s->dtype) {
    case XLA_FFI_DataType_S32: *out = *(const int32_t *)s->value; return 0;
    case XLA_FFI_DataType_U32: *out = *(const uint32_t *)s->value; return 0;
    case XLA_FFI_DataType_S64: *out = *(const int64_t *)s->value; return 0;
    case XLA_FFI_DataType_U64: *out = (int64_t)*(const uint64_t *)s->value; return 0;
    default:
        return fail(msg, cap, "attribute %s has data type %d, not an integer", name,
                    (int)s->dtype);
    }
}

static const XLA_FFI_Array *array_attr(const XLA_FFI_CallFrame *cf, const char *name,
                                       XLA_FFI_DataType dtype, char *msg, size_t cap)
{
    XLA_FFI_AttrType t;
    const XLA_FFI_Array *a = find_attr(cf, name, &t);
    if (!a) {
        fail(msg, cap, "attribute %s is missing", name);
        return NULL;
    }
    if (t != XLA_FFI_AttrType_ARRAY || a->dtype != dtype) {
        fail(msg, cap, "attribute %s is not an array of data type %d", name, (int)dtype);
        return NULL;
    }
    return a;
}

static int buffer_of(const XLA_FFI_Buffer *b, uint64_t *address, size_t *bytes,
                     const char *what, int64_t index, char *msg, size_t cap)
{
    size_t es = dtype_size(b->dtype);
    if (es == 0)
        return fail(msg, cap, "%s %lld has data type %d, which fdlink does not take", what,
                    (long long)index, (int)b->dtype);
    size_t n = es;
    for (int64_t d = 0; d < b->rank; d++) {
        if (b->dims[d] < 0 || (b->dims[d] && n > SIZE_MAX / (size_t)b->dims[d]))
            return fail(msg, cap, "%s %lld: its size overflows", what, (long long)index);
        n *= (size_t)b->dims[d];
    }
    *address = (uint64_t)(uintptr_t)b->data;
    *bytes = n;
    return 0;
}

/*
 * Decode a call frame's buffers and attributes into @p out. Returns 0, or -1 with a one-line
 * message in @p msg naming the attribute or the argument.
 */
FDL_XLA_EXPORT int fdl_xla_decode(const XLA_FFI_CallFrame *cf, fdl_xla_call *out, char *msg,
                                  size_t cap)
{
    memset(out, 0, sizeof *out);
    int64_t v;
    if (scalar_attr(cf, "fdl_kind", &v, msg, cap))
        return -1;
    if (v < 0 || v > 2)
        return fail(msg, cap, "attribute fdl_kind is %lld, not 0 (kernel), 1 (map) or 2 "
                    "(reduction)", (long long)v);
    out->kind = (int)v;
    if (scalar_attr(cf, "fdl_target", &v, msg, cap))
        return -1;
    out->target = (void *)(uintptr_t)v;
    if (scalar_attr(cf, "fdl_device", &v, msg, cap))
        return -1;
    out->device = (void *)(uintptr_t)v;
    if (!out->target || !out->device)
        return fail(msg, cap, "attribute fdl_%s is 0", out->target ? "device" : "target");
    if (scalar_attr(cf, "fdl_check", &v, msg, cap))
        return -1;
    out->check = v != 0;
    const XLA_FFI_Array *g = array_attr(cf, "fdl_geometry", XLA_FFI_DataType_S64, msg, cap);
    if (!g)
        return -1;
    size_t want = out->kind == 0 ? 7 : 1;
    if (g->size != want)
        return fail(msg, cap, "attribute fdl_geometry has %zu values, but a %s takes %zu",
                    g->size, out->kind == 0 ? "kernel" : "map", want);
    memcpy(out->geometry, g->data, want * sizeof(int64_t));
    out->ngeometry = want;
    for (size_t i = 0; i < want; i++)
        if (out->geometry[i] < (out->kind == 0 && i < 6 ? 1 : 0))
            return fail(msg, cap, "attribute fdl_geometry[%zu] is %lld", i,
                        (long long)out->geometry[i]);
    const XLA_FFI_Array *plan = array_attr(cf, "fdl_plan", XLA_FFI_DataType_S64, msg, cap);
    if (!plan)
        return -1;
    const XLA_FFI_Array *sc = array_attr(cf, "fdl_scalars", XLA_FFI_DataType_U8, msg, cap);
    if (!sc)
        return -1;
    if (plan->size % 3 != 0 || plan->size / 3 > FDL_XLA_MAX_ARGS)
        return fail(msg, cap, "attribute fdl_plan has %zu values (3 per argument, at most %d "
                    "arguments)", plan->size, FDL_XLA_MAX_ARGS);
    const int64_t *p = plan->data;
    out->nargs = plan->size / 3;
    for (size_t i = 0; i < out->nargs; i++) {
        int64_t what = p[3 * i], index = p[3 * i + 1], size = p[3 * i + 2];
        if (what == 0 || what == 1) {
            const char *w = what == 0 ? "operand" : "result";
            int64_t count = what == 0 ? cf->args.size : cf->rets.size;
            if (index < 0 || index >= count)
                return fail(msg, cap, "argument %zu: %s %lld, but the call has %lld", i + 1, w,
                            (long long)index, (long long)count);
            int bad = what == 0 ? cf->args.types[index] != XLA_FFI_ArgType_BUFFER
                                : cf->rets.types[index] != XLA_FFI_RetType_BUFFER;
            if (bad)
                return fail(msg, cap, "argument %zu: %s %lld is not a buffer", i + 1, w,
                            (long long)index);
            const XLA_FFI_Buffer *b = what == 0 ? cf->args.args[index] : cf->rets.rets[index];
            size_t bytes = 0;
            if (buffer_of(b, &out->address[i], &bytes, w, index, msg, cap))
                return -1;
            out->gen[i] = fdl_gen_array(out->address[i], bytes);
            out->karg[i] = fdl_arg_make(&out->address[i], sizeof out->address[i]);
        } else if (what == 2) {
            if (index < 0 || size <= 0 || (uint64_t)index > sc->size ||
                (uint64_t)size > sc->size - (uint64_t)index)
                return fail(msg, cap, "argument %zu: scalar bytes %lld..%lld, but fdl_scalars "
                            "has %zu", i + 1, (long long)index, (long long)(index + size),
                            sc->size);
            const char *at = (const char *)sc->data + index;
            out->gen[i] = fdl_gen_scalar(at, (size_t)size);
            out->karg[i] = fdl_arg_make(at, (size_t)size);
        } else {
            return fail(msg, cap, "argument %zu: kind %lld, not 0 (operand), 1 (result) or 2 "
                        "(scalar)", i + 1, (long long)what);
        }
    }
    return 0;
}

/* fdl_stream wrappers of XLA's streams, made once per (device, CUstream). */
static struct {
    void *dev, *handle;
    fdl_stream *s;
} g_streams[32];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static fdl_stream *wrap(void *dev, void *handle, fdl_error *err)
{
    fdl_stream *s = NULL;
    pthread_mutex_lock(&g_lock);
    size_t i = 0;
    for (; i < sizeof g_streams / sizeof g_streams[0] && g_streams[i].s; i++)
        if (g_streams[i].dev == dev && g_streams[i].handle == handle) {
            s = g_streams[i].s;
            break;
        }
    if (!s && fdl_stream_wrap(&s, dev, handle, err) == FDL_OK) {
        if (i == sizeof g_streams / sizeof g_streams[0]) { /* full: start again (leaks none:
                                                            * the old wrappers are freed) */
            for (size_t j = 0; j < i; j++)
                fdl_stream_destroy(g_streams[j].s);
            memset(g_streams, 0, sizeof g_streams);
            i = 0;
        }
        g_streams[i].dev = dev;
        g_streams[i].handle = handle;
        g_streams[i].s = s;
    }
    pthread_mutex_unlock(&g_lock);
    return s;
}

static XLA_FFI_Error *error(const XLA_FFI_Api *api, XLA_FFI_Error_Code code, const char *msg)
{
    XLA_FFI_Error_Create_Args a;
    memset(&a, 0, sizeof a);
    a.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    a.message = msg;
    a.errc = code;
    return api->XLA_FFI_Error_Create(&a);
}

/* Launch a decoded call in @p stream (a CUstream); 0, or -1 with @p err set. */
static int launch(const fdl_xla_call *c, void *stream, fdl_error *err)
{
    fdl_stream *s = stream ? wrap(c->device, stream, err) : NULL;
    if (stream && !s)
        return -1;
    int rc;
    if (c->kind == 0) {
        fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
        cfg.grid = (fdl_dim3){(unsigned)c->geometry[0], (unsigned)c->geometry[1],
                              (unsigned)c->geometry[2]};
        cfg.block = (fdl_dim3){(unsigned)c->geometry[3], (unsigned)c->geometry[4],
                               (unsigned)c->geometry[5]};
        cfg.shared_bytes = (size_t)c->geometry[6];
        cfg.stream = s;
        rc = fdl_kernel_launch_ex(c->target, &cfg, c->karg, c->nargs, err);
        if (rc == FDL_OK && c->check &&
            (rc = s ? fdl_stream_synchronize(s, err) : fdl_device_synchronize(c->device, err)) ==
                FDL_OK)
            rc = fdl_module_check_status(fdl_kernel_module(c->target), err);
    } else if (c->kind == 1) {
        rc = fdl_map_launch_async(c->target, (size_t)c->geometry[0], c->gen, c->nargs, s, err);
        if (rc == FDL_OK && c->check)
            rc = fdl_map_check(c->target, err);
    } else {
        /* a reduction: the first argument is the result (a buffer), the others the inputs */
        if (c->nargs < 1 || c->gen[0].kind != FDL_GEN_ARRAY) {
            snprintf(err->message, sizeof err->message, "a reduction's first argument must be "
                     "its result buffer");
            err->code = FDL_EINVAL;
            return -1;
        }
        rc = fdl_reduction_launch_async(c->target, (size_t)c->geometry[0], c->gen + 1,
                                        c->nargs - 1, s, err);
        if (rc == FDL_OK)
            rc = fdl_reduction_result_async(c->target, c->gen[0].address, c->gen[0].size, s,
                                            err);
        if (rc == FDL_OK && c->check)
            rc = fdl_reduction_check(c->target, err);
    }
    return rc == FDL_OK ? 0 : -1;
}

/*
 * The layout of an extension of the call frame: XLA_FFI_Extension_Base up to API 0.3, renamed
 * XLA_FFI_InternalExtension in 0.4 (jaxlib 0.11), the same fields; walked through this mirror so
 * that one source builds against either header.
 */
typedef struct fdl_xla_ext {
    size_t struct_size;
    int type;
    const struct fdl_xla_ext *next;
} fdl_xla_ext;

/* The handler XLA calls (registered by fdlink.jax with jax.ffi.register_ffi_target). */
FDL_XLA_EXPORT XLA_FFI_Error *fdl_xla_handler(XLA_FFI_CallFrame *cf)
{
    /* XLA first asks for the handler's metadata: the API version it was built against */
    for (const fdl_xla_ext *e = (const void *)cf->extension_start; e; e = e->next)
        if (e->type == XLA_FFI_Extension_Metadata) {
            XLA_FFI_Metadata_Extension *m = (XLA_FFI_Metadata_Extension *)(uintptr_t)e;
            m->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
            m->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
            m->metadata->traits = 0; /* not command-buffer compatible: XLA launches it itself */
            return NULL;
        }
    const XLA_FFI_Api *api = cf->api;
    if (cf->stage != XLA_FFI_ExecutionStage_EXECUTE)
        return NULL;
    fdl_xla_call c;
    char msg[512];
    if (fdl_xla_decode(cf, &c, msg, sizeof msg)) {
        char full[600];
        snprintf(full, sizeof full, "fdlink xla handler: %s", msg);
        return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, full);
    }
    XLA_FFI_Stream_Get_Args sa;
    memset(&sa, 0, sizeof sa);
    sa.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
    sa.ctx = cf->ctx;
    XLA_FFI_Error *e = api->XLA_FFI_Stream_Get(&sa);
    if (e)
        return e;
    fdl_error err = FDL_ERROR_INIT;
    if (launch(&c, sa.stream, &err)) {
        char full[sizeof err.message + 64];
        snprintf(full, sizeof full, "fdlink: %s", err.message);
        return error(api, err.code == FDL_EDEVICE ? XLA_FFI_Error_Code_FAILED_PRECONDITION
                                                  : XLA_FFI_Error_Code_INTERNAL, full);
    }
    return NULL;
}
