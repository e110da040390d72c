/*
 * Conformance of scanned PTX to declarations: the rules ABI-2..ABI-9, ABI-11 and ABI-12 of
 * abi/ABI.md. Every function of every module is looked at once (hash lookups of the declared
 * names), so a check is linear in the number of prototypes plus declarations.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "abi_internal.h"

/* One prototype of a declared name, in input order. */
typedef struct occ {
    const fdl_ptx *ptx;
    const fdl_ptx_func *fn;
} occ;

typedef struct checker {
    const fdl_check_options *opts;
    fdl_error *err;
    size_t ndiags;
    fdl_diag_fn on_warning; /* ABI-13's warnings (fdl__abi_check_warn); NULL: not looked for */
} checker;

/* ---- diagnostics -------------------------------------------------------------------------- */

/*
 * Emit one diagnostic: "<name>: <text> (ABI-<rule>; declared at <decl file:line:col>)", or
 * "<text> (ABI-<rule>)" for a module-level one (@p d NULL). The text is shortened with "..." when
 * the whole would not fit, so that the rule and the declaration's location always survive.
 */
static void vreport(checker *c, int warning, const char *source, unsigned line, unsigned column,
                    const fdl_decl *d, int rule, const char *fmt, va_list ap);

static void diag(checker *c, const char *source, unsigned line, unsigned column, const fdl_decl *d,
                 int rule, const char *fmt, ...) FDL__PRINTF(7, 8);

static void diag(checker *c, const char *source, unsigned line, unsigned column, const fdl_decl *d,
                 int rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(c, 0, source, line, column, d, rule, fmt, ap);
    va_end(ap);
}

/* One warning (to on_warning, counted nowhere), as diag writes a diagnostic. */
static void warn(checker *c, const char *source, unsigned line, unsigned column, const fdl_decl *d,
                 int rule, const char *fmt, ...) FDL__PRINTF(7, 8);

static void warn(checker *c, const char *source, unsigned line, unsigned column, const fdl_decl *d,
                 int rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(c, 1, source, line, column, d, rule, fmt, ap);
    va_end(ap);
}

static void vreport(checker *c, int warning, const char *source, unsigned line, unsigned column,
                    const fdl_decl *d, int rule, const char *fmt, va_list ap)
{
    char text[FDL_ERROR_MESSAGE_MAX];
    char tail[FDL_ERROR_MESSAGE_MAX];
    char msg[FDL_ERROR_MESSAGE_MAX];
    vsnprintf(text, sizeof text, fmt, ap);
    if (d)
        snprintf(tail, sizeof tail, " (ABI-%d; declared at %s:%u:%u)", rule, d->source, d->line,
                 d->column);
    else
        snprintf(tail, sizeof tail, " (ABI-%d)", rule);
    size_t tail_len = strlen(tail);
    size_t head_room = sizeof msg - 1 > tail_len ? sizeof msg - 1 - tail_len : 0;
    int n = d ? snprintf(msg, sizeof msg, "%s: %s", d->name, text)
              : snprintf(msg, sizeof msg, "%s", text);
    if (n < 0)
        n = 0;
    if ((size_t)n > head_room) {
        size_t keep = head_room > 3 ? head_room - 3 : 0;
        memcpy(msg + keep, "...", head_room - keep);
        n = (int)head_room;
    }
    msg[n] = '\0';
    fdl__strlcpy(msg + n, tail, sizeof msg - (size_t)n);

    fdl_error e = FDL_ERROR_INIT;
    fdl__error(&e, FDL_EABI, source, line, column, d ? d->name : NULL, "%s", msg);
    fdl__error_rule(&e, rule);
    if (d)
        fdl__error_decl(&e, d->source, d->line, d->column);
    if (warning) {
        if (c->on_warning)
            c->on_warning(c->opts->ctx, &e);
        return;
    }
    if (c->opts->on_diag)
        c->opts->on_diag(c->opts->ctx, &e);
    if (c->ndiags == 0 && c->err)
        *c->err = e;
    c->ndiags++;
}

/* ---- widths (ABI-5) ----------------------------------------------------------------------- */

