/*
 * fdlink run: load (or link, then load) device code, launch one kernel with arguments given on
 * the command line, write buffers back, verify them and time the launches. For poking at device
 * code without writing a program, and for ctest tests of vendor code. With --map, the kernel is
 * generated (fdlink/gen.h): a declared function applied elementwise, no caller kernel written.
 *
 * Exit codes: 0 ran (and every --expect verified), 1 failure or mismatch, 2 usage (including
 * arguments that disagree with the kernel's parameters or with their files), 77 no GPU here.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

#define RUN_EXIT_SKIP 77
#define MAX_STRUCT_BYTES 256
#define MAX_BUFFER_BYTES ((size_t)1 << 40)

/* An element or scalar type as spelled on the command line. */
typedef struct elem_type {
    const char *name;
    fdl_scalar scalar;
    size_t size;
    char kind; /* 'i' signed, 'u' unsigned, 'f' float */
} elem_type;

static const elem_type types[] = {
    {"i8", FDL_INT8, 1, 'i'},     {"i16", FDL_INT16, 2, 'i'},   {"i32", FDL_INT32, 4, 'i'},
    {"i64", FDL_INT64, 8, 'i'},   {"u8", FDL_UINT8, 1, 'u'},    {"u16", FDL_UINT16, 2, 'u'},
    {"u32", FDL_UINT32, 4, 'u'},  {"u64", FDL_UINT64, 8, 'u'},  {"f32", FDL_FLOAT32, 4, 'f'},
    {"f64", FDL_FLOAT64, 8, 'f'},  {"f16", FDL_FLOAT16, 2, 'f'},
};
#define NTYPES (sizeof types / sizeof types[0])
#define TYPE_NAMES "i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64"

typedef enum fill_kind { FILL_ZEROS, FILL_CONST, FILL_IOTA, FILL_RAND, FILL_FILE } fill_kind;

/* One kernel argument. */
typedef struct karg {
    const char *text;          /* as given */
    int is_buffer;
    const elem_type *type;     /* buffers: the element type */
    unsigned char value[MAX_STRUCT_BYTES]; /* scalars and structs: the bytes passed */
    size_t size;               /* bytes passed to the kernel */
    size_t count;              /* buffers: elements */
    fill_kind fill;
    unsigned char constant[8]; /* FILL_CONST: one element */
    unsigned long long seed;   /* FILL_RAND */
    const char *path;          /* FILL_FILE */
    const char *symbol;        /* sym:NAME: the module global's value, read after the load */
    fdl_buffer *buf;
    uint64_t address;
} karg;

/* --out and --expect. */
typedef struct io_spec {
    size_t arg;
    const char *path;
    char *data; /* --expect: the file's bytes */
    size_t size;
} io_spec;

static const elem_type *find_type(const char *s, size_t n)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (strlen(types[i].name) == n && strncmp(types[i].name, s, n) == 0)
            return &types[i];
    return NULL;
}

/* @d as an element of float type @t into @out; 0 when it overflows to infinity. */
static int store_float(const elem_type *t, double d, unsigned char *out)
{
    if (t->size == 2) {
        uint16_t h = fdl__half_from_double(d);
        memcpy(out, &h, 2);
        return (h & 0x7fffu) != 0x7c00u || isinf(d);
    }
    if (t->size == 4) {
        float f = (float)d;
        memcpy(out, &f, 4);
        return !isinf(f) || isinf(d);
    }
    memcpy(out, &d, 8);
    return 1;
}

/* One value of @t from @s into @out (t->size bytes); 0 when @s is not one. */
static int parse_value(const elem_type *t, const char *s, unsigned char *out)
{
    char *end = NULL;
    errno = 0;
    if (!s[0])
        return 0;
    if (t->kind == 'f') {
        double d = strtod(s, &end);
        if (*end || errno == ERANGE)
            return 0;
        return store_float(t, d, out);
    }
    unsigned bits = (unsigned)t->size * 8;
    if (t->kind == 'i') {
        long long v = strtoll(s, &end, 0);
        if (*end || errno == ERANGE)
            return 0;
        if (bits < 64) {
            long long lim = 1LL << (bits - 1);
            if (v < -lim || v >= lim)
                return 0;
        }
        int8_t v8 = (int8_t)v;
        int16_t v16 = (int16_t)v;
        int32_t v32 = (int32_t)v;
        int64_t v64 = (int64_t)v;
        memcpy(out, bits == 8 ? (void *)&v8 : bits == 16 ? (void *)&v16 : bits == 32 ? (void *)&v32
                                                                                     : (void *)&v64,
               t->size);
        return 1;
    }
    if (s[0] == '-')
        return 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end || errno == ERANGE || (bits < 64 && v >> bits))
        return 0;
    uint8_t v8 = (uint8_t)v;
    uint16_t v16 = (uint16_t)v;
    uint32_t v32 = (uint32_t)v;
    uint64_t v64 = (uint64_t)v;
    memcpy(out, bits == 8 ? (void *)&v8 : bits == 16 ? (void *)&v16 : bits == 32 ? (void *)&v32
                                                                                 : (void *)&v64,
           t->size);
    return 1;
}

/* Print a usage error about argument @index and return EXIT_USAGE. */
static int arg_error(size_t index, const char *text, const char *why)
{
    cli_eprintf("fdlink: error: argument %zu '%s': %s (see 'fdlink run --help')\n", index,
            text, why);
    return EXIT_USAGE;
}

/* TYPE:VALUE at @s (up to @n bytes) into @out; returns the type, or NULL after printing. */
static const elem_type *parse_scalar(size_t index, const char *text, const char *s, size_t n,
                                     unsigned char *out)
{
    const char *colon = memchr(s, ':', n);
    char msg[160], value[128];
    if (!colon) {
        arg_error(index, text, "expected TYPE:VALUE, TYPE[N] or {TYPE:VALUE,...}");
        return NULL;
    }
    const elem_type *t = find_type(s, (size_t)(colon - s));
    if (!t) {
        snprintf(msg, sizeof msg, "unknown type '%.*s' (expected %s)", (int)(colon - s), s,
                 TYPE_NAMES);
        arg_error(index, text, msg);
        return NULL;
    }
    size_t vn = n - (size_t)(colon - s) - 1;
    if (vn >= sizeof value) {
        arg_error(index, text, "value too long");
        return NULL;
    }
    memcpy(value, colon + 1, vn);
    value[vn] = '\0';
    if (!parse_value(t, value, out)) {
        snprintf(msg, sizeof msg, "'%s' is not a%s %s value", value, t->kind == 'u' ? "" : "n",
                 t->name);
        arg_error(index, text, msg);
        return NULL;
    }
    return t;
}

/* {TYPE:VALUE,...}: fields at their natural alignment, the size a multiple of the largest. */
static int parse_struct(karg *a, size_t index)
{
    const char *s = a->text + 1;
    size_t len = strlen(s);
    if (len == 0 || s[len - 1] != '}')
        return arg_error(index, a->text, "a struct ends with '}'");
    len--;
    size_t off = 0, align = 1;
    while (len > 0) {
        const char *comma = memchr(s, ',', len);
        size_t n = comma ? (size_t)(comma - s) : len;
        unsigned char v[8];
        const elem_type *t = parse_scalar(index, a->text, s, n, v);
        if (!t)
            return EXIT_USAGE;
        off = (off + t->size - 1) / t->size * t->size;
        if (off + t->size > MAX_STRUCT_BYTES)
            return arg_error(index, a->text, "struct larger than 256 bytes");
        memcpy(a->value + off, v, t->size);
        off += t->size;
        if (t->size > align)
            align = t->size;
        if (!comma)
            break;
        s = comma + 1;
        len -= n + 1;
        if (len == 0)
            return arg_error(index, a->text, "empty field after ','");
    }
    if (off == 0)
        return arg_error(index, a->text, "empty struct");
    a->size = (off + align - 1) / align * align;
    return 0;
}

