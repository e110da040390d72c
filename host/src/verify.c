/* Verification of device results against host references. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/verify.h"
#include "internal.h"

typedef enum kind { SIGNED, UNSIGNED, FLOAT } kind;

typedef struct type_info {
    kind kind;
    size_t size; /* bytes */
    const char *name;
} type_info;

static int type_of(fdl_scalar t, type_info *out)
{
    switch (t) {
    case FDL_BOOL: *out = (type_info){UNSIGNED, 1, "bool"}; return 1;
    case FDL_INT8: *out = (type_info){SIGNED, 1, "int8"}; return 1;
    case FDL_INT16: *out = (type_info){SIGNED, 2, "int16"}; return 1;
    case FDL_INT32: *out = (type_info){SIGNED, 4, "int32"}; return 1;
    case FDL_INT64: *out = (type_info){SIGNED, 8, "int64"}; return 1;
    case FDL_INTP: *out = (type_info){SIGNED, 8, "intp"}; return 1;
    case FDL_UINT8: *out = (type_info){UNSIGNED, 1, "uint8"}; return 1;
    case FDL_UINT16: *out = (type_info){UNSIGNED, 2, "uint16"}; return 1;
    case FDL_UINT32: *out = (type_info){UNSIGNED, 4, "uint32"}; return 1;
    case FDL_UINT64: *out = (type_info){UNSIGNED, 8, "uint64"}; return 1;
    case FDL_UINTP: *out = (type_info){UNSIGNED, 8, "uintp"}; return 1;
    case FDL_FLOAT16: *out = (type_info){FLOAT, 2, "float16"}; return 1;
    case FDL_FLOAT32: *out = (type_info){FLOAT, 4, "float32"}; return 1;
    case FDL_FLOAT64: *out = (type_info){FLOAT, 8, "float64"}; return 1;
    default: return 0;
    }
}

/* The raw bits of element @p i, zero-extended. */
static uint64_t load_bits(const unsigned char *p, size_t i, size_t size)
{
    const unsigned char *e = p + i * size;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (size) {
    case 1: memcpy(&u8, e, 1); return u8;
    case 2: memcpy(&u16, e, 2); return u16;
    case 4: memcpy(&u32, e, 4); return u32;
    default: memcpy(&u64, e, 8); return u64;
    }
}