/* What a declared type needs in PTX. */
typedef enum need {
    NEED_NONE, /* void */
    NEED_B32,  /* bool, int8..uint16 (promoted), int32, uint32, float32 */
    NEED_B64,  /* int64, uint64, intp, uintp, float64, any pointer */
    NEED_HALF  /* float16: a 16-bit scalar or `.align 2 .b8 x[2]` */
} need;

static need need_of(fdl_type t)
{
    if (t.depth)
        return NEED_B64;
    switch (t.base) {
    case FDL_VOID:
        return NEED_NONE;
    case FDL_BOOL:
    case FDL_INT8:
    case FDL_UINT8:
    case FDL_INT16:
    case FDL_UINT16:
    case FDL_INT32:
    case FDL_UINT32:
    case FDL_FLOAT32:
        return NEED_B32;
    case FDL_FLOAT16:
        return NEED_HALF;
    case FDL_INT64:
    case FDL_UINT64:
    case FDL_INTP:
    case FDL_UINTP:
    case FDL_FLOAT64:
    default:
        return NEED_B64;
    }
}

static const char *need_text(need n)
{
    switch (n) {
    case NEED_B32:
        return ".b32";
    case NEED_B64:
        return ".b64";
    case NEED_HALF:
        return ".b16 or .b8[2]";
    case NEED_NONE:
    default:
        return "nothing";
    }
}

/* .b/.u/.s/.f of one width are equivalent (ABI-5); .pred never fits. */
static int is_scalar(const fdl_ptx_param *p, unsigned bits)
{
    /* type is NUL-padded to its size: five bytes compare "pred" and its end */
    return p->array == 0 && p->bits == bits && memcmp(p->type, "pred", 5) != 0;
}

static int fits(const fdl_ptx_param *p, need n)
{
    switch (n) {
    case NEED_B32:
        return is_scalar(p, 32);
    case NEED_B64:
        return is_scalar(p, 64);
    case NEED_HALF:
        return is_scalar(p, 16) || (p->bits == 8 && p->array == 2);
    case NEED_NONE:
    default:
        return 0;
    }
}

/* ".b64", ".f32", ".b8[2]" */
static const char *describe(const fdl_ptx_param *p, char *buf, size_t size)
{
    if (p->array)
        snprintf(buf, size, ".%s[%zu]", p->type, p->array);
    else
        snprintf(buf, size, ".%s", p->type);
    return buf;
}

static const char *type_name(fdl_type t, char *buf, size_t size)
{
    fdl_type_format(t, buf, size);
    return buf;
}