/* TYPE[N], TYPE[N]=FILL, TYPE[N]@FILE. */
static int parse_buffer(karg *a, size_t index, const char *bracket)
{
    char msg[160];
    a->is_buffer = 1;
    a->type = find_type(a->text, (size_t)(bracket - a->text));
    if (!a->type) {
        snprintf(msg, sizeof msg, "unknown type '%.*s' (expected %s)",
                 (int)(bracket - a->text), a->text, TYPE_NAMES);
        return arg_error(index, a->text, msg);
    }
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(bracket + 1, &end, 10);
    if (end == bracket + 1 || *end != ']' || errno == ERANGE || n == 0 || bracket[1] == '-')
        return arg_error(index, a->text, "expected a length of at least 1: TYPE[N]");
    if (n > MAX_BUFFER_BYTES / a->type->size)
        return arg_error(index, a->text, "buffer larger than 1 TiB");
    a->count = (size_t)n;
    a->size = sizeof(uint64_t);
    const char *rest = end + 1;
    if (!rest[0])
        return 0;
    if (rest[0] == '@') {
        if (!rest[1])
            return arg_error(index, a->text, "expected a file after '@'");
        a->fill = FILL_FILE;
        a->path = rest + 1;
        return 0;
    }
    if (rest[0] != '=')
        return arg_error(index, a->text, "expected =FILL or @FILE after TYPE[N]");
    const char *f = rest + 1;
    if (strcmp(f, "zeros") == 0) {
        a->fill = FILL_ZEROS;
    } else if (strcmp(f, "iota") == 0) {
        a->fill = FILL_IOTA;
    } else if (strcmp(f, "rand") == 0 || strncmp(f, "rand:", 5) == 0) {
        a->fill = FILL_RAND;
        a->seed = 1;
        if (f[4] == ':') {
            errno = 0;
            a->seed = strtoull(f + 5, &end, 0);
            if (!f[5] || *end || errno == ERANGE || f[5] == '-')
                return arg_error(index, a->text, "expected a seed: =rand:SEED");
        }
    } else if (parse_value(a->type, f, a->constant)) {
        a->fill = FILL_CONST;
    } else {
        snprintf(msg, sizeof msg,
                 "'%s' is not a%s %s value, zeros, iota, rand or rand:SEED", f,
                 a->type->kind == 'u' ? "" : "n", a->type->name);
        return arg_error(index, a->text, msg);
    }
    return 0;
}

/* Non-zero when @s is spelled as a kernel argument: TYPE: TYPE[ or {. */
static int looks_like_arg(const char *s)
{
    if (s[0] == '{')
        return 1;
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
           (n > 0 && s[n] >= '0' && s[n] <= '9'))
        n++;
    return n > 0 && (s[n] == ':' || s[n] == '[');
}

static int parse_arg(karg *a, size_t index)
{
    if (strncmp(a->text, "sym:", 4) == 0) {
        /* sized by the kernel's parameter, read once the module is loaded */
        const char *n = a->text + 4;
        int ok = (isalpha((unsigned char)n[0]) || n[0] == '_') && strlen(n) < 1024;
        for (const char *c = n; ok && *c; c++)
            ok = isalnum((unsigned char)*c) || *c == '_' || *c == '$' || *c == '.';
        if (!ok)
            return arg_error(index, a->text, "sym: needs the name of a global of the "
                                             "module, e.g. sym:fn_ptr");
        a->symbol = n;
        return 0;
    }
    if (a->text[0] == '{')
        return parse_struct(a, index);
    const char *bracket = strchr(a->text, '[');
    const char *colon = strchr(a->text, ':');
    if (bracket && (!colon || bracket < colon))
        return parse_buffer(a, index, bracket);
    a->type = parse_scalar(index, a->text, a->text, strlen(a->text), a->value);
    if (!a->type)
        return EXIT_USAGE;
    a->size = a->type->size;
    return 0;
}

/* X[,Y[,Z]] into @d; 0 when it is not that. */
static int parse_dim3(const char *s, fdl_dim3 *d)
{
    unsigned v[3] = {1, 1, 1};
    const char *p = s;
    for (int k = 0; k < 3; k++) {
        char *end = NULL;
        errno = 0;
        if (*p < '0' || *p > '9')
            return 0;
        unsigned long x = strtoul(p, &end, 10);
        if (errno == ERANGE || x == 0 || x > 0xffffffffUL)
            return 0; /* every dimension is at least 1 */
        v[k] = (unsigned)x;
        if (*end == '\0') {
            d->x = v[0];
            d->y = v[1];
            d->z = v[2];
            return 1;
        }
        if (*end != ',')
            return 0;
        p = end + 1;
    }
    return 0;
}

static int parse_size(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end = NULL;
    errno = 0;
    if (!s || *s < '0' || *s > '9')
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno == ERANGE || v > max)
        return 0;
    *out = v;
    return 1;
}

static int parse_double(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    if (!s || !s[0])
        return 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !(v >= 0))
        return 0;
    *out = v;
    return 1;
}

/* ARG=FILE into @io; 0 when it is not that. */
static int parse_io(const char *s, io_spec *io)
{
    const char *eq = s ? strchr(s, '=') : NULL;
    char *end = NULL;
    if (!eq || !eq[1] || *s < '0' || *s > '9')
        return 0;
    unsigned long n = strtoul(s, &end, 10);
    if (end != eq)
        return 0;
    io->arg = n;
    io->path = eq + 1;
    return 1;
}

/* splitmix64: the values of =rand:SEED are the same everywhere. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Element @i of a generated fill (iota or rand) into @out. */
static void generated(const karg *a, size_t i, uint64_t *state, unsigned char *out)
{
    const elem_type *t = a->type;
    uint64_t r = a->fill == FILL_RAND ? next_random(state) : 0;
    if (t->kind == 'f') {
        double d = a->fill == FILL_IOTA ? (double)i : (double)(r >> 11) / 9007199254740992.0;
        store_float(t, d, out); /* a large iota in f16 becomes infinity, as a conversion would */
        return;
    }
    uint64_t v = a->fill == FILL_IOTA ? (uint64_t)i : r % 100;
    /* little-endian hosts: the low bytes are the value (iota wraps in narrow types) */
    for (size_t b = 0; b < t->size; b++)
        out[b] = (unsigned char)(v >> (8 * b));
}

static int write_buffer(karg *a, const char *file_data, fdl_error *err)
{
    size_t bytes = a->count * a->type->size;
    if (a->fill == FILL_ZEROS)
        return fdl_buffer_zero(a->buf, err);
    if (a->fill == FILL_FILE)
        return fdl_buffer_write(a->buf, 0, file_data, bytes, err);
    unsigned char *host = malloc(bytes);
    if (!host)
        return fdl__fail(err, FDL_ENOMEM, "out of memory for argument '%s'", a->text);
    uint64_t state = a->seed;
    for (size_t i = 0; i < a->count; i++) {
        unsigned char *p = host + i * a->type->size;
        if (a->fill == FILL_CONST)
            memcpy(p, a->constant, a->type->size);
        else
            generated(a, i, &state, p);
    }
    int rc = fdl_buffer_write(a->buf, 0, host, bytes, err);
    free(host);
    return rc;
}

