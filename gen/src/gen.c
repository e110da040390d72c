/*
 * Generators, maps, elementwise kernels and reductions (fdlink/gen.h): each generated source is
 * compiled (NVRTC, through fdl_link_add_cuda), linked with the functions' device code, loaded
 * once per generator, and launched with its arguments checked.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h" /* fdl__copy_async */
#include "genint.h"

/* One compiled source: what it was made from and what it became. */
typedef struct compiled {
    char *source;
    size_t ninputs; /* the generator's inputs when it was linked (more may be added later) */
    void *cubin;
    size_t cubin_size;
    fdl_module *mod; /* NULL without a device */
} compiled;

typedef struct gen_input {
    char *name;
    fdl_input_kind kind;
    void *data;
    size_t size;
} gen_input;

struct fdl_gen {
    fdl_device *dev;
    char arch[32];
    const fdl_decls *decls;
    fdl_link_options link;
    int sm_count;
    gen_input *inputs;
    size_t ninputs, inputs_cap;
    compiled *done;
    size_t ndone, done_cap;
    char *log; /* the compiler's or linker's log of the last failed compile (err->log) */
};

/* What a map and a reduction share: a kernel, its arguments, its failure record. */
typedef struct launchable {
    fdl_gen *gen;
    fdl__gen_kernel k;
    fdl_kernel *kernel;   /* borrowed from a module of the generator */
    size_t compiled;      /* its entry in the generator's table */
    fdl_buffer *scratch; /* the failure record (and a reduction's counter, result, partials) */
    char label[160];     /* "map 'mul_f32_f32'" */
    const char *function; /* a map's function, else NULL */
} launchable;

struct fdl_map {
    launchable l;
    int is_map;
};

struct fdl_reduction {
    launchable l;
    unsigned max_blocks;
    int launched;
};

/* The failure record's bytes as the device lays them out (fdl_gen_fail of the source). */
typedef struct fail_record {
    uint32_t lock;
    int32_t status;
    uint64_t index;
    uint64_t failures;
    char function[64];
} fail_record;

_Static_assert(sizeof(fail_record) == FDL__GEN_FAIL_BYTES, "fdl_gen_fail is 88 bytes");

static const fail_record fail_clear = {0, 0, UINT64_MAX, 0, ""};

int fdl_gen_create(fdl_gen **out, fdl_device *dev, const fdl_gen_options *opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL) || !FDL__CHECK_ARG(opts != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_gen_create: out or opts is NULL");
    *out = NULL;
    if (opts->version != FDL_GEN_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "unsupported fdl_gen_options version %u (expected %u)",
                         opts->version, (unsigned)FDL_GEN_OPTIONS_VERSION);
    const char *arch = opts->arch;
    if (dev) {
        const char *dev_arch = fdl_device_arch(dev);
        if (arch && strcmp(arch, "native") != 0 && strcmp(arch, dev_arch) != 0)
            return fdl__fail(err, FDL_EINVAL, "generator for %s, but the device is %s", arch,
                             dev_arch);
        arch = dev_arch;
    } else if (!arch || strcmp(arch, "native") == 0) {
        return fdl__fail(err, FDL_EINVAL, "a generator without a device needs an arch "
                         "(fdl_gen_options.arch, e.g. \"sm_90\")");
    }
    if (strlen(arch) >= sizeof((fdl_gen *)0)->arch)
        return fdl__fail(err, FDL_EINVAL, "arch '%.40s' is too long", arch);
    fdl_gen *g = calloc(1, sizeof *g);
    if (!g)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    int rc = FDL_OK;
    g->dev = dev;
    fdl__strlcpy(g->arch, arch, sizeof g->arch);
    g->decls = opts->decls;
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    g->link = opts->link ? *opts->link : lo;
    g->link.arch = g->arch;
    g->sm_count = dev ? fdl_device_sm_count(dev) : 0;
    for (size_t i = 0; opts->inputs && opts->inputs[i]; i++) {
        char *data = NULL;
        size_t size = 0;
        if ((rc = fdl__read_file(opts->inputs[i], &data, &size, err)) != FDL_OK)
            goto cleanup;
        rc = fdl_gen_add_data(g, data, size, opts->inputs[i], FDL_KIND_AUTO, err);
        free(data);
        if (rc != FDL_OK)
            goto cleanup;
    }
    *out = g;
    g = NULL;
cleanup:
    fdl_gen_destroy(g);
    return rc;
}

