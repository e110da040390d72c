/*
 * fdlink run's kernel arguments (run.h): the language of the command line (TYPE:VALUE,
 * {TYPE:VALUE,...}, TYPE[N]=FILL, TYPE[N]@FILE, sym:NAME) and of its options (--grid X,Y,Z,
 * --out ARG=FILE, sizes and tolerances), the device buffers made and filled from it, and the
 * buffers written out and verified after the runs.
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

#include "internal.h"
#include "run.h"

static const elem_type types[] = {
    {"i8", FDL_INT8, 1, 'i'},     {"i16", FDL_INT16, 2, 'i'},   {"i32", FDL_INT32, 4, 'i'},
    {"i64", FDL_INT64, 8, 'i'},   {"u8", FDL_UINT8, 1, 'u'},    {"u16", FDL_UINT16, 2, 'u'},
    {"u32", FDL_UINT32, 4, 'u'},  {"u64", FDL_UINT64, 8, 'u'},  {"f32", FDL_FLOAT32, 4, 'f'},
    {"f64", FDL_FLOAT64, 8, 'f'},  {"f16", FDL_FLOAT16, 2, 'f'},
};
#define NTYPES (sizeof types / sizeof types[0])
#define TYPE_NAMES "i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64"

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
int run_looks_like_arg(const char *s)
{
    if (s[0] == '{')
        return 1;
    size_t n = 0;
    while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
           (n > 0 && s[n] >= '0' && s[n] <= '9'))
        n++;
    return n > 0 && (s[n] == ':' || s[n] == '[');
}

int run_parse_arg(karg *a, size_t index)
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
int run_parse_dim3(const char *s, fdl_dim3 *d)
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

int run_parse_size(const char *s, unsigned long long max, unsigned long long *out)
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

int run_parse_double(const char *s, double *out)
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
int run_parse_io(const char *s, io_spec *io)
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

/* Create and fill the buffers among @args on @dev; 0, or 1 after printing. */
int run_make_buffers(fdl_device *dev, karg *args, size_t nargs, char **file_data)
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
void run_print_times(const char *what, const char *name, float *times,
                        unsigned long long repeat)
{
    qsort(times, (size_t)repeat, sizeof *times, cmp_float);
    double median = repeat % 2 ? times[repeat / 2]
                               : ((double)times[repeat / 2 - 1] + times[repeat / 2]) / 2;
    printf("%s %s: %llu run%s, median %.4f ms, min %.4f ms, max %.4f ms\n", what, name, repeat,
           repeat == 1 ? "" : "s", median, (double)times[0], (double)times[repeat - 1]);
}

/* --out files written and --expect files compared: 0, or 1 after a mismatch or an error. */
int run_write_and_verify(const karg *args, const run_opts *ro)
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