static int64_t sign_extend(uint64_t bits, size_t size)
{
    if (size == 8) {
        int64_t v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    uint64_t sign = (uint64_t)1 << (size * 8 - 1);
    /* (bits ^ sign) - sign sign-extends without implementation-defined shifts */
    uint64_t x = (bits ^ sign) - sign;
    int64_t v;
    memcpy(&v, &x, sizeof v);
    return v;
}

/* IEEE binary16 bits as a double (exact). */
static double float_value(uint64_t bits, size_t size)
{
    if (size == 2)
        return fdl__half_to_double((uint16_t)bits);
    if (size == 4) {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, sizeof f);
        return (double)f;
    }
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Distance in representable values between two non-NaN floats of @p size bytes. */
static uint64_t ulp_distance(uint64_t a, uint64_t b, size_t size)
{
    unsigned bits = (unsigned)(size * 8);
    uint64_t sign = (uint64_t)1 << (bits - 1);
    uint64_t mask = sign - 1;
    uint64_t ma = a & mask, mb = b & mask;
    if ((a & sign) == (b & sign))
        return ma > mb ? ma - mb : mb - ma;
    return ma + mb; /* through zero: both below 2^63 */
}

typedef struct measure {
    fdl_value got, expected;
    double abs_error, rel_error;
    uint64_t ulp;
    int match;
} measure;

static void measure_int(measure *m, const type_info *t, uint64_t g, uint64_t e,
                        const fdl_verify_options *o)
{
    uint64_t diff;
    double mag;
    if (t->kind == SIGNED) {
        int64_t a = sign_extend(g, t->size), b = sign_extend(e, t->size);
        m->got.i = a;
        m->expected.i = b;
        /* modular unsigned subtraction is exact for the larger minus the smaller */
        diff = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
        mag = b < 0 ? -(double)b : (double)b;
    } else {
        m->got.u = g;
        m->expected.u = e;
        diff = g > e ? g - e : e - g;
        mag = (double)e;
    }
    m->abs_error = (double)diff;
    m->rel_error = diff == 0 ? 0.0 : mag == 0.0 ? INFINITY : (double)diff / mag;
    m->ulp = diff;
    switch (o->mode) {
    case FDL_VERIFY_EXACT:
    case FDL_VERIFY_BITWISE: m->match = diff == 0; break;
    case FDL_VERIFY_TOLERANCE:
        m->match = diff == 0 || m->abs_error <= o->abs_tol + o->rel_tol * mag;
        break;
    case FDL_VERIFY_ULP: m->match = diff <= o->max_ulp; break;
    }
}

static void measure_float(measure *m, const type_info *t, uint64_t gb, uint64_t eb,
                          const fdl_verify_options *o)
{
    double g = float_value(gb, t->size), e = float_value(eb, t->size);
    m->got.f = g;
    m->expected.f = e;
    int gnan = isnan(g), enan = isnan(e);
    int nan_ok = gnan && enan && o->nan_equal;
    if (gnan || enan) {
        m->abs_error = nan_ok ? 0.0 : NAN;
        m->rel_error = nan_ok ? 0.0 : NAN;
        m->ulp = nan_ok ? 0 : UINT64_MAX;
    } else if (g == e) {
        m->abs_error = 0.0;
        m->rel_error = 0.0;
        m->ulp = ulp_distance(gb, eb, t->size); /* 0, also for -0.0 against +0.0 */
    } else {
        m->abs_error = fabs(g - e);
        m->rel_error = e == 0.0 ? INFINITY : m->abs_error / fabs(e);
        m->ulp = ulp_distance(gb, eb, t->size);
    }
    switch (o->mode) {
    case FDL_VERIFY_EXACT: m->match = nan_ok || g == e; break;
    case FDL_VERIFY_BITWISE: m->match = gb == eb; break;
    case FDL_VERIFY_TOLERANCE:
        if (gnan || enan)
            m->match = nan_ok;
        else if (g == e)
            m->match = 1;
        else if (isinf(g) || isinf(e))
            m->match = 0;
        else
            m->match = m->abs_error <= o->abs_tol + o->rel_tol * fabs(e);
        break;
    case FDL_VERIFY_ULP: m->match = (gnan || enan) ? nan_ok : m->ulp <= o->max_ulp; break;
    }
}

static void value_text(char *buf, size_t size, fdl_scalar type, fdl_value v)
{
    type_info t;
    if (!type_of(type, &t)) {
        fdl__strlcpy(buf, "?", size);
        return;
    }
    if (t.kind == SIGNED)
        snprintf(buf, size, "%" PRId64, v.i);
    else if (t.kind == UNSIGNED)
        snprintf(buf, size, "%" PRIu64, v.u);
    else
        snprintf(buf, size, "%.*g", t.size == 2 ? 5 : t.size == 4 ? 9 : 17, v.f);
}

static void criterion_text(char *buf, size_t size, const fdl_verify_options *o)
{
    switch (o->mode) {
    case FDL_VERIFY_EXACT: fdl__strlcpy(buf, "exact", size); break;
    case FDL_VERIFY_BITWISE: fdl__strlcpy(buf, "bitwise", size); break;
    case FDL_VERIFY_TOLERANCE:
        snprintf(buf, size, "abs %g + rel %g", o->abs_tol, o->rel_tol);
        break;
    case FDL_VERIFY_ULP: snprintf(buf, size, "ulp <= %" PRIu64, o->max_ulp); break;
    default: fdl__strlcpy(buf, "?", size); break;
    }
}

static void error_text(char *buf, size_t size, fdl_scalar type, const fdl_verify_mismatch *m)
{
    type_info t;
    if (type_of(type, &t) && t.kind == FLOAT) {
        if (m->ulp == UINT64_MAX)
            snprintf(buf, size, "abs error %g, rel error %g", m->abs_error, m->rel_error);
        else
            snprintf(buf, size, "abs error %g, rel error %g, %" PRIu64 " ulp", m->abs_error,
                     m->rel_error, m->ulp);
    } else {
        snprintf(buf, size, "difference %" PRIu64, m->ulp);
    }
}

int fdl_verify(fdl_verify_report *report, fdl_scalar type, const void *got, const void *expected,
               size_t count, const fdl_verify_options *opts, fdl_error *err)
{
    static const fdl_verify_options defaults = FDL_VERIFY_OPTIONS_INIT;
    if (!FDL__CHECK_ARG(report))
        return fdl__fail(err, FDL_EINVAL, "fdl_verify: report is NULL");
    memset(report, 0, sizeof *report);
    const fdl_verify_options *o = opts ? opts : &defaults;
    type_info t;
    if (count && (!got || !expected))
        return fdl__fail(err, FDL_EINVAL, "fdl_verify: got or expected is NULL");
    if (!type_of(type, &t))
        return fdl__fail(err, FDL_EINVAL, "fdl_verify: cannot compare values of type %s",
                         (unsigned)type < FDL_SCALAR_COUNT ? fdl_scalar_name(type) : "?");
    if (o->version != FDL_VERIFY_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL,
                         "unsupported fdl_verify_options version %u (expected %u)", o->version,
                         FDL_VERIFY_OPTIONS_VERSION);
    if (o->mode != FDL_VERIFY_EXACT && o->mode != FDL_VERIFY_BITWISE &&
        o->mode != FDL_VERIFY_TOLERANCE && o->mode != FDL_VERIFY_ULP)
        return fdl__fail(err, FDL_EINVAL, "unknown verification mode %d", (int)o->mode);
    if (o->mode == FDL_VERIFY_TOLERANCE &&
        (!(o->abs_tol >= 0.0) || !(o->rel_tol >= 0.0)))
        return fdl__fail(err, FDL_EINVAL,
                         "tolerances must be non-negative numbers (abs %g, rel %g)", o->abs_tol,
                         o->rel_tol);
    report->type = type;
    report->options = *o;
    report->count = count;
    const unsigned char *g = got, *e = expected;
    for (size_t i = 0; i < count; i++) {
        uint64_t gb = load_bits(g, i, t.size), eb = load_bits(e, i, t.size);
        measure m;
        memset(&m, 0, sizeof m);
        if (t.kind == FLOAT)
            measure_float(&m, &t, gb, eb, o);
        else
            measure_int(&m, &t, gb, eb, o);
        if (m.abs_error > report->max_abs_error)
            report->max_abs_error = m.abs_error;
        if (m.rel_error > report->max_rel_error)
            report->max_rel_error = m.rel_error;
        if (m.ulp > report->max_ulp) {
            report->max_ulp = m.ulp;
            report->max_ulp_index = i;
        }
        if (m.match)
            continue;
        if (report->shown < FDL_VERIFY_SHOW_MAX) {
            fdl_verify_mismatch *mm = &report->first[report->shown++];
            mm->index = i;
            mm->got = m.got;
            mm->expected = m.expected;
            mm->abs_error = m.abs_error;
            mm->rel_error = m.rel_error;
            mm->ulp = m.ulp;
        }
        report->mismatches++;
    }
    if (!report->mismatches)
        return FDL_OK;
    if (err) {
        char crit[96], gs[48], es[48], ms[128];
        const fdl_verify_mismatch *first = &report->first[0];
        criterion_text(crit, sizeof crit, o);
        value_text(gs, sizeof gs, type, first->got);
        value_text(es, sizeof es, type, first->expected);
        error_text(ms, sizeof ms, type, first);
        fdl__fail(err, FDL_EVERIFY,
                  "%zu of %zu %s values differ (%s); first at index %zu: got %s, expected %s (%s)",
                  report->mismatches, count, t.name, crit, first->index, gs, es, ms);
    }
    return FDL_EVERIFY;
}

int fdl_buffer_verify(fdl_verify_report *report, const fdl_buffer *buf, size_t offset,
                      fdl_scalar type, const void *expected, size_t count,
                      const fdl_verify_options *opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(report) || !FDL__CHECK_ARG(buf))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_verify: report or buf is NULL");
    memset(report, 0, sizeof *report);
    type_info t;
    if (!type_of(type, &t))
        return fdl__fail(err, FDL_EINVAL, "fdl_buffer_verify: cannot compare values of type %s",
                         (unsigned)type < FDL_SCALAR_COUNT ? fdl_scalar_name(type) : "?");
    size_t bytes;
    if (!fdl__size_mul(&bytes, count, t.size))
        return fdl__fail(err, FDL_EINVAL, "%zu %s values exceed any buffer", count, t.name);
    unsigned char *host = NULL;
    if (bytes && !(host = malloc(bytes)))
        return fdl__fail(err, FDL_ENOMEM, "out of memory reading %zu bytes to verify", bytes);
    int rc = fdl_buffer_read(buf, offset, host, bytes, err);
    if (rc == FDL_OK)
        rc = fdl_verify(report, type, host, expected, count, opts, err);
    free(host);
    return rc;
}