int fdl_gen_add_data(fdl_gen *gen, const void *data, size_t size, const char *name,
                     fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(gen && data && name))
        return fdl__fail(err, FDL_EINVAL, "fdl_gen_add_data: gen, data or name is NULL");
    if (!size)
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "empty input");
    gen_input *grown = fdl__grow(gen->inputs, &gen->inputs_cap, gen->ninputs + 1,
                                 sizeof *gen->inputs);
    if (!grown)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    gen->inputs = grown;
    gen_input *in = &gen->inputs[gen->ninputs];
    in->name = fdl__strdup(name);
    in->data = malloc(size);
    if (!in->name || !in->data) {
        free(in->name);
        free(in->data);
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    }
    memcpy(in->data, data, size);
    in->size = size;
    in->kind = kind;
    gen->ninputs++;
    return FDL_OK;
}

void fdl_gen_destroy(fdl_gen *gen)
{
    if (!gen)
        return;
    for (size_t i = 0; i < gen->ndone; i++) {
        fdl_module_destroy(gen->done[i].mod);
        free(gen->done[i].cubin);
        free(gen->done[i].source);
    }
    for (size_t i = 0; i < gen->ninputs; i++) {
        free(gen->inputs[i].name);
        free(gen->inputs[i].data);
    }
    free(gen->done);
    free(gen->inputs);
    free(gen->log);
    free(gen);
}

const char *fdl_gen_arch(const fdl_gen *gen)
{
    return gen ? gen->arch : "";
}

size_t fdl_gen_compiled_count(const fdl_gen *gen)
{
    return gen ? gen->ndone : 0;
}

/* The module of @source: compiled, linked and loaded the first time, then found again. */
static int compile(compiled **out, fdl_gen *g, const char *source, const char *kernel,
                   fdl_error *err)
{
    *out = NULL;
    for (size_t i = 0; i < g->ndone; i++)
        if (g->done[i].ninputs == g->ninputs && strcmp(g->done[i].source, source) == 0) {
            *out = &g->done[i];
            return FDL_OK;
        }
    int rc;
    fdl_link *link = NULL;
    char name[FDL_DECL_MAX_NAME + 32];
    snprintf(name, sizeof name, "%s.cu", kernel);
    compiled c = {0};
    if ((rc = fdl_link_create(&link, &g->link, err)) != FDL_OK)
        goto cleanup;
    if (g->decls && (rc = fdl_link_add_decls(link, g->decls, err)) != FDL_OK)
        goto cleanup;
    for (size_t i = 0; i < g->ninputs; i++)
        if ((rc = fdl_link_add_data(link, g->inputs[i].data, g->inputs[i].size,
                                    g->inputs[i].name, g->inputs[i].kind, err)) != FDL_OK)
            goto cleanup;
    if ((rc = fdl_link_add_cuda(link, source, strlen(source), name, NULL, err)) != FDL_OK)
        goto cleanup;
    if ((rc = fdl_link_complete(link, err)) != FDL_OK)
        goto cleanup;
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    c.source = fdl__strdup(source);
    c.cubin = malloc(size ? size : 1);
    if (!c.source || !c.cubin) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    memcpy(c.cubin, cubin, size);
    c.cubin_size = size;
    c.ninputs = g->ninputs;
    if (g->dev && (rc = fdl_module_load_data(&c.mod, g->dev, c.cubin, size, name, err)) != FDL_OK)
        goto cleanup;
    compiled *grown = fdl__grow(g->done, &g->done_cap, g->ndone + 1, sizeof *g->done);
    if (!grown) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    g->done = grown;
    g->done[g->ndone] = c;
    /* the table may move when it grows: callers keep the module's kernel, not the entry */
    *out = &g->done[g->ndone++];
    memset(&c, 0, sizeof c);
cleanup:
    if (rc != FDL_OK && err && err->log) {
        /* the log belongs to the link, which goes now: keep a copy for err->log */
        free(g->log);
        g->log = fdl__strdup(err->log);
        err->log = g->log;
    }
    fdl_module_destroy(c.mod);
    free(c.cubin);
    free(c.source);
    fdl_link_destroy(link);
    return rc;
}