static int cmp_float(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

/*
 * The arguments against the kernel's parameters as the PTX of the inputs declares them (a PTX
 * file, or the PTX in a fatbin or object), else as a cubin's .nv.info does (a cubin, or one in a
 * fatbin), before any GPU is needed. Returns 0 when they agree or
 * no input declares the kernel, else EXIT_USAGE after printing where the kernel is declared.
 */
static int check_params_in_images(const cli_link_args *la, const char *kernel, const karg *args,
                                  size_t nargs)
{
    int rc = 0, found = 0;
    size_t cubin_input = SIZE_MAX; /* an input with a cubin defining the kernel as a kernel */
    for (size_t i = 0; i < la->ninputs && !found; i++) {
        fdl_inspection *ins = NULL;
        fdl_error err = FDL_ERROR_INIT;
        if (la->kinds[i] == FDL_KIND_CUDA || la->kinds[i] == FDL_KIND_BITCODE ||
            fdl_inspect_file(&ins, la->inputs[i], la->kinds[i], &err) != FDL_OK)
            continue; /* the load or the link says what is wrong with it */
        size_t n = fdl_inspection_count(ins);
        for (size_t k = 0; k < n && !found; k++) {
            const fdl_image *img = fdl_inspection_image(ins, k);
            for (size_t y = 0; cubin_input == SIZE_MAX && img->kind == FDL_KIND_CUBIN &&
                               y < img->nsymbols; y++)
                if (img->symbols[y].kind == FDL_SYMBOL_KERNEL && img->symbols[y].defined &&
                    strcmp(img->symbols[y].name, kernel) == 0)
                    cubin_input = i;
            const fdl_ptx_func *f = img->ptx ? fdl_ptx_find(img->ptx, kernel) : NULL;
            if (!f || !f->is_entry || !f->is_definition)
                continue;
            found = 1;
            if (f->nparams != nargs) {
                cli_eprintf(
                        "fdlink: %s:%u:%u: error: kernel %s takes %zu parameter%s, but %zu "
                        "argument%s given (see 'fdlink run --help')\n",
                        img->name, f->line, f->column, kernel, f->nparams,
                        f->nparams == 1 ? "" : "s", nargs, nargs == 1 ? " was" : "s were");
                rc = EXIT_USAGE;
                break;
            }
            for (size_t p = 0; p < nargs; p++) {
                const fdl_ptx_param *q = &f->params[p];
                if (q->bytes == args[p].size || args[p].symbol)
                    continue; /* sym:NAME takes the parameter's size */
                cli_eprintf(
                        "fdlink: %s:%u:%u: error: argument %zu '%s' has %zu byte%s, but "
                        "parameter %zu of kernel %s takes %zu (see 'fdlink run --help')\n",
                        img->name, q->line, q->column, p, args[p].text, args[p].size,
                        args[p].size == 1 ? "" : "s", p, kernel, q->bytes);
                rc = EXIT_USAGE;
                break;
            }
        }
        fdl_inspection_destroy(ins);
    }
    /* a cubin's kernels say their parameters in .nv.info (EIATTR_KPARAM_INFO): count and size
     * of each, checked as the PTX's are (issue 34) */
    for (size_t i = cubin_input; i < la->ninputs && !found && !rc; i = la->ninputs) {
        char *data = NULL;
        size_t size = 0, count = 0;
        size_t *sizes = calloc(nargs + 1, sizeof *sizes); /* 0: the image does not say */
        fdl_input_kind kind = la->kinds[i];
        if (!sizes || kind == FDL_KIND_CUDA || kind == FDL_KIND_BITCODE ||
            fdl__read_file(la->inputs[i], &data, &size, NULL) != FDL_OK) {
            free(sizes);
            continue;
        }
        int got = !((kind == FDL_KIND_AUTO &&
                     fdl_input_detect(&kind, data, size, la->inputs[i], NULL) != FDL_OK) ||
                    (kind != FDL_KIND_CUBIN && kind != FDL_KIND_FATBIN) ||
                    fdl_image_kernel_params(data, size, kernel, &count, sizes, nargs + 1, NULL) !=
                        FDL_OK);
        free(data);
        found = got;
        if (got && count != nargs) {
            cli_eprintf("fdlink: %s: error: kernel %s takes %zu parameter%s (its .nv.info "
                        "says), but %zu argument%s given (see 'fdlink run --help')\n",
                        la->inputs[i], kernel, count, count == 1 ? "" : "s", nargs,
                        nargs == 1 ? " was" : "s were");
            rc = EXIT_USAGE;
        }
        for (size_t p = 0; got && !rc && p < nargs; p++) {
            if (sizes[p] == args[p].size || args[p].symbol || sizes[p] == 0)
                continue; /* sym:NAME takes the parameter's size */
            cli_eprintf("fdlink: %s: error: argument %zu '%s' has %zu byte%s, but parameter "
                        "%zu of kernel %s takes %zu (its .nv.info says; see 'fdlink run "
                        "--help')\n",
                        la->inputs[i], p, args[p].text, args[p].size,
                        args[p].size == 1 ? "" : "s", p, kernel, sizes[p]);
            rc = EXIT_USAGE;
        }
        free(sizes);
    }
    return rc;
}

/* A link is needed for several inputs, declarations, an -arch, or one input of a linkable kind. */
static int needs_link(const cli_link_args *la, int *rc)
{
    *rc = 0;
    if (la->ninputs != 1 || la->nsets || la->decl_paths.n || la->opts.arch)
        return 1;
    fdl_input_kind kind = la->kinds[0];
    if (kind == FDL_KIND_AUTO) {
        char *data = NULL;
        size_t size = 0;
        fdl_error err = FDL_ERROR_INIT;
        if (fdl__read_file(la->inputs[0], &data, &size, &err) != FDL_OK ||
            fdl_input_detect(&kind, data, size, la->inputs[0], &err) != FDL_OK) {
            free(data);
            cli_print_error(&err);
            *rc = 1;
            return 0;
        }
        free(data);
    }
    return !(kind == FDL_KIND_CUBIN || kind == FDL_KIND_FATBIN || kind == FDL_KIND_PTX);
}

/* What follows the launches, for kernels and maps alike: --out, --expect, --repeat, --time, -v. */
typedef struct run_opts {
    const io_spec *outs, *expects;
    size_t nouts, nexpects;
    fdl_verify_options vopts;
    unsigned long long repeat;
    int timed, verbose;
} run_opts;

/* Create and fill the buffers among @args on @dev; 0, or 1 after printing. */
static int make_buffers(fdl_device *dev, karg *args, size_t nargs, char **file_data)
{
    fdl_error err = FDL_ERROR_INIT;
    for (size_t k = 0; k < nargs; k++) {
        karg *a = &args[k];
        if (!a->is_buffer)
            continue;
        if (fdl_buffer_create(&a->buf, dev, a->count * a->type->size, &err) != FDL_OK ||
            write_buffer(a, file_data[k], &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        a->address = fdl_buffer_address(a->buf);
    }
    return 0;
}

/* `kernel NAME: 20 runs, median ...` on stdout; sorts @times. */
static void print_times(const char *what, const char *name, float *times,
                        unsigned long long repeat)
{
    qsort(times, (size_t)repeat, sizeof *times, cmp_float);
    double median = repeat % 2 ? times[repeat / 2]
                               : ((double)times[repeat / 2 - 1] + times[repeat / 2]) / 2;
    printf("%s %s: %llu run%s, median %.4f ms, min %.4f ms, max %.4f ms\n", what, name, repeat,
           repeat == 1 ? "" : "s", median, (double)times[0], (double)times[repeat - 1]);
}

/* --out files written and --expect files compared: 0, or 1 after a mismatch or an error. */
static int write_and_verify(const karg *args, const run_opts *ro)
{
    fdl_error err = FDL_ERROR_INIT;
    for (size_t k = 0; k < ro->nouts; k++) {
        const karg *a = &args[ro->outs[k].arg];
        size_t bytes = a->count * a->type->size;
        char *host = malloc(bytes);
        if (!host) {
            fprintf(stderr, "fdlink: error: out of memory\n");
            return 1;
        }
        int wrc = fdl_buffer_read(a->buf, 0, host, bytes, &err);
        if (wrc == FDL_OK)
            wrc = fdl__write_atomic(ro->outs[k].path, host, bytes, &err);
        free(host);
        if (wrc != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
    }
    int mismatched = 0;
    for (size_t k = 0; k < ro->nexpects; k++) {
        const io_spec *e = &ro->expects[k];
        const karg *a = &args[e->arg];
        fdl_verify_report report;
        int vrc = fdl_buffer_verify(&report, a->buf, 0, a->type->scalar, e->data, a->count,
                                    &ro->vopts, &err);
        if (vrc != FDL_OK && vrc != FDL_EVERIFY) {
            cli_print_error(&err);
            return 1;
        }
        char text[4096];
        fdl_verify_format(&report, text, sizeof text);
        if (vrc == FDL_EVERIFY) {
            mismatched = 1;
            fprintf(stderr, "fdlink: %s: error: argument %zu '%s': %s", e->path, e->arg, a->text,
                    text);
        } else {
            printf("argument %zu '%s': %s", e->arg, a->text, text);
        }
    }
    return mismatched;
}

/* ---- maps (--map FUNCTION) ---------------------------------------------------------------- */

/* How the command line spells a value of declared type @t (bool is u8; pointers are u64). */
static const char *spelling_of(fdl_type t)
{
    if (t.depth)
        return "u64";
    switch (t.base) {
    case FDL_BOOL: return "u8";
    case FDL_INT8: return "i8";
    case FDL_INT16: return "i16";
    case FDL_INT32: return "i32";
    case FDL_INT64: return "i64";
    case FDL_INTP: return "i64";
    case FDL_UINT8: return "u8";
    case FDL_UINT16: return "u16";
    case FDL_UINT32: return "u32";
    case FDL_UINT64: return "u64";
    case FDL_UINTP: return "u64";
    case FDL_FLOAT16: return "f16";
    case FDL_FLOAT32: return "f32";
    case FDL_FLOAT64: return "f64";
    default: return NULL;
    }
}

/* Non-zero when every value of u8 argument @a (a scalar, or a buffer as it will be filled from
 * @file_data) is 0 or 1, as a bool must be. */
static int bool_values_ok(const karg *a, const char *file_data)
{
    if (!a->is_buffer)
        return a->value[0] <= 1;
    switch (a->fill) {
    case FILL_ZEROS: return 1;
    case FILL_CONST: return a->constant[0] <= 1;
    case FILL_IOTA: return a->count <= 2;
    case FILL_RAND: return 0; /* integers in [0,100) */
    case FILL_FILE:
        for (size_t i = 0; i < a->count; i++)
            if ((unsigned char)file_data[i] > 1)
                return 0;
        return 1;
    }
    return 0;
}

/* A usage error about the map of @d, at its declaration. */
static int decl_usage_error(const fdl_decl *d, const char *msg)
{
    cli_eprintf("fdlink: %s:%u:%u: error: %s (see 'fdlink run --help')\n", d->source,
            d->line, d->column, msg);
    return EXIT_USAGE;
}

/*
 * The arguments of a map of @d against its declaration: argument 0 the result, argument k
 * parameter k (@file_data: the contents of buffers filled from files). Fills @modes ('a' an
 * array, 's' a scalar or a pointer passed through) and *n. Returns 0, or EXIT_USAGE after
 * printing.
 */
static int check_map_args(const fdl_decl *d, const karg *args, size_t nargs,
                          char *const *file_data, char *modes, size_t *n)
{
    const fdl_sig *sig = &d->sig;
    char msg[512], type[128];
    if (sig->ret.base == FDL_VOID && sig->ret.depth == 0) {
        snprintf(msg, sizeof msg,
                 "map over '%s': it returns void, so there is no result to map into argument 0",
                 d->name);
        return decl_usage_error(d, msg);
    }
    if (nargs != sig->nparams + 1) {
        snprintf(msg, sizeof msg,
                 "map '%s' takes %zu argument%s (the result, then %zu parameter%s), but %zu "
                 "%s given",
                 d->name, sig->nparams + 1, sig->nparams ? "s" : "", sig->nparams,
                 sig->nparams == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
        return decl_usage_error(d, msg);
    }
    const char *ret = spelling_of(sig->ret);
    fdl_type_format(sig->ret, type, sizeof type);
    if (!args[0].is_buffer || args[0].text[0] == '{' || strcmp(args[0].type->name, ret) != 0) {
        if (args[0].is_buffer)
            snprintf(msg, sizeof msg,
                     "map '%s': argument 0 '%s' is the result, a buffer of %s, but %s returns "
                     "%s: give %s[N]",
                     d->name, args[0].text, args[0].type->name, d->name, type, ret);
        else
            snprintf(msg, sizeof msg,
                     "map '%s': argument 0 '%s' is the result, which must be a buffer of the "
                     "return type %s: give %s[N]",
                     d->name, args[0].text, type, ret);
        return decl_usage_error(d, msg);
    }
    *n = args[0].count;
    for (size_t k = 1; k < nargs; k++) {
        const karg *a = &args[k];
        fdl_type t = sig->params[k - 1];
        fdl_type pointee = {t.base, t.depth ? t.depth - 1 : 0};
        const char *want = spelling_of(t);
        int is_struct = a->text[0] == '{';
        int ok;
        char give[160];
        fdl_type_format(t, type, sizeof type);
        if (t.depth) {
            /* CPointer(T): a buffer's address (of T; voidptr: of anything), or u64:ADDRESS */
            int any = pointee.base == FDL_VOID && pointee.depth == 0;
            ok = !is_struct &&
                 (a->is_buffer ? any || strcmp(a->type->name, spelling_of(pointee)) == 0
                               : strcmp(a->type->name, "u64") == 0);
            if (any)
                snprintf(give, sizeof give, "a buffer (passed as a pointer) or u64:ADDRESS");
            else
                snprintf(give, sizeof give, "%s[N] (passed as a pointer) or u64:ADDRESS",
                         spelling_of(pointee));
            modes[k - 1] = 's';
        } else {
            ok = !is_struct && strcmp(a->type->name, want) == 0;
            snprintf(give, sizeof give, "%s:VALUE or %s[N]", want, want);
            modes[k - 1] = a->is_buffer ? 'a' : 's';
        }
        if (!ok) {
            char is[64];
            if (is_struct)
                snprintf(is, sizeof is, "a struct");
            else if (a->is_buffer)
                snprintf(is, sizeof is, "a buffer of %s", a->type->name);
            else
                snprintf(is, sizeof is, "%s", a->type->name);
            snprintf(msg, sizeof msg,
                     "map '%s': argument %zu '%s' is %s, but parameter %zu is %s: give %s",
                     d->name, k, a->text, is, k, type, give);
            return decl_usage_error(d, msg);
        }
        if (t.depth == 0 && t.base == FDL_BOOL && !bool_values_ok(a, file_data[k])) {
            snprintf(msg, sizeof msg,
                     "map '%s': argument %zu '%s' %s, but parameter %zu is bool",
                     d->name, k, a->text, a->is_buffer ? "holds values other than 0 and 1" : "is neither 0 nor 1", k);
            return decl_usage_error(d, msg);
        }
        if (modes[k - 1] == 'a' && a->count < *n) {
            snprintf(msg, sizeof msg,
                     "map '%s': argument %zu '%s' (parameter %zu, %s) has %zu element%s, but n "
                     "is %zu (the length of the result, argument 0)",
                     d->name, k, a->text, k, type, a->count, a->count == 1 ? "" : "s", *n);
            return cli_usage_error("run", "%s", msg);
        }
    }
    modes[sig->nparams] = '\0';
    return 0;
}

/*
 * A generator on @dev (NULL: compile and link for la->opts.arch only) with the inputs of @la,
 * and the map of @name made from it. 0, or 1 after printing.
 */
static int make_map(fdl_gen **gen, fdl_map **map, fdl_device *dev, const cli_link_args *la,
                    const char *name, const char *modes)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_gen_options go = FDL_GEN_OPTIONS_INIT;
    go.arch = la->opts.arch;
    go.decls = la->decls[0];
    go.link = &la->opts;
    if (fdl_gen_create(gen, dev, &go, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    for (size_t i = 0; i < la->ninputs; i++) {
        char *data = NULL;
        size_t size = 0;
        int rc = fdl__read_file(la->inputs[i], &data, &size, &err);
        if (rc == FDL_OK)
            rc = fdl_gen_add_data(*gen, data, size, la->inputs[i], la->kinds[i], &err);
        free(data);
        if (rc != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
    }
    if (fdl_map_create(map, *gen, name, modes, &err) != FDL_OK) {
        cli_print_error(&err);
        /* NVRTC's or nvJitLink's log: what it adds to the headline (all of it with -v) */
        cli_print_log_rest(err.log, &err, la->opts.verbose || la->whole_logs);
        return 1;
    }
    return 0;
}

/*
 * fdlink run --map NAME: check the arguments against the declaration, generate, compile and link
 * the map, fill the buffers, run it (--repeat times), report the lowest failing index, write
 * and verify the results. Returns the exit status.
 */
static int run_map(cli_link_args *la, const char *name, karg *args, size_t nargs,
                   char **file_data, const run_opts *ro)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_device *dev = NULL;
    fdl_gen *gen = NULL;
    fdl_map *map = NULL;
    fdl_event *start = NULL, *stop = NULL;
    float *times = NULL;
    char modes[FDL_SIG_MAX_PARAMS + 1];
    fdl_gen_arg gargs[FDL_SIG_MAX_PARAMS + 1];
    size_t n = 0;
    int rc = EXIT_USAGE;

    /* ---- the declaration, and the arguments against it, before any GPU is needed ---- */
    if (la->decl_paths.n != 1) {
        rc = cli_usage_error("run",
                             la->decl_paths.n
                                 ? "--map takes one --decl file, the one that declares '%s'"
                                 : "--map needs the declaration of '%s': --decl FILE",
                             name);
        goto cleanup;
    }
    if (la->ptx_path || la->kernels.n) {
        rc = cli_usage_error("run", "%s does not apply to --map (the map's kernel is generated)",
                             la->ptx_path ? "--emit-ptx" : "--kernels-used");
        goto cleanup;
    }
    la->decls = calloc(1, sizeof *la->decls);
    if (!la->decls) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        rc = 1;
        goto cleanup;
    }
    if (fdl_decls_load(&la->decls[0], la->decl_paths.v[0], &err) != FDL_OK) {
        cli_print_error(&err);
        rc = 1;
        goto cleanup;
    }
    la->nsets = 1;
    const fdl_decl *d = fdl_decls_find(la->decls[0], name);
    if (!d) {
        char msg[FDL_DECL_MAX_NAME + 1024];
        snprintf(msg, sizeof msg, "map over '%s': no such function is declared in %s", name,
                 la->decl_paths.v[0]);
        rc = cli_usage_error("run", "%s", msg);
        goto cleanup;
    }
    if ((rc = check_map_args(d, args, nargs, file_data, modes, &n)) != 0)
        goto cleanup;
    if ((rc = cli_link_check_options(la)) != 0)
        goto cleanup;
    rc = 1;

    /* ---- the device, and the map ---- */
    if (fdl_device_open(&dev, la->device, &err) != FDL_OK) {
        if (!cli_no_gpu_here(&err)) {
            cli_print_device_error(la, &err);
            goto cleanup;
        }
        /* for a stated architecture, everything short of the launch is checked first */
        fdl_error nogpu = err;
        if (la->opts.arch && !cli_link_needs_device(la) &&
            make_map(&gen, &map, NULL, la, name, modes) != 0)
            goto cleanup;
        fprintf(stderr, "fdlink: skipped: map '%s' not run: no GPU here (%s)\n", name,
                nogpu.message);
        rc = RUN_EXIT_SKIP;
        goto cleanup;
    }
    if (make_map(&gen, &map, dev, la, name, modes) != 0)
        goto cleanup;
    if (ro->verbose) {
        size_t cubin = 0;
        fdl_map_cubin(map, &cubin);
        fprintf(stderr,
                "fdlink: device %d: %s (%s); map '%s' (modes %s): kernel %s, compiled with "
                "NVRTC and linked with %zu input%s (cubin of %zu bytes); n = %zu, %u element%s "
                "per vector access, %d threads per block\n",
                fdl_device_ordinal(dev), fdl_device_name(dev), fdl_device_arch(dev), name, modes,
                fdl_map_kernel_name(map), la->ninputs, la->ninputs == 1 ? "" : "s", cubin, n,
                fdl_map_vector_width(map), fdl_map_vector_width(map) == 1 ? "" : "s",
                FDL_GEN_BLOCK);
        const char *src = fdl_map_source(map);
        size_t len = strlen(src);
        fprintf(stderr, "fdlink: the generated CUDA C of map '%s':\n%s%s", name, src,
                len && src[len - 1] == '\n' ? "" : "\n");
    }

    /* ---- buffers, and the map's arguments ---- */
    if (make_buffers(dev, args, nargs, file_data) != 0)
        goto cleanup;
    gargs[0] = fdl_gen_buffer(args[0].buf);
    for (size_t k = 1; k < nargs; k++) {
        karg *a = &args[k];
        if (modes[k - 1] == 'a')
            gargs[k] = fdl_gen_buffer(a->buf);
        else if (a->is_buffer) /* a pointer parameter: the buffer's address */
            gargs[k] = fdl_gen_scalar(&a->address, sizeof a->address);
        else
            gargs[k] = fdl_gen_scalar(a->value, a->size);
    }

    /* ---- the runs ---- */
    if (ro->repeat == 1 && !ro->timed) {
        if (fdl_map_run(map, n, gargs, nargs, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    } else {
        times = calloc((size_t)ro->repeat, sizeof *times);
        if (!times) {
            fprintf(stderr, "fdlink: error: out of memory\n");
            goto cleanup;
        }
        if (fdl_event_create(&start, dev, &err) != FDL_OK ||
            fdl_event_create(&stop, dev, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
        for (size_t r = 0; r < ro->repeat; r++) {
            if (fdl_event_record(start, NULL, &err) != FDL_OK ||
                fdl_map_launch(map, n, gargs, nargs, &err) != FDL_OK ||
                fdl_event_record(stop, NULL, &err) != FDL_OK ||
                fdl_event_elapsed_ms(&times[r], start, stop, &err) != FDL_OK) {
                cli_print_error(&err);
                goto cleanup;
            }
        }
        /* the lowest failing index of all the runs */
        if (fdl_map_check(map, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    }
    if (ro->timed)
        print_times("map", name, times, ro->repeat);
    rc = write_and_verify(args, ro);
cleanup:
    fdl_event_destroy(start);
    fdl_event_destroy(stop);
    for (size_t k = 0; k < nargs; k++) {
        fdl_buffer_destroy(args[k].buf);
        args[k].buf = NULL;
    }
    fdl_map_destroy(map);
    fdl_gen_destroy(gen);
    fdl_device_destroy(dev);
    free(times);
    return rc;
}

/* ---- the command line: `fdlink run`'s options, one row each, and the link options ---- */

/* What `fdlink run` was asked, and what it holds while it runs. */
typedef struct run_cmd {
    cli_link_args la;
    const char *kernel_name, *map_name;
    const char *geometry; /* the option that set the grid, the block or the shared memory */
    fdl_launch_config cfg;
    int coop;             /* --cooperative, --no-cooperative: launch flags */
    int have_tol, have_ulp;
    run_opts ro;          /* the verification, repeat, timed, verbose; the outs and expects */
    karg *args;
    io_spec *outs, *expects;
    char **file_data;     /* TYPE[N]@FILE: the file's bytes, by argument */
    size_t nargs, nouts, nexpects, slots;
    fdl_device *dev;
    fdl_module *mod;
    fdl_link *link;
    fdl_kernel *kernel;
    fdl_kernel_attrs attrs;
    fdl_launch *launch;
    fdl_event *start, *stop;
    fdl_arg *kargs;
    float *times;
} run_cmd;

#define RC(field) offsetof(run_cmd, field)

static int take_dim3(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    run_cmd *c = t;
    (void)arg;
    c->geometry = o->name;
    if (!v || !parse_dim3(v, (fdl_dim3 *)((char *)t + o->at)))
        return cli_usage_error(cmd, "%s", o->bad);
    return 0;
}

static int take_shared(void *t, const cli_opt *o, const char *cmd, const char *arg,
                       const char *v)
{
    run_cmd *c = t;
    unsigned long long n;
    (void)arg;
    c->geometry = o->name;
    if (!parse_size(v, 0xffffffffULL, &n))
        return cli_usage_error(cmd, "%s", o->bad);
    c->cfg.shared_bytes = (size_t)n;
    return 0;
}

static int take_repeat(void *t, const cli_opt *o, const char *cmd, const char *arg,
                       const char *v)
{
    (void)arg;
    if (!parse_size(v, 1000000, &((run_cmd *)t)->ro.repeat) || ((run_cmd *)t)->ro.repeat == 0)
        return cli_usage_error(cmd, "%s", o->bad);
    return 0;
}

/* --out and --expect: ARG=FILE, appended to the row's list */
static int take_io(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    run_cmd *c = t;
    int out = strcmp(o->name, "--out") == 0;
    (void)arg;
    if (!parse_io(v, out ? &c->outs[c->nouts] : &c->expects[c->nexpects]))
        return cli_usage_error(cmd, "%s", o->bad);
    ++*(out ? &c->nouts : &c->nexpects);
    return 0;
}

/* --rtol, --atol: a tolerance into the double at the row's offset */
static int take_tol(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    (void)arg;
    if (!parse_double(v, (double *)((char *)t + o->at)))
        return cli_usage_error(cmd, "%s", o->bad);
    ((run_cmd *)t)->have_tol = 1;
    return 0;
}

static int take_ulp(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    run_cmd *c = t;
    unsigned long long u;
    (void)arg;
    if (!parse_size(v, UINT64_MAX, &u))
        return cli_usage_error(cmd, "%s", o->bad);
    c->ro.vopts.max_ulp = u;
    c->have_ulp = 1;
    return 0;
}

static const cli_opt run_cmd_opts[] = {
    {.arg = CLI_TABLE, .table = cli_diag_table, .at = RC(la.diag)}, /* no help lines */
    {.arg = CLI_STRING, .name = "-k", .alias = "--kernel", .form = CLI_NONEMPTY,
     .at = RC(kernel_name), .bad = "option '%s' needs a kernel name", .usage = "-k, --kernel NAME",
     .help = "the kernel to launch"},
    {.arg = CLI_STRING, .name = "--map", .form = CLI_NONEMPTY, .at = RC(map_name),
     .bad = "option '%s' needs a declared function's name", .usage = "--map FUNCTION",
     .help = "instead of a kernel: map a declared function (one --decl)"},
    {.arg = CLI_CUSTOM, .name = "--grid", .at = RC(cfg.grid), .parse = take_dim3,
     .bad = "option --grid needs X[,Y,Z] of at least 1, e.g. --grid 64,2",
     .usage = "--grid X[,Y,Z]", .help = "blocks (default 1)"},
    {.arg = CLI_CUSTOM, .name = "--block", .at = RC(cfg.block), .parse = take_dim3,
     .bad = "option --block needs X[,Y,Z] of at least 1, e.g. --block 256",
     .usage = "--block X[,Y,Z]", .help = "threads per block (default 1)"},
    {.arg = CLI_CUSTOM, .name = "--shared", .parse = take_shared,
     .bad = "option --shared needs a size in bytes", .usage = "--shared BYTES",
     .help = "dynamic shared memory per block (default 0)"},
    {.arg = CLI_FLAG, .name = "--cooperative", .at = RC(coop), .set = FDL_LAUNCH_COOPERATIVE,
     .usage = "--cooperative",
     .help = "a cooperative launch (grid sync): a grid larger than fits on the GPU at once is "
             "refused, saying the largest that fits; automatic, when the grid fits, for a "
             "kernel whose cubin lists cooperative-groups instructions (--no-cooperative: "
             "never)"},
    {.arg = CLI_FLAG, .name = "--no-cooperative", .at = RC(coop),
     .set = FDL_LAUNCH_NOT_COOPERATIVE},
    {.arg = CLI_DOC, .usage = "--device N", .help = "the GPU (default: FDLINK_DEVICE, else 0)"},
    {.arg = CLI_CUSTOM, .name = "--out", .parse = take_io,
     .bad = "option --out needs ARG=FILE, e.g. --out 0=y.bin", .usage = "--out ARG=FILE",
     .help = "write buffer ARG to FILE after the runs (repeatable)"},
    {.arg = CLI_CUSTOM, .name = "--expect", .parse = take_io,
     .bad = "option --expect needs ARG=FILE, e.g. --expect 0=ref.bin",
     .usage = "--expect ARG=FILE",
     .help = "compare buffer ARG with the values in FILE (repeatable): exact by default, else "
             "within --rtol/--atol or --ulp"},
    {.arg = CLI_CUSTOM, .name = "--rtol", .at = RC(ro.vopts.rel_tol), .parse = take_tol,
     .bad = "option --rtol needs a tolerance of at least 0", .usage = "--rtol X, --atol X",
     .help = "|got - expected| <= atol + rtol |expected|"},
    {.arg = CLI_CUSTOM, .name = "--atol", .at = RC(ro.vopts.abs_tol), .parse = take_tol,
     .bad = "option --atol needs a tolerance of at least 0"},
    {.arg = CLI_CUSTOM, .name = "--ulp", .parse = take_ulp,
     .bad = "option --ulp needs a distance (0, 1, 2, ...)", .usage = "--ulp N",
     .help = "at most N units in the last place apart"},
    {.arg = CLI_CUSTOM, .name = "--repeat", .parse = take_repeat,
     .bad = "option --repeat needs a count from 1 to 1000000", .usage = "--repeat N",
     .help = "launch N times (each run sees the last one's results)"},
    {.arg = CLI_FLAG, .name = "--time", .at = RC(ro.timed), .set = 1, .usage = "--time",
     .help = "report the runs' times from events: median, min, max"},
    {.arg = CLI_FLAG, .name = "-v", .alias = "--verbose", .at = RC(ro.verbose), .set = 1,
     .usage = "-v, --verbose",
     .help = "say what was linked, the device, the kernel's resources and the launch geometry "
             "(a map: its generated source)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_TABLE, .table = cli_link_opts, .at = RC(la),
     .help = "and the link options of 'fdlink link' (-arch, --decl, --backend, --lto, -O, -D, "
             "-I, ...)."},
    {.arg = CLI_END},
};

void help_run(FILE *out)
{
    fputs(
        "usage: fdlink run [options] CODE... -k KERNEL [--grid X[,Y,Z]] [--block X[,Y,Z]] ARG...\n"
        "       fdlink run [options] --decl FILE CODE... --map FUNCTION RESULT ARG...\n"
        "\n"
        "Launch one kernel from the command line. CODE is a cubin, fatbin or PTX file, loaded as\n"
        "it is, or link inputs (any kind 'fdlink link' takes, with its options): they are linked\n"
        "first when there are several, when one needs linking, or with -arch or --decl. Without\n"
        "-arch the link is for the GPU's own architecture.\n"
        "\n"
        "Kernel arguments, in the kernel's parameter order (checked against its parameters as the\n"
        "PTX of the inputs declares them, and as the driver reports them, CUDA 12.4 and later):\n"
        "  TYPE:VALUE           a scalar; TYPE is i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64\n"
        "                       (integers in decimal or 0x hex; a pointer value is a u64)\n"
        "  {TYPE:VALUE,...}     a struct of scalars, laid out as C lays it out\n"
        "  TYPE[N]              a device buffer of N elements, zeroed; its address is passed\n"
        "  TYPE[N]=FILL         filled with a constant (=2.5), a sequence (=iota: 0, 1, 2, ...),\n"
        "                       seeded random values (=rand or =rand:SEED; floats in [0,1),\n"
        "                       integers in [0,100)) or zeros (=zeros)\n"
        "  TYPE[N]@FILE         filled from FILE, which must hold exactly N elements\n"
        "  sym:NAME             the value of the module's global NAME (a __device__ variable,\n"
        "                       e.g. a device function pointer), read once the module is\n"
        "                       loaded, as many bytes as the kernel's parameter takes\n"
        "Arguments are numbered from 0; after '--' every word is an argument. Quote structs\n"
        "('{i32:1,f64:2}'), which the shell would otherwise expand, and in shells that glob\n"
        "[ ], buffers too.\n"
        "\n"
        "Maps: with --map FUNCTION, fdlink writes the kernel itself. It calls the function that\n"
        "the --decl file declares once per index, RESULT[i] = FUNCTION(ARG1, ARG2, ...) for\n"
        "i < n, where RESULT (argument 0) is a buffer of the function's return type and n its\n"
        "length; then one argument per declared parameter, of the declared type (float32 is\n"
        "f32, int32 i32, intp i64, uintp u64, bool u8 of 0 or 1, a pointer u64):\n"
        "  TYPE[N]...           an array: call i gets element i (N is at least n)\n"
        "  TYPE:VALUE           a scalar, the same for every call\n"
        "A CPointer(T) parameter takes a buffer of T, whose address every call gets, or\n"
        "u64:ADDRESS. The generated CUDA C is compiled with NVRTC and linked with CODE, the\n"
        "functions' device code (any kind 'fdlink link' takes); -v prints it. A non-zero status\n"
        "returned by the function is an error naming the lowest index that failed.\n"
        "\n",
        out);
    fputs("options:\n", out);
    cli_opts_help(run_cmd_opts, 25, out);
    fputs(
        "\n"
        "A device function's failure recorded by FDL_CALL, and a fault in the kernel, are\n"
        "reported as errors. Exit status: 0 success (every --expect matched), 1 failure or\n"
        "mismatch, 2 usage, 77 no GPU (ctest reports a skip).\n"
        "\n"
        "examples:\n"
        "  # the seed's multiply_vectors, calling mul_f32_f32 through the FFI ABI, checked\n"
        "  fdlink run --decl functions.decl functions.ptx callers.ptx -k multiply_vectors \\\n"
        "      --grid 4 --block 256 f32[1024] f32[1024]=iota f32[1024]=2 i32:1024 \\\n"
        "      --expect 0=twice_iota.f32\n"
        "  # a vendor's cubin: saxpy on random data, the result written out, timed\n"
        "  fdlink run vendor.cubin -k saxpy --grid 64 --block 256 f32[16384]=rand:7 \\\n"
        "      f32[16384]@x.bin f32:0.5 i32:16384 --out 0=y.bin --repeat 100 --time\n"
        "  # CUDA C compiled at run time, compared within 2 ULP\n"
        "  fdlink run kernel.cu -k scale --block 128 f64[128]=iota f64:3 --expect 0=ref.f64 \\\n"
        "      --ulp 2\n"
        "  # no kernel at all: out[i] = mul_f32_f32(a[i], 2) over 1024 floats, checked\n"
        "  fdlink run --decl functions.decl functions.ptx --map mul_f32_f32 f32[1024] \\\n"
        "      f32[1024]=iota f32:2 --expect 0=twice_iota.f32\n"
        "  # sum_reduce(CPointer(float32), int32) called once: the sum of 100 floats\n"
        "  fdlink run --decl functions.decl functions.ptx --map sum_reduce f32[1] \\\n"
        "      f32[100]=rand:3 i32:100 --out 0=sum.f32\n",
        out);
}


static void run_cmd_free(run_cmd *c)
{
    fdl_launch_destroy(c->launch);
    fdl_event_destroy(c->start);
    fdl_event_destroy(c->stop);
    for (size_t k = 0; c->args && k < c->nargs; k++)
        fdl_buffer_destroy(c->args[k].buf);
    fdl_module_destroy(c->mod);
    fdl_device_destroy(c->dev);
    fdl_link_destroy(c->link);
    cli_link_args_free(&c->la);
    for (size_t k = 0; c->file_data && k < c->slots; k++)
        free(c->file_data[k]);
    for (size_t k = 0; c->expects && k < c->nexpects; k++)
        free(c->expects[k].data);
    free(c->file_data);
    free(c->expects);
    free(c->outs);
    free(c->args);
    free(c->kargs);
    free(c->times);
}

/* The options' combinations, and --out's and --expect's arguments: 0, or an exit status. */
static int run_check_cmdline(run_cmd *c)
{
    int rc;
    if (c->la.ninputs == 0)
        return cli_usage_error("run", "%s", "no code to run (a cubin, fatbin, PTX or link "
                                            "inputs)");
    if ((rc = cli_link_refuse_outputs(&c->la, "run", NULL)) != 0)
        return rc;
    if (c->la.archs.n > 1 || (c->la.opts.arch && strchr(c->la.opts.arch, ',')))
        return cli_usage_error("run", "%s", "run links for one architecture (the GPU's): make "
                                            "a fatbin with 'fdlink link', then run it");
    if (c->kernel_name && c->map_name)
        return cli_usage_error("run", "%s", "-k and --map exclude each other (a map generates "
                                            "its own kernel)");
    if (!c->kernel_name && !c->map_name)
        return cli_usage_error("run", "%s", "missing -k KERNEL or --map FUNCTION");
    if (c->map_name && c->geometry)
        return cli_usage_error("run", "%s does not apply to --map (a map chooses its own grid "
                                      "and block)", c->geometry);
    if (c->have_tol && c->have_ulp)
        return cli_usage_error("run", "%s", "--ulp and --rtol/--atol exclude each other");
    c->ro.vopts.mode = c->have_ulp   ? FDL_VERIFY_ULP
                    : c->have_tol ? FDL_VERIFY_TOLERANCE
                                  : FDL_VERIFY_EXACT;
    for (size_t k = 0; k < c->nouts + c->nexpects; k++) {
        io_spec *io = k < c->nouts ? &c->outs[k] : &c->expects[k - c->nouts];
        const char *opt = k < c->nouts ? "--out" : "--expect";
        if (io->arg >= c->nargs || !c->args[io->arg].is_buffer) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s %zu=%s: argument %zu is %s", opt, io->arg, io->path,
                     io->arg, io->arg >= c->nargs ? "not given" : "not a buffer");
            return cli_usage_error("run", "%s", msg);
        }
    }
    return 0;
}

/* The command line into @p c: 0, or an exit status (*done: -h printed the help). */
static int run_parse(run_cmd *c, int argc, char **argv, int *done)
{
    int after_dashes = 0, rc = 0;
    *done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (after_dashes || (a[0] != '-' && looks_like_arg(a))) {
            c->args[c->nargs].text = a;
            if ((rc = parse_arg(&c->args[c->nargs], c->nargs)) != 0)
                return rc;
            c->nargs++;
        } else if (strcmp(a, "--") == 0) {
            after_dashes = 1;
        } else if (cli_is_help(a)) {
            help_run(stdout);
            *done = 1;
            return 0;
        } else if (cli_opts_parse(run_cmd_opts, c, "run", argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("run", "unknown option '%s'", a);
        } else {
            cli_link_add_input(&c->la, a);
        }
    }
    c->la.whole_logs = c->ro.verbose;
    c->ro.outs = c->outs;
    c->ro.expects = c->expects;
    c->ro.nouts = c->nouts;
    c->ro.nexpects = c->nexpects;
    return run_check_cmdline(c);
}

/* The files of TYPE[N]@FILE and --expect, before anything needs a GPU: every size must agree.
 * 0, or an exit status after printing. */
static int run_read_files(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    for (size_t k = 0; k < c->nargs + c->nexpects; k++) {
        int is_arg = k < c->nargs;
        io_spec *e = is_arg ? NULL : &c->expects[k - c->nargs];
        karg *a = is_arg ? &c->args[k] : &c->args[e->arg];
        const char *path = is_arg ? a->path : e->path;
        if (is_arg && (!a->is_buffer || a->fill != FILL_FILE))
            continue;
        char *data = NULL;
        size_t size = 0;
        if (fdl__read_file(path, &data, &size, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        if (is_arg) {
            c->file_data[k] = data;
        } else {
            e->data = data;
            e->size = size;
        }
        size_t want = a->count * a->type->size;
        if (size != want) {
            cli_eprintf("fdlink: %s: error: holds %zu bytes, but argument %zu '%s' needs %zu "
                        "(%zu %s values)\n",
                        path, size, is_arg ? k : e->arg, a->text, want, a->count, a->type->name);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The code (linked first when it needs it), the device, the module and the kernel with its
 * attributes: 0, or an exit status after printing (RUN_EXIT_SKIP: no GPU here). */
static int run_load(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    cli_link_args *la = &c->la;
    int rc, lrc = 0, linked = 0;
    if ((rc = check_params_in_images(la, c->kernel_name, c->args, c->nargs)) != 0)
        return rc;
    if ((rc = cli_link_check_options(la)) != 0)
        return rc;
    int must_link = needs_link(la, &lrc);
    if (lrc)
        return 1;
    /* without -arch, the link is for the device's own architecture, read once it is open */
    int arch_of_device = must_link && (!la->opts.arch || strcmp(la->opts.arch, "native") == 0);
    if (must_link && !arch_of_device && !cli_link_needs_device(la)) {
        if (cli_link_build(la, &c->link) != 0)
            return 1;
        linked = 1;
    }
    if (fdl_device_open(&c->dev, la->device, &err) != FDL_OK) {
        if (cli_no_gpu_here(&err)) {
            /* one line, and the exit status ctest reads as a skip */
            fprintf(stderr, "fdlink: skipped: kernel '%s' not run: no GPU here (%s)\n",
                    c->kernel_name, err.message);
            return RUN_EXIT_SKIP;
        }
        cli_print_device_error(la, &err);
        return 1;
    }
    if (arch_of_device)
        la->opts.arch = fdl_device_arch(c->dev);
    if (must_link && !linked && cli_link_build(la, &c->link) != 0)
        return 1;
    if (c->link) {
        size_t size = 0;
        const void *cubin = fdl_link_cubin(c->link, &size);
        rc = fdl_module_load_data(&c->mod, c->dev, cubin, size, "linked cubin", &err);
    } else {
        rc = fdl_module_load_file(&c->mod, c->dev, la->inputs[0], &err);
    }
    if (rc != FDL_OK || fdl_module_get_kernel(&c->kernel, c->mod, c->kernel_name, &err) != FDL_OK ||
        fdl_kernel_get_attrs(c->kernel, &c->attrs, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

/* -v: what was linked, the device, the kernel's resources and the launch's geometry. */
static void run_say_loaded(const run_cmd *c)
{
    const fdl_kernel_attrs *at = &c->attrs;
    const fdl_launch_config *cfg = &c->cfg;
    if (c->link)
        fprintf(stderr, "fdlink: linked %zu input%s for %s with %s (LTO %s)\n",
                fdl_link_input_count(c->link), fdl_link_input_count(c->link) == 1 ? "" : "s",
                fdl_link_arch(c->link), fdl_link_backend_name(fdl_link_get_backend(c->link)),
                fdl_link_lto(c->link) ? "on" : "off");
    fprintf(stderr,
            "fdlink: device %d: %s (%s); kernel %s: %d registers, %zu bytes static shared, "
            "%zu bytes local, at most %u threads per block; grid (%u,%u,%u), block "
            "(%u,%u,%u), %zu bytes dynamic shared\n",
            fdl_device_ordinal(c->dev), fdl_device_name(c->dev), fdl_device_arch(c->dev),
            c->kernel_name, at->registers, at->static_shared, at->local,
            at->max_threads_per_block, cfg->grid.x, cfg->grid.y, cfg->grid.z, cfg->block.x,
            cfg->block.y, cfg->block.z, cfg->shared_bytes);
    if (at->cooperative_groups && !c->coop)
        fprintf(stderr, "fdlink: kernel %s: its cubin lists cooperative-groups instructions: "
                        "a cooperative launch when the grid fits at once\n", c->kernel_name);
}

/* The arguments against the kernel's parameters, as the driver reports them (CUDA 12.4 and
 * later): their count and sizes. 0, or an exit status after printing. */
static int run_check_params(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    const fdl_kernel_attrs *at = &c->attrs;
    if (!at->params_known)
        return 0;
    if (at->nparams != c->nargs) {
        fprintf(stderr,
                "fdlink: error: kernel %s takes %zu parameter%s, but %zu argument%s given "
                "(see 'fdlink run --help')\n",
                c->kernel_name, at->nparams, at->nparams == 1 ? "" : "s", c->nargs,
                c->nargs == 1 ? " was" : "s were");
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < c->nargs; k++) {
        karg *a = &c->args[k];
        size_t psize = 0;
        if (fdl_kernel_param(c->kernel, k, NULL, &psize, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        if (a->symbol && psize <= MAX_STRUCT_BYTES)
            a->size = psize;
        if (psize != a->size) {
            fprintf(stderr,
                    "fdlink: error: argument %zu '%s' has %zu byte%s, but parameter %zu of "
                    "kernel %s takes %zu (see 'fdlink run --help')\n",
                    k, a->text, a->size, a->size == 1 ? "" : "s", k, c->kernel_name, psize);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* Arguments from the module: sym:NAME, as wide as the parameter it is passed to. 0, or 1 after
 * printing. */
static int run_read_symbols(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    for (size_t k = 0; k < c->nargs; k++) {
        karg *a = &c->args[k];
        if (!a->symbol)
            continue;
        if (!c->attrs.params_known) {
            cli_eprintf("fdlink: error: argument %zu '%s': the driver does not say the size of "
                        "parameter %zu of kernel %s (CUDA 12.4 and later do), which sym: needs\n",
                        k, a->text, k, c->kernel_name);
            return 1;
        }
        size_t global_size = 0;
        if (fdl_module_read_global(c->mod, a->symbol, a->value, a->size, &global_size, &err) !=
            FDL_OK) {
            if (err.code == FDL_EINVAL && global_size)
                cli_eprintf("fdlink: error: argument %zu '%s': global %s has %zu byte%s, but "
                            "parameter %zu of kernel %s takes %zu\n",
                            k, a->text, a->symbol, global_size, global_size == 1 ? "" : "s", k,
                            c->kernel_name, a->size);
            else
                cli_print_error(&err);
            return 1;
        }
        if (c->ro.verbose)
            fprintf(stderr, "fdlink: argument %zu: %zu bytes of global %s\n", k, a->size,
                    a->symbol);
    }
    return 0;
}

/* The buffers made and filled, and the kernel's arguments: 0, or 1 after printing. */
static int run_make_args(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    c->kargs = calloc(c->nargs + 1, sizeof *c->kargs);
    if (!c->kargs) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    if (make_buffers(c->dev, c->args, c->nargs, c->file_data) != 0)
        return 1;
    for (size_t k = 0; k < c->nargs; k++) {
        karg *a = &c->args[k];
        c->kargs[k] = a->is_buffer ? fdl_arg_make(&a->address, sizeof a->address)
                                   : fdl_arg_make(a->value, a->size);
    }
    if (c->cfg.shared_bytes > 48 * 1024 &&
        fdl_kernel_set_max_dynamic_shared(c->kernel, c->cfg.shared_bytes, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

/* The launches: one, synchronous, or --repeat of them timed by events. 0, or 1 after
 * printing. */
static int run_launch(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    unsigned long long repeat = c->ro.repeat;
    if (repeat == 1 && !c->ro.timed) {
        /* a failure is reported by the launch that caused it */
        c->cfg.flags = FDL_LAUNCH_SYNC | (unsigned)c->coop;
        if (fdl_kernel_launch_ex(c->kernel, &c->cfg, c->kargs, c->nargs, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        return 0;
    }
    c->times = calloc((size_t)repeat, sizeof *c->times);
    if (!c->times) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    c->cfg.flags = (unsigned)c->coop;
    if (fdl_launch_create(&c->launch, c->kernel, &c->cfg, c->kargs, c->nargs, &err) != FDL_OK ||
        fdl_event_create(&c->start, c->dev, &err) != FDL_OK ||
        fdl_event_create(&c->stop, c->dev, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    for (size_t r = 0; r < repeat; r++) {
        if (fdl_event_record(c->start, NULL, &err) != FDL_OK ||
            fdl_launch_run(c->launch, &err) != FDL_OK ||
            fdl_event_record(c->stop, NULL, &err) != FDL_OK ||
            fdl_event_elapsed_ms(&c->times[r], c->start, c->stop, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
    }
    /* device-side status and faults of all the runs */
    if (fdl_device_synchronize(c->dev, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_cmd c;
    memset(&c, 0, sizeof c);
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    fdl_verify_options vopts = FDL_VERIFY_OPTIONS_INIT;
    c.cfg = cfg;
    c.ro.vopts = vopts;
    c.ro.repeat = 1;
    c.slots = (size_t)argc + 1;
    c.args = calloc(c.slots, sizeof *c.args);
    c.outs = calloc(c.slots, sizeof *c.outs);
    c.expects = calloc(c.slots, sizeof *c.expects);
    c.file_data = calloc(c.slots, sizeof *c.file_data);
    int rc = 1, done = 0;
    if (!cli_link_args_init(&c.la, argc))
        goto cleanup;
    if (!c.args || !c.outs || !c.expects || !c.file_data) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    if ((rc = run_parse(&c, argc, argv, &done)) != 0 || done ||
        (rc = run_read_files(&c)) != 0)
        goto cleanup;
    if (c.map_name) {
        rc = run_map(&c.la, c.map_name, c.args, c.nargs, c.file_data, &c.ro);
        goto cleanup;
    }
    if ((rc = run_load(&c)) != 0)
        goto cleanup;
    if (c.ro.verbose)
        run_say_loaded(&c);
    if ((rc = run_check_params(&c)) != 0 || (rc = run_read_symbols(&c)) != 0 ||
        (rc = run_make_args(&c)) != 0 || (rc = run_launch(&c)) != 0)
        goto cleanup;
    if (c.ro.timed)
        print_times("kernel", c.kernel_name, c.times, c.ro.repeat);
    rc = write_and_verify(c.args, &c.ro);
cleanup:
    run_cmd_free(&c);
    return rc;
}