/* Formatted output into a fixed buffer that counts what it would need. */
typedef struct out {
    char *buf;
    size_t size, len;
} out;

static void put(out *o, const char *fmt, ...) FDL__PRINTF(2, 3);

static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int room = o->len < o->size;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room ? o->size - o->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

size_t fdl_verify_format(const fdl_verify_report *r, char *buf, size_t size)
{
    if (!r)
        return 0;
    out o = {buf, buf ? size : 0, 0};
    if (o.size)
        o.buf[0] = '\0';
    type_info t;
    const char *name = type_of(r->type, &t) ? t.name : "?";
    char crit[96];
    criterion_text(crit, sizeof crit, &r->options);
    if (!r->mismatches) {
        put(&o, "%s: all %zu values match (%s)\n", name, r->count, crit);
        return o.len;
    }
    put(&o, "%s: %zu of %zu values differ (%s); ", name, r->mismatches, r->count, crit);
    if (type_of(r->type, &t) && t.kind == FLOAT)
        put(&o, "max abs error %g, max ulp %" PRIu64 "\n", r->max_abs_error, r->max_ulp);
    else
        put(&o, "max difference %" PRIu64 "\n", r->max_ulp);
    for (size_t i = 0; i < r->shown && i < FDL_VERIFY_SHOW_MAX; i++) {
        char gs[48], es[48], ms[128];
        value_text(gs, sizeof gs, r->type, r->first[i].got);
        value_text(es, sizeof es, r->type, r->first[i].expected);
        error_text(ms, sizeof ms, r->type, &r->first[i]);
        put(&o, "  [%zu] got %s, expected %s (%s)\n", r->first[i].index, gs, es, ms);
    }
    if (r->mismatches > r->shown)
        put(&o, "  ... and %zu more\n", r->mismatches - r->shown);
    return o.len;
}