/* Compile @l's source, look up its kernel and make its scratch buffer of @scratch bytes. */
static int make_ready(launchable *l, size_t scratch, fdl_error *err)
{
    compiled *c = NULL;
    int rc = compile(&c, l->gen, l->k.source.data, l->k.kernel, err);
    if (rc != FDL_OK)
        return rc;
    l->compiled = (size_t)(c - l->gen->done);
    if (!l->gen->dev)
        return FDL_OK;
    if ((rc = fdl_module_get_kernel(&l->kernel, c->mod, l->k.kernel, err)) != FDL_OK ||
        (rc = fdl_buffer_create(&l->scratch, l->gen->dev, scratch, err)) != FDL_OK ||
        (rc = fdl_buffer_zero(l->scratch, err)) != FDL_OK ||
        (rc = fdl_buffer_write(l->scratch, 0, &fail_clear, sizeof fail_clear, err)) != FDL_OK)
        return rc;
    return FDL_OK;
}

static void launchable_free(launchable *l)
{
    fdl_buffer_destroy(l->scratch);
    fdl__gen_kernel_free(&l->k);
}

int fdl_map_create(fdl_map **out, fdl_gen *gen, const char *name, const char *modes,
                   fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_map_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(gen && name))
        return fdl__fail(err, FDL_EINVAL, "fdl_map_create: gen or name is NULL");
    const fdl_decl *d = gen->decls ? fdl_decls_find(gen->decls, name) : NULL;
    if (!d)
        return fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                          "map over '%s': no such function is declared%s%s", name,
                          gen->decls ? " in " : " (the generator has no declarations)",
                          gen->decls ? fdl_decls_source(gen->decls) : "");
    fdl_map *m = calloc(1, sizeof *m);
    if (!m)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    m->is_map = 1;
    m->l.gen = gen;
    m->l.function = d->name;
    snprintf(m->l.label, sizeof m->l.label, "map '%s'", d->name);
    int rc = fdl__gen_map_source(&m->l.k, d, modes, err);
    if (rc == FDL_OK)
        rc = make_ready(&m->l, FDL__GEN_FAIL_BYTES, err);
    if (rc != FDL_OK) {
        fdl_map_destroy(m);
        return rc;
    }
    *out = m;
    return FDL_OK;
}

int fdl_elementwise_create(fdl_map **out, fdl_gen *gen, const char *arguments,
                           const char *operation, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_elementwise_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(gen && arguments && operation))
        return fdl__fail(err, FDL_EINVAL,
                         "fdl_elementwise_create: gen, arguments or operation is NULL");
    fdl_map *m = calloc(1, sizeof *m);
    if (!m)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    m->l.gen = gen;
    char q[48];
    snprintf(m->l.label, sizeof m->l.label, "elementwise kernel '%s'",
             fdl__quote(q, sizeof q, operation, strlen(operation), 40));
    int rc = fdl__gen_parse_arguments(&m->l.k, arguments, err);
    if (rc == FDL_OK)
        rc = fdl__gen_elementwise_source(&m->l.k, arguments, operation, err);
    if (rc == FDL_OK)
        rc = make_ready(&m->l, FDL__GEN_FAIL_BYTES, err);
    if (rc != FDL_OK) {
        fdl_map_destroy(m);
        return rc;
    }
    *out = m;
    return FDL_OK;
}

void fdl_map_destroy(fdl_map *map)
{
    if (!map)
        return;
    launchable_free(&map->l);
    free(map);
}

const char *fdl_map_source(const fdl_map *map)
{
    return map && map->l.k.source.data ? map->l.k.source.data : "";
}

const char *fdl_map_kernel_name(const fdl_map *map)
{
    return map ? map->l.k.kernel : "";
}

static const void *cubin_of(const launchable *l, size_t *size)
{
    if (size)
        *size = l->gen->done[l->compiled].cubin_size;
    return l->gen->done[l->compiled].cubin;
}

const void *fdl_map_cubin(const fdl_map *map, size_t *size)
{
    if (!map) {
        if (size)
            *size = 0;
        return NULL;
    }
    return cubin_of(&map->l, size);
}