/* The declared signature as text, shortened to fit a message. */
static const char *sig_text(const fdl_sig *sig, char *buf, size_t size)
{
    size_t n = fdl_sig_format(sig, buf, size);
    if (n >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    return buf;
}

/* Declared parameters map one to one onto the PTX parameters starting at @p from. */
static int params_fit(const fdl_ptx_func *fn, size_t from, const fdl_sig *sig)
{
    if (fn->nparams != from + sig->nparams)
        return 0;
    for (size_t k = 0; k < sig->nparams; k++)
        if (!fits(&fn->params[from + k], need_of(sig->params[k])))
            return 0;
    return 1;
}

/* ---- prototype rules ---------------------------------------------------------------------- */

/*
 * Check one prototype (a definition, or with @p stale an .extern reference) against its
 * declaration: ABI-2, ABI-3, ABI-5 for the numba ABI, ABI-9 for abi=c. References report every
 * problem under ABI-8, prefixed "stale prototype in caller: ".
 */
static void check_proto(checker *c, const fdl_ptx *m, const fdl_ptx_func *fn, const fdl_decl *d,
                        int stale)
{
    const char *src = fdl_ptx_source(m);
    const char *pre = stale ? "stale prototype in caller: " : "";
    const fdl_sig *sig = &d->sig;
    char have[48], tname[128], stext[256];

    if (d->abi == FDL_ABI_C) {
        int rule = stale ? 8 : 9; /* ABI-9 */
        need rn = need_of(sig->ret);
        if (rn == NEED_NONE) {
            if (fn->has_return)
                diag(c, src, fn->ret.line, fn->ret.column, d, rule,
                     "%sreturns %s, but a void function has no return value", pre,
                     describe(&fn->ret, have, sizeof have));
        } else if (!fn->has_return) {
            diag(c, src, fn->line, fn->column, d, rule,
                 "%sreturns nothing, but %s needs a %s return", pre,
                 type_name(sig->ret, tname, sizeof tname), need_text(rn));
        } else if (!fits(&fn->ret, rn)) {
            diag(c, src, fn->ret.line, fn->ret.column, d, rule, "%sreturns %s, but %s needs %s",
                 pre, describe(&fn->ret, have, sizeof have),
                 type_name(sig->ret, tname, sizeof tname), need_text(rn));
        }
        if (fn->nparams != sig->nparams) {
            /* a numba-ABI function declared abi=c: status return, return pointer, then the args */
            int numba_like = fn->has_return && is_scalar(&fn->ret, 32) && fn->nparams >= 1 &&
                             is_scalar(&fn->params[0], 64) && params_fit(fn, 1, sig);
            diag(c, src, fn->line, fn->column, d, rule, "%shas %zu parameter%s but %s needs %zu%s",
                 pre, fn->nparams, fn->nparams == 1 ? "" : "s",
                 sig_text(sig, stext, sizeof stext), sig->nparams,
                 numba_like ? " (a numba ABI function? remove abi=c)" : "");
            return;
        }
        for (size_t k = 0; k < sig->nparams; k++) {
            const fdl_ptx_param *p = &fn->params[k];
            need pn = need_of(sig->params[k]);
            if (!fits(p, pn))
                diag(c, src, p->line, p->column, d, rule, "%sparameter %zu (%s) is %s but needs %s",
                     pre, k + 1, type_name(sig->params[k], tname, sizeof tname),
                     describe(p, have, sizeof have), need_text(pn));
        }
        return;
    }

    /* numba ABI: int name(T *return_value, args...) */
    if (!fn->has_return) /* ABI-2 */
        diag(c, src, fn->line, fn->column, d, stale ? 8 : 2,
             "%sreturns nothing, but the numba ABI needs an int status return "
             "(a C void function? declare it abi=c)", pre);
    else if (!is_scalar(&fn->ret, 32)) /* ABI-2 */
        diag(c, src, fn->ret.line, fn->ret.column, d, stale ? 8 : 2,
             "%sreturns %s, but the numba ABI needs a .b32 int status return", pre,
             describe(&fn->ret, have, sizeof have));

    if (params_fit(fn, 0, sig)) { /* ABI-3: the arguments are all there, the slot is not */
        if (sig->ret.base == FDL_VOID && sig->ret.depth == 0) /* ABI-4 */
            diag(c, src, fn->line, fn->column, d, stale ? 8 : 3,
                 "%smissing return pointer: parameter 0 must be the 64-bit pointer to the return "
                 "slot, which numba passes even for a void return", pre);
        else
            diag(c, src, fn->line, fn->column, d, stale ? 8 : 3,
                 "%smissing return pointer: parameter 0 must be the 64-bit pointer to the %s "
                 "return slot", pre, type_name(sig->ret, tname, sizeof tname));
        return;
    }
    if (fn->nparams >= 1 && !is_scalar(&fn->params[0], 64)) /* ABI-3 */
        diag(c, src, fn->params[0].line, fn->params[0].column, d, stale ? 8 : 3,
             "%sparameter 0 is %s but the return pointer needs .b64", pre,
             describe(&fn->params[0], have, sizeof have));
    if (fn->nparams != sig->nparams + 1) { /* ABI-5 */
        diag(c, src, fn->line, fn->column, d, stale ? 8 : 5,
             "%shas %zu parameter%s but %s needs %zu (return pointer + %zu)", pre, fn->nparams,
             fn->nparams == 1 ? "" : "s", sig_text(sig, stext, sizeof stext), sig->nparams + 1,
             sig->nparams);
        return;
    }
    for (size_t k = 0; k < sig->nparams; k++) { /* ABI-5 */
        const fdl_ptx_param *p = &fn->params[k + 1];
        need pn = need_of(sig->params[k]);
        if (!fits(p, pn))
            diag(c, src, p->line, p->column, d, stale ? 8 : 5,
                 "%sparameter %zu (%s) is %s but needs %s", pre, k + 1,
                 type_name(sig->params[k], tname, sizeof tname), describe(p, have, sizeof have),
                 need_text(pn));
    }
}

/* ---- float or integer (ABI-13) ----------------------------------------------------------- */

/* The class a declared type is read with (FDL__USE_*), 0 where the code shows nothing sure:
 * pointers, bool, float16 (a __half is a struct, loaded and stored as .u16/.b16). */
static unsigned class_of(fdl_type t)
{
    if (t.depth)
        return 0;
    switch (t.base) {
    case FDL_FLOAT32:
    case FDL_FLOAT64:
        return FDL__USE_FLOAT;
    case FDL_INT8:
    case FDL_INT16:
    case FDL_INT32:
    case FDL_INT64:
    case FDL_UINT8:
    case FDL_UINT16:
    case FDL_UINT32:
    case FDL_UINT64:
    case FDL_INTP:
    case FDL_UINTP:
        return FDL__USE_INT;
    default:
        return 0;
    }
}

/*
 * ABI-13, a warning: a parameter whose every typed load in the definition @p fn is of the other
 * class than its declared type (float32 loaded as .u32, int32 as .f32), and (numba ABI) an
 * integer return value whose every typed store through the return slot is a .f one. Called for a
 * definition whose prototype fits its declaration. A float's return slot is not looked at: nvcc
 * stores a float constant as .u32.
 */
static void check_classes(checker *c, const fdl_ptx *m, const fdl_ptx_func *fn, const fdl_decl *d)
{
    const fdl_sig *sig = &d->sig;
    size_t first = d->abi == FDL_ABI_C ? 0 : 1; /* the PTX parameter of declared parameter 0 */
    char tname[128];
    for (size_t k = 0; k < sig->nparams; k++) {
        unsigned want = class_of(sig->params[k]);
        const fdl__ptx_use *u = fdl__ptx_use_of(m, fn, first + k + 1);
        if (!want || !u || u->classes != (want ^ (FDL__USE_FLOAT | FDL__USE_INT)))
            continue;
        int i = u->classes == FDL__USE_FLOAT ? 0 : 1;
        warn(c, fdl_ptx_source(m), u->line[i], u->column[i], d, 13,
             "parameter %zu is declared %s but the code reads it as %s", k + 1,
             type_name(sig->params[k], tname, sizeof tname), u->type[i]);
    }
    if (d->abi == FDL_ABI_C || class_of(sig->ret) != FDL__USE_INT)
        return;
    const fdl__ptx_use *u = fdl__ptx_use_of(m, fn, 0);
    if (u && u->classes == FDL__USE_FLOAT)
        warn(c, fdl_ptx_source(m), u->line[0], u->column[0], d, 13,
             "the return value is declared %s but the code stores it as %s",
             type_name(sig->ret, tname, sizeof tname), u->type[0]);
}

/* ---- declared names ----------------------------------------------------------------------- */

/* The declaration a `_Z<len><name>...` C++ mangled name wraps, or SIZE_MAX (ABI-7). */
static size_t mangled_decl(const fdl_decls *decls, const char *name)
{
    if (name[0] != '_' || name[1] != 'Z' || name[2] < '1' || name[2] > '9')
        return SIZE_MAX;
    size_t len = 0, i = 2;
    for (; name[i] >= '0' && name[i] <= '9'; i++) {
        if (len > (FDL_PTX_MAX_IDENT - (size_t)(name[i] - '0')) / 10)
            return SIZE_MAX;
        len = len * 10 + (size_t)(name[i] - '0');
    }
    if (strnlen(name + i, len) < len)
        return SIZE_MAX;
    return fdl__decls_index(decls, name + i, len);
}

/* ---- the check ---------------------------------------------------------------------------- */

static const char *linkage_text(fdl_ptx_linkage l)
{
    switch (l) {
    case FDL_PTX_LINK_WEAK:
        return "with .weak linkage";
    case FDL_PTX_LINK_EXTERN:
        return "with .extern linkage";
    case FDL_PTX_LINK_COMMON:
        return "with .common linkage";
    case FDL_PTX_LINK_NONE:
    default:
        return "without linkage (local to its module)";
    }
}

/* ABI-12: 64-bit code only, once per module. */
static void check_module(checker *c, const fdl_ptx *m)
{
    unsigned as = fdl_ptx_address_size(m);
    if (as == 64)
        return;
    unsigned line, col;
    if (as) {
        fdl_ptx_directive_location(m, ".address_size", &line, &col);
        diag(c, fdl_ptx_source(m), line, col, NULL, 12,
             "module uses .address_size %u, but foreign functions need .address_size 64", as);
    } else {
        fdl_ptx_directive_location(m, ".version", &line, &col);
        diag(c, fdl_ptx_source(m), line, col, NULL, 12,
             "module has no .address_size directive (32-bit addressing), but foreign functions "
             "need .address_size 64");
    }
}

/* Every rule for one declaration, given its prototypes in input order. */
static void check_decl(checker *c, const fdl_decl *d, const occ *o, size_t n, const occ *mangled)
{
    const occ *first_def = NULL, *first_ref = NULL;
    int has_entry = 0;

    for (size_t i = 0; i < n; i++) { /* ABI-11 */
        if (!o[i].fn->is_entry)
            continue;
        has_entry = 1;
        diag(c, fdl_ptx_source(o[i].ptx), o[i].fn->line, o[i].fn->column, d, 11,
             "%s as a kernel (.entry), but a foreign function must be a device function (.func)",
             o[i].fn->is_definition ? "defined" : "declared");
    }

    for (size_t i = 0; i < n; i++) {
        const fdl_ptx_func *fn = o[i].fn;
        if (fn->is_entry)
            continue;
        if (!fn->is_definition) {
            if (fn->linkage == FDL_PTX_LINK_EXTERN && !first_ref)
                first_ref = &o[i];
            continue;
        }
        const char *src = fdl_ptx_source(o[i].ptx);
        if (first_def) /* ABI-6 */
            diag(c, src, fn->line, fn->column, d, 6,
                 "defined more than once, at %s:%u:%u and at %s:%u:%u",
                 fdl_ptx_source(first_def->ptx), first_def->fn->line, first_def->fn->column, src,
                 fn->line, fn->column);
        else
            first_def = &o[i];
        if (fn->linkage != FDL_PTX_LINK_VISIBLE) /* ABI-6 */
            diag(c, src, fn->line, fn->column, d, 6,
                 "defined %s, but a foreign function needs .visible", linkage_text(fn->linkage));
        check_proto(c, o[i].ptx, fn, d, 0);
        if (c->on_warning && (d->abi == FDL_ABI_C ? params_fit(fn, 0, &d->sig)
                                : fn->nparams >= 1 && is_scalar(&fn->params[0], 64) &&
                                      params_fit(fn, 1, &d->sig)))
            check_classes(c, o[i].ptx, fn, d); /* ABI-13, a warning */
    }

    if (!first_def) {
        if (mangled) { /* ABI-7 */
            diag(c, fdl_ptx_source(mangled->ptx), mangled->fn->line, mangled->fn->column, d, 7,
                 "defined only with a C++ mangled name %s; declare it extern \"C\"",
                 mangled->fn->name);
        } else if (!has_entry && !c->opts->allow_undefined) { /* ABI-6 */
            if (first_ref)
                diag(c, d->source, d->line, d->column, d, 6,
                     "declared but not defined in any input (referenced at %s:%u:%u)",
                     fdl_ptx_source(first_ref->ptx), first_ref->fn->line, first_ref->fn->column);
            else
                diag(c, d->source, d->line, d->column, d, 6,
                     "declared but not defined in any input");
        }
    }

    if (c->opts->check_externs) /* ABI-8 */
        for (size_t i = 0; i < n; i++)
            if (!o[i].fn->is_entry && !o[i].fn->is_definition &&
                o[i].fn->linkage == FDL_PTX_LINK_EXTERN)
                check_proto(c, o[i].ptx, o[i].fn, d, 1);
}

int fdl_abi_check(size_t *ndiags, const fdl_decls *decls, const fdl_ptx *const *ptx, size_t nptx,
                  const fdl_check_options *opts, fdl_error *err)
{
    return fdl__abi_check_warn(ndiags, decls, ptx, nptx, opts, NULL, err);
}

int fdl__abi_check_warn(size_t *ndiags, const fdl_decls *decls, const fdl_ptx *const *ptx,
                        size_t nptx, const fdl_check_options *opts, fdl_diag_fn on_warning,
                        fdl_error *err)
{
    static const fdl_check_options defaults = FDL_CHECK_OPTIONS_INIT;
    if (ndiags)
        *ndiags = 0;
    if (!FDL__CHECK_ARG(decls && (ptx || !nptx)))
        return fdl__fail(err, FDL_EINVAL, "fdl_abi_check: NULL argument");
    for (size_t m = 0; m < nptx; m++)
        if (!FDL__CHECK_ARG(ptx[m]))
            return fdl__fail(err, FDL_EINVAL, "fdl_abi_check: module %zu is NULL", m);
    if (!opts)
        opts = &defaults;
    if (opts->version != FDL_CHECK_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "fdl_abi_check: unsupported options version %u",
                         opts->version);

    int rc = FDL_OK;
    checker c = {opts, err, 0, on_warning};
    size_t *start = NULL;   /* occurrences of declaration k: all[start[k] .. start[k + 1]) */
    size_t *which = NULL;   /* each prototype's declaration + 1, 0 for none, modules in order */
    occ *all = NULL;
    occ *mangled = NULL;    /* first mangled definition per declaration, made on the first */
    size_t nd = fdl_decls_count(decls), total = 0;

    for (size_t m = 0; m < nptx; m++)
        check_module(&c, ptx[m]);

    for (size_t m = 0; m < nptx; m++)
        if (!fdl__size_add(&total, total, fdl_ptx_count(ptx[m]))) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
            goto cleanup;
        }
    size_t slots;
    if (!fdl__size_add(&slots, nd, 2) || !(start = calloc(slots, sizeof *start)) ||
        !(which = malloc((total ? total : 1) * sizeof *which))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }

    /* each prototype's declaration, looked up once; counts in start[k + 2], the first mangled
     * definition of each declared name noted */
    size_t at = 0;
    for (size_t m = 0; m < nptx; m++) {
        size_t count = fdl_ptx_count(ptx[m]);
        for (size_t i = 0; i < count; i++, at++) {
            const fdl_ptx_func *fn = fdl_ptx_get(ptx[m], i);
            size_t k = fdl__decls_index(decls, fn->name, strlen(fn->name));
            which[at] = k + 1; /* 0 when absent (SIZE_MAX + 1) */
            if (k != SIZE_MAX) {
                start[k + 2]++;
            } else if (fn->is_definition && !fn->is_entry) {
                k = mangled_decl(decls, fn->name);
                if (k == SIZE_MAX)
                    continue;
                if (!mangled && !(mangled = calloc(nd, sizeof *mangled))) {
                    rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
                    goto cleanup;
                }
                if (!mangled[k].fn) {
                    mangled[k].ptx = ptx[m];
                    mangled[k].fn = fn;
                }
            }
        }
    }
    /* start[k + 1] = where declaration k's occurrences begin; each placed advances it, so that
     * afterwards start[k + 1] is where they end */
    for (size_t k = 1; k < nd + 2; k++)
        start[k] += start[k - 1];
    if (start[nd + 1] && !(all = malloc(start[nd + 1] * sizeof *all))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    at = 0;
    for (size_t m = 0; m < nptx; m++) {
        size_t count = fdl_ptx_count(ptx[m]);
        for (size_t i = 0; i < count; i++, at++) {
            if (!which[at])
                continue;
            occ *o = &all[start[which[at]]++];
            o->ptx = ptx[m];
            o->fn = fdl_ptx_get(ptx[m], i);
        }
    }

    for (size_t k = 0; k < nd; k++)
        check_decl(&c, fdl_decls_get(decls, k), all ? all + start[k] : NULL,
                   start[k + 1] - start[k], mangled && mangled[k].fn ? &mangled[k] : NULL);

cleanup:
    free(start);
    free(which);
    free(all);
    free(mangled);
    if (rc == FDL_OK && c.ndiags)
        rc = FDL_EABI;
    if (ndiags)
        *ndiags = c.ndiags;
    return rc;
}