const void *fdl_reduction_cubin(const fdl_reduction *red, size_t *size)
{
    if (!red) {
        if (size)
            *size = 0;
        return NULL;
    }
    return cubin_of(&red->l, size);
}

size_t fdl_map_arg_count(const fdl_map *map)
{
    return map ? map->l.k.nparams : 0;
}

unsigned fdl_map_vector_width(const fdl_map *map)
{
    return map ? map->l.k.vec : 0;
}

/* The type of argument @j for messages: "float32", "array of float32". */
static void type_text(char *buf, size_t size, fdl_type t)
{
    fdl_type_format(t, buf, size);
}

/*
 * Check @args against the kernel's parameters for @n indices and fill the launch's argument
 * list; @vec_ok gets whether every array is aligned for the vector width.
 */
static int check_args(const launchable *l, size_t n, const fdl_gen_arg *args, size_t nargs,
                      fdl_arg *kargs, uint64_t *addrs, int *vec_ok, fdl_error *err)
{
    const fdl__gen_kernel *k = &l->k;
    if (nargs != k->nparams)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                          "%s takes %zu arguments, but %zu were given", l->label, k->nparams,
                          nargs);
    if (nargs && !args)
        return fdl__fail(err, FDL_EINVAL, "%s: args is NULL", l->label);
    *vec_ok = 1;
    for (size_t j = 0; j < nargs; j++) {
        const fdl__gen_param *p = &k->params[j];
        const fdl_gen_arg *a = &args[j];
        char type[128], what[FDL__GEN_NAME_MAX + 192];
        type_text(type, sizeof type, p->type);
        if (l->function && j == 0)
            snprintf(what, sizeof what, "argument 1 (the output, %s)", type);
        else if (l->function)
            snprintf(what, sizeof what, "argument %zu (parameter %zu, %s)", j + 1, j, type);
        else
            snprintf(what, sizeof what, "argument %zu (%s, %s)", j + 1, p->name, type);
        size_t esize = fdl_type_size(p->type);
        if (a->kind != FDL_GEN_ARRAY && a->kind != FDL_GEN_SCALAR)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                              "%s: %s has an unknown kind %d", l->label, what, (int)a->kind);
        if (p->array && a->kind != FDL_GEN_ARRAY)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                              "%s: %s was made an array, but a scalar was given", l->label,
                              what);
        if (!p->array && a->kind != FDL_GEN_SCALAR)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                              "%s: %s was made a scalar, but an array was given", l->label,
                              what);
        if (p->array) {
            size_t need = 0;
            if (!fdl__size_mul(&need, n, esize))
                return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                                  "%s: n = %zu elements of %zu bytes overflow", l->label, n,
                                  esize);
            if (a->size < need)
                return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                                  "%s: %s has %zu elements (%zu bytes), but n is %zu", l->label,
                                  what, esize ? a->size / esize : 0, a->size, n);
            if (n && !a->address)
                return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                                  "%s: %s is a NULL device address", l->label, what);
            if (esize && a->address % (esize * k->vec))
                *vec_ok = 0;
            addrs[j] = a->address;
            kargs[j] = fdl_arg_make(&addrs[j], sizeof addrs[j]);
        } else {
            if (!a->value)
                return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                                  "%s: %s: the scalar's value is NULL", l->label, what);
            if (a->size != esize)
                return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->kernel,
                                  "%s: %s is a scalar of %zu bytes, but %s has %zu", l->label,
                                  what, a->size, type, esize);
            kargs[j] = fdl_arg_make(a->value, a->size);
        }
    }
    return FDL_OK;
}

/* Most blocks of a map or elementwise launch. */
#define MAP_MAX_BLOCKS ((size_t)1 << 20)

static unsigned blocks_for(const launchable *l, size_t work, unsigned per_sm)
{
    size_t most = (size_t)(l->gen->sm_count > 0 ? l->gen->sm_count : 1) * per_sm;
    size_t want = work / FDL_GEN_BLOCK + (work % FDL_GEN_BLOCK != 0);
    if (want > most)
        want = most;
    return want ? (unsigned)want : 1u;
}

/* The arguments checked into kernel arguments, and a device to launch on; *vec: whether the
 * 16-byte path may run (every array aligned for it and the kernel built with it). */
static int prepare_launch(launchable *l, size_t n, const fdl_gen_arg *args, size_t nargs,
                          fdl_arg *kargs, uint64_t *addrs, int *vec, fdl_error *err)
{
    int vec_ok = 0;
    int rc = check_args(l, n, args, nargs, kargs, addrs, &vec_ok, err);
    if (rc != FDL_OK)
        return rc;
    if (!l->gen->dev)
        return fdl__error(err, FDL_ENODEVICE, NULL, 0, 0, l->k.kernel,
                          "%s was made without a device (compiled and linked for %s only)",
                          l->label, l->gen->arch);
    *vec = vec_ok && l->k.vec > 1;
    return FDL_OK;
}

static int map_launch(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs,
                      fdl_stream *stream, const char *what, fdl_error *err)
{
    if (!FDL__CHECK_ARG(map != NULL))
        return fdl__fail(err, FDL_EINVAL, "%s: map is NULL", what);
    launchable *l = &map->l;
    fdl_arg kargs[FDL_SIG_MAX_PARAMS + 4];
    uint64_t addrs[FDL_SIG_MAX_PARAMS + 4];
    int vec = 0;
    int rc = prepare_launch(l, n, args, nargs, kargs, addrs, &vec, err);
    if (rc != FDL_OK)
        return rc;
    unsigned long long count = n;
    uint64_t fail = fdl_buffer_address(l->scratch);
    size_t na = nargs;
    kargs[na++] = FDL_ARG(count);
    if (map->is_map)
        kargs[na++] = FDL_ARG(vec);
    kargs[na++] = FDL_ARG(fail);
    /*
     * One vector (or element) a thread, in as many blocks as that takes, up to 2^20 blocks
     * (past 2^28 accesses the grid-stride loop takes over): each thread's loads are in flight at
     * once, as in a hand-written kernel, with no loop-carried order between its store and the
     * next loads (the output may alias an input, so nothing may be reordered across them).
     */
    size_t work = vec ? n / l->k.vec + n % l->k.vec : n;
    size_t blocks = work / FDL_GEN_BLOCK + (work % FDL_GEN_BLOCK != 0);
    if (blocks > MAP_MAX_BLOCKS)
        blocks = MAP_MAX_BLOCKS;
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.grid.x = blocks ? (unsigned)blocks : 1u;
    cfg.block.x = FDL_GEN_BLOCK;
    cfg.stream = stream;
    return fdl_kernel_launch_ex(l->kernel, &cfg, kargs, na, err);
}

int fdl_map_launch(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs,
                   fdl_error *err)
{
    return map_launch(map, n, args, nargs, NULL, "fdl_map_launch", err);
}

int fdl_map_launch_async(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs,
                         fdl_stream *stream, fdl_error *err)
{
    return map_launch(map, n, args, nargs, stream, "fdl_map_launch_async", err);
}

/*
 * Wait, clear the module's FDL_CALL record, and report the failure record of @l. With @p out,
 * also the @p size bytes at @p offset of the scratch buffer (a reduction's result), read in the
 * same copy as the record when they lie close after it: each synchronous cuMemcpyDtoH costs
 * microseconds, as much as the reduction of a few million elements. Nothing goes to @p out when
 * a failure is reported.
 */
static int check_fail_read(launchable *l, void *out, size_t offset, size_t size, fdl_error *err)
{
    if (!l->gen->dev)
        return fdl__error(err, FDL_ENODEVICE, NULL, 0, 0, l->k.kernel,
                          "%s was made without a device", l->label);
    /*
     * Wait for the whole context: launches on a non-blocking stream (fdl_map_launch_async with
     * another library's stream) are not ordered with the default stream's copies below.
     */
    fdl_device *dev = l->gen->dev;
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    fdl_module *mod = fdl_kernel_module(l->kernel);
    if (!mod->status) { /* else fdl_module_read_status waits for the context itself */
        CUresult r = dev->cu->ctx_synchronize();
        if (r != CUDA_SUCCESS)
            return fdl__device_error(err, dev, r, "cuCtxSynchronize");
    }
    fdl_device_status st;
    rc = fdl_module_read_status(mod, &st, err);
    if (rc != FDL_OK)
        return rc;
    fail_record rec;
    unsigned char raw[FDL__GEN_RED_PARTIALS];
    int one_copy = out && offset >= sizeof rec && offset <= sizeof raw &&
                   size <= sizeof raw - offset;
    if (one_copy) {
        if ((rc = fdl_buffer_read(l->scratch, 0, raw, offset + size, err)) != FDL_OK)
            return rc;
        memcpy(&rec, raw, sizeof rec);
    } else if ((rc = fdl_buffer_read(l->scratch, 0, &rec, sizeof rec, err)) != FDL_OK) {
        return rc;
    }
    if (!rec.failures) {
        if (one_copy)
            memcpy(out, raw + offset, size);
        else if (out)
            rc = fdl_buffer_read(l->scratch, offset, out, size, err);
        return rc;
    }
    if ((rc = fdl_buffer_write(l->scratch, 0, &fail_clear, sizeof fail_clear, err)) != FDL_OK)
        return rc;
    rec.function[sizeof rec.function - 1] = '\0';
    char count[64] = "";
    if (rec.failures > 1)
        snprintf(count, sizeof count, " (first of %llu failures)",
                 (unsigned long long)rec.failures);
    fdl__error(err, FDL_EDEVICE, NULL, 0, 0, rec.function,
               "device function %s returned status %d at index %llu in %s%s",
               rec.function[0] ? rec.function : "(unnamed)", (int)rec.status,
               (unsigned long long)rec.index, l->label, count);
    if (err)
        err->backend_code = rec.status;
    fdl__error_index(err, (unsigned long long)rec.index);
    fdl__error_count(err, rec.failures);
    return FDL_EDEVICE;
}

static int check_fail(launchable *l, fdl_error *err)
{
    return check_fail_read(l, NULL, 0, 0, err);
}

int fdl_map_check(fdl_map *map, fdl_error *err)
{
    if (!FDL__CHECK_ARG(map != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_map_check: map is NULL");
    return check_fail(&map->l, err);
}

int fdl_map_run(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs, fdl_error *err)
{
    int rc = fdl_map_launch(map, n, args, nargs, err);
    return rc != FDL_OK ? rc : fdl_map_check(map, err);
}

/* ---- reductions ---------------------------------------------------------------------------- */

/* Blocks per SM of a reduction: also the most partials the scratch buffer holds per SM. */
#define RED_BLOCKS_PER_SM 8

int fdl_reduction_create(fdl_reduction **out, fdl_gen *gen, const fdl_reduction_spec *spec,
                         fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_reduction_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(gen && spec))
        return fdl__fail(err, FDL_EINVAL, "fdl_reduction_create: gen or spec is NULL");
    if (spec->version != FDL_REDUCTION_SPEC_VERSION)
        return fdl__fail(err, FDL_EINVAL, "unsupported fdl_reduction_spec version %u "
                         "(expected %u)", spec->version, (unsigned)FDL_REDUCTION_SPEC_VERSION);
    fdl_reduction *r = calloc(1, sizeof *r);
    if (!r)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    r->l.gen = gen;
    char q[48];
    snprintf(r->l.label, sizeof r->l.label, "reduction '%s of %s'",
             spec->reduce ? (strlen(spec->reduce) < 16 ? spec->reduce : "reduce") : "?",
             spec->map ? fdl__quote(q, sizeof q, spec->map, strlen(spec->map), 40) : "?");
    int rc = fdl__gen_reduction_source(&r->l.k, spec, err);
    size_t blocks = (size_t)(gen->sm_count > 0 ? gen->sm_count : 1) * RED_BLOCKS_PER_SM;
    r->max_blocks = (unsigned)blocks;
    if (rc == FDL_OK)
        rc = make_ready(&r->l, FDL__GEN_RED_PARTIALS + blocks * fdl_type_size(r->l.k.result),
                        err);
    if (rc != FDL_OK) {
        fdl_reduction_destroy(r);
        return rc;
    }
    *out = r;
    return FDL_OK;
}

void fdl_reduction_destroy(fdl_reduction *red)
{
    if (!red)
        return;
    launchable_free(&red->l);
    free(red);
}

const char *fdl_reduction_source(const fdl_reduction *red)
{
    return red && red->l.k.source.data ? red->l.k.source.data : "";
}

size_t fdl_reduction_result_size(const fdl_reduction *red)
{
    return red ? fdl_type_size(red->l.k.result) : 0;
}

static int reduction_launch(fdl_reduction *red, size_t n, const fdl_gen_arg *args,
                            size_t nargs, fdl_stream *stream, const char *what, fdl_error *err)
{
    if (!FDL__CHECK_ARG(red != NULL))
        return fdl__fail(err, FDL_EINVAL, "%s: red is NULL", what);
    launchable *l = &red->l;
    fdl_arg kargs[FDL_SIG_MAX_PARAMS + 4];
    uint64_t addrs[FDL_SIG_MAX_PARAMS + 4];
    int vec = 0;
    int rc = prepare_launch(l, n, args, nargs, kargs, addrs, &vec, err);
    if (rc != FDL_OK)
        return rc;
    unsigned long long count = n;
    uint64_t scratch = fdl_buffer_address(l->scratch);
    size_t na = nargs;
    kargs[na++] = FDL_ARG(count);
    kargs[na++] = FDL_ARG(vec);
    kargs[na++] = FDL_ARG(scratch);
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    /* four elements a thread at least before another block is worth it */
    cfg.grid.x = blocks_for(l, n / 4 + 1, RED_BLOCKS_PER_SM);
    if (cfg.grid.x > red->max_blocks)
        cfg.grid.x = red->max_blocks;
    cfg.block.x = FDL_GEN_BLOCK;
    cfg.stream = stream;
    rc = fdl_kernel_launch_ex(l->kernel, &cfg, kargs, na, err);
    if (rc == FDL_OK)
        red->launched = 1;
    return rc;
}

int fdl_reduction_launch(fdl_reduction *red, size_t n, const fdl_gen_arg *args, size_t nargs,
                         fdl_error *err)
{
    return reduction_launch(red, n, args, nargs, NULL, "fdl_reduction_launch", err);
}

int fdl_reduction_launch_async(fdl_reduction *red, size_t n, const fdl_gen_arg *args,
                               size_t nargs, fdl_stream *stream, fdl_error *err)
{
    return reduction_launch(red, n, args, nargs, stream, "fdl_reduction_launch_async", err);
}

/* The checks of a result's request: size, a device, a launch. */
static int result_ready(const fdl_reduction *red, size_t size, fdl_error *err)
{
    size_t want = fdl_type_size(red->l.k.result);
    if (size != want)
        return fdl__fail(err, FDL_EINVAL, "%s: the result has %zu bytes, but %zu were given",
                         red->l.label, want, size);
    if (!red->l.gen->dev)
        return fdl__error(err, FDL_ENODEVICE, NULL, 0, 0, red->l.k.kernel,
                          "%s was made without a device", red->l.label);
    if (!red->launched)
        return fdl__fail(err, FDL_EINVAL, "%s was never launched", red->l.label);
    return FDL_OK;
}

int fdl_reduction_result_async(fdl_reduction *red, uint64_t address, size_t size,
                               fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(red != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_reduction_result_async: red is NULL");
    int rc = result_ready(red, size, err);
    if (rc != FDL_OK)
        return rc;
    if (!address)
        return fdl__fail(err, FDL_EINVAL, "%s: the result's device address is NULL",
                         red->l.label);
    return fdl__copy_async(red->l.gen->dev, address,
                           fdl_buffer_address(red->l.scratch) + FDL__GEN_RED_RESULT, size, stream,
                           "fdl_reduction_result_async", err);
}

int fdl_reduction_check(fdl_reduction *red, fdl_error *err)
{
    if (!FDL__CHECK_ARG(red != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_reduction_check: red is NULL");
    return check_fail(&red->l, err);
}

int fdl_reduction_result(fdl_reduction *red, void *out, size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(red && out))
        return fdl__fail(err, FDL_EINVAL, "fdl_reduction_result: red or out is NULL");
    int rc = result_ready(red, size, err);
    if (rc != FDL_OK)
        return rc;
    return check_fail_read(&red->l, out, FDL__GEN_RED_RESULT, size, err);
}

int fdl_reduction_run(fdl_reduction *red, void *out, size_t size, size_t n,
                      const fdl_gen_arg *args, size_t nargs, fdl_error *err)
{
    int rc = fdl_reduction_launch(red, n, args, nargs, err);
    return rc != FDL_OK ? rc : fdl_reduction_result(red, out, size, err);
}
