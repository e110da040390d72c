/*
 * Link options: their versions, their validation, the architecture's form, and the nvJitLink
 * option list a link passes (the link itself, its checks' post-LTO runs and the cache keys).
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/link.h"
#include "internal.h"
#include "linkobj.h"

/* Most strings one option list may hold (extra options, kernels-used, ...). */
#define MAX_OPTIONS 4096
/* Most threads a split compile may ask for. */
#define MAX_THREADS 4096

static size_t count_strings(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/* ---- names ----------------------------------------------------------------------------------- */

const char *fdl_link_backend_name(fdl_link_backend backend)
{
    switch (backend) {
    case FDL_BACKEND_AUTO: return "auto";
    case FDL_BACKEND_NVJITLINK: return "nvjitlink";
    case FDL_BACKEND_CULINK: return "culink";
    }
    return "unknown";
}

/* ---- the option table ------------------------------------------------------------------------ */

#define STR_(x) #x
#define STR(x) STR_(x)

/* When an option is set (passed to nvJitLink, refused by cuLink). */
enum { SET_NONZERO, SET_POSITIVE, SET_NONNEG, SET_ZERO, SET_LIST };
/* What nvJitLink's spelling takes: nothing, the value (%d), "0"/"1" (%s), each string (%s). */
enum { ARG_NONE, ARG_INT, ARG_BIT, ARG_STR };

/*
 * One row per option of fdl_link_options that is a number or a list of nvJitLink options: its
 * name (the field's, as the messages say it), the name cuLink's refusal says, the field, the
 * bounds (inclusive; a value outside is "invalid NAME VALUE (expected EXPECT)"), when it is set,
 * nvJitLink's spelling and the place in nvJitLink's option list (1, 2, ...; 0: fdl__link_nvjl_options
 * writes it itself), and which cuLink refusal names it (0: cuLink takes it). Rows run in the
 * order the checks and cuLink's refusals name them; adding an nvJitLink option is one row here.
 */
typedef struct {
    const char *name, *user;
    size_t offset;       /* in fdl_link_options */
    size_t link_offset;  /* a list: its copy in fdl_link (an fdl__strv) */
    int list, min, max;  /* list: no bounds */
    const char *expect;  /* NULL: not checked here */
    int set, arg;
    const char *nvjl;    /* nvJitLink's spelling, NULL where none or written by hand */
    int rank, view;      /* view: also in the checks' view (FDL__NVJL_VIEW) */
    int culink_group;    /* 0 cuLink takes it; 1, 2: the refusal that names it */
} option_row;

#define INT_ROW(field, user, min, max, expect, set, arg, nvjl, rank, view, group)                 \
    {#field, user, offsetof(fdl_link_options, field), 0, 0, min, max, expect, set, arg, nvjl,    \
     rank, view, group}
#define LIST_ROW(field, user, nvjl, rank, group)                                                  \
    {#field, user, offsetof(fdl_link_options, field), offsetof(fdl_link, field), 1, 0, 0, NULL,  \
     SET_LIST, ARG_STR, nvjl, rank, 1, group}

#define TRI "0, 1, or -1 for the default"
#define THREADS "a thread count 1.." STR(MAX_THREADS)

static const option_row rows[] = {
    INT_ROW(opt_level, "-O", -1, 3, "0..3, or -1 for the backend's default", SET_NONNEG,
            ARG_INT, NULL, 0, 1, 0),
    INT_ROW(debug, "-g", INT_MIN, INT_MAX, NULL, SET_NONZERO, ARG_NONE, "-g", 1, 1, 0),
    INT_ROW(lineinfo, "lineinfo", INT_MIN, INT_MAX, NULL, SET_NONZERO, ARG_NONE, "-lineinfo", 2,
            1, 0),
    INT_ROW(verbose, "verbose", INT_MIN, INT_MAX, NULL, SET_NONZERO, ARG_NONE, "-verbose", 3, 1,
            0),
    INT_ROW(maxrregcount, "maxrregcount", 0, 65535, "0 for no limit, or a register count",
            SET_POSITIVE, ARG_INT, "-maxrregcount=%d", 4, 1, 0),
    INT_ROW(ftz, "ftz", -1, 1, TRI, SET_NONNEG, ARG_BIT, "-ftz=%s", 5, 1, 1),
    INT_ROW(prec_div, "prec-div", -1, 1, TRI, SET_NONNEG, ARG_BIT, "-prec-div=%s", 6, 1, 1),
    INT_ROW(prec_sqrt, "prec-sqrt", -1, 1, TRI, SET_NONNEG, ARG_BIT, "-prec-sqrt=%s", 7, 1, 1),
    INT_ROW(fma, "fma", -1, 1, TRI, SET_NONNEG, ARG_BIT, "-fma=%s", 8, 1, 1),
    LIST_ROW(kernels_used, "kernels-used", "-kernels-used=%s", 9, 1),
    LIST_ROW(variables_used, "variables-used", "-variables-used=%s", 10, 1),
    INT_ROW(jobs, "jobs", 0, MAX_THREADS, THREADS ", or 0 for FDLINK_JOBS", SET_POSITIVE,
            ARG_INT, NULL, 0, 0, 0),
    INT_ROW(isolate, "isolate", -1, 1, "0, 1, or -1 for FDLINK_LINK_ISOLATE", SET_NONNEG,
            ARG_INT, NULL, 0, 0, 0),
    INT_ROW(time, "time", 0, 1, "0 or 1", SET_NONZERO, ARG_NONE, "-time", 16, 0, 2),
    LIST_ROW(xptxas, "xptxas", "-Xptxas=%s", 15, 2),
    INT_ROW(optimize_unused_variables, "optimize-unused-variables", 0, 1, "0 or 1", SET_NONZERO,
            ARG_NONE, "-optimize-unused-variables", 11, 1, 2),
    INT_ROW(split_compile, "split-compile", -1, MAX_THREADS,
            THREADS ", 0 for every processor, or -1 for fdlink's choice", SET_NONNEG, ARG_INT,
            NULL, 0, 0, 2),
    INT_ROW(split_compile_extended, "split-compile-extended", -1, MAX_THREADS,
            THREADS ", 0 for every processor, or -1 for off", SET_NONNEG, ARG_INT, NULL, 0, 0, 2),
    INT_ROW(jump_table_density, "jump-table-density", -1, 101,
            "a percentage 0..101, or -1 for the default", SET_NONNEG, ARG_INT,
            "-jump-table-density=%d", 12, 1, 2),
    INT_ROW(jl_cache, "no-cache", -1, 1, TRI, SET_ZERO, ARG_NONE, "-no-cache", 13, 1, 2),
    /* nvJitLink 13.0.88 refuses its own documented -device-stack-protector ("unrecognized
     * option"); ptxas, which makes the code of every input, LTO-IR included, takes it */
    INT_ROW(device_stack_protector, "device-stack-protector", 0, 1, "0 or 1", SET_NONZERO,
            ARG_NONE, "-Xptxas=--device-stack-protector=true", 14, 1, 2),
};
#define NROWS (sizeof rows / sizeof rows[0])

static int row_int(const option_row *r, const fdl_link_options *o)
{
    return *(const int *)(const void *)((const char *)o + r->offset);
}

static size_t row_list_len(const option_row *r, const fdl_link_options *o)
{
    return count_strings(*(const char *const *const *)(const void *)((const char *)o + r->offset));
}

static int row_set(const option_row *r, const fdl_link_options *o)
{
    if (r->list)
        return row_list_len(r, o) > 0;
    int v = row_int(r, o);
    switch (r->set) {
    case SET_NONZERO: return v != 0;
    case SET_POSITIVE: return v > 0;
    case SET_NONNEG: return v >= 0;
    case SET_ZERO: return v == 0;
    }
    return 0;
}

int fdl_link_option_bounds(const char *name, int *min, int *max)
{
    for (size_t i = 0; name && i < NROWS; i++)
        if (!rows[i].list && rows[i].expect && strcmp(rows[i].name, name) == 0) {
            if (min)
                *min = rows[i].min;
            if (max)
                *max = rows[i].max;
            return 1;
        }
    return 0;
}

static int rows_validate(const fdl_link_options *o, fdl_error *err)
{
    for (size_t i = 0; i < NROWS; i++) {
        const option_row *r = &rows[i];
        if (r->list || !r->expect)
            continue;
        int v = row_int(r, o);
        if (v < r->min || v > r->max)
            return fdl__fail(err, FDL_EINVAL, "invalid %s %d (expected %s)", r->name, v,
                             r->expect);
    }
    return FDL_OK;
}

int fdl__link_options_nvjl_only(const fdl_link_options *o, const char *backend, fdl_error *err)
{
    for (int group = 1; group <= 2; group++) {
        int any = 0;
        for (size_t i = 0; i < NROWS; i++)
            any = any || (rows[i].culink_group == group && row_set(&rows[i], o));
        if (!any)
            continue;
        /* the group's names: "a, b and c are nvJitLink options; not with culink" */
        char text[512];
        size_t n = 0, count = 0, seen = 0;
        for (size_t i = 0; i < NROWS; i++)
            count += rows[i].culink_group == group;
        text[0] = '\0';
        for (size_t i = 0; i < NROWS && n < sizeof text; i++) {
            if (rows[i].culink_group != group)
                continue;
            seen++;
            n += (size_t)snprintf(text + n, sizeof text - n, "%s%s",
                                  seen == 1 ? "" : seen == count ? " and " : ", ", rows[i].user);
        }
        return fdl__fail(err, FDL_EINVAL, "%s are nvJitLink options; not with %s", text, backend);
    }
    return FDL_OK;
}

/* The table's options in nvJitLink's list, in their places (@p view: the checks' view). */
static int rows_emit(const fdl_link *link, int view, fdl__strv *out)
{
    int ok = 1;
    char num[40];
    for (int rank = 1; rank <= (int)NROWS; rank++)
        for (size_t i = 0; i < NROWS; i++) {
            const option_row *r = &rows[i];
            if (r->rank != rank || !r->nvjl || (view && !r->view))
                continue;
            if (r->list) {
                const fdl__strv *v =
                    (const fdl__strv *)(const void *)((const char *)link + r->link_offset);
                for (size_t k = 0; k < v->n; k++)
                    ok = ok && fdl__strv_push(out, r->nvjl, v->v[k]);
                continue;
            }
            if (!row_set(r, &link->opts))
                continue;
            int value = row_int(r, &link->opts);
            if (r->arg == ARG_INT) {
                snprintf(num, sizeof num, r->nvjl, value);
                ok = ok && fdl__strv_push(out, num, NULL);
            } else {
                ok = ok && fdl__strv_push(out, r->nvjl, r->arg == ARG_BIT ? value ? "1" : "0"
                                                                          : NULL);
            }
        }
    return ok;
}

/* The defaults: FDL_LINK_OPTIONS_INIT's. */
fdl_link_options fdl_link_options_init(void)
{
    static const fdl_link_options defaults = FDL_LINK_OPTIONS_INIT;
    return defaults;
}

/* ---- options --------------------------------------------------------------------------------- */

/*
 * sm_NN, sm_NNa or sm_NNf: two to four digits, no leading zero. nvJitLink ends the whole process
 * (exit status 1) when given a one-digit architecture such as sm_9, so the form is checked here.
 */
int fdl__link_arch_parse(const char *arch, unsigned *number, char *suffix)
{
    if (strncmp(arch, "sm_", 3) != 0)
        return 0;
    const char *p = arch + 3;
    if (*p < '1' || *p > '9')
        return 0;
    size_t digits = 0;
    unsigned v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned)(*p - '0');
        digits++;
        p++;
        if (digits > 4)
            return 0;
    }
    if (digits < 2)
        return 0;
    char s = 0;
    if (*p == 'a' || *p == 'f')
        s = *p++;
    if (*p != '\0')
        return 0;
    *number = v;
    *suffix = s;
    return 1;
}

/*
 * Where the struct of each older version ends (from version 2; version 1's fields are copied one
 * by one). A new version adds its predecessor's end here.
 */
#define END_OF(field) (offsetof(fdl_link_options, field) + sizeof(((fdl_link_options *)0)->field))
static const size_t version_end[] = {
    0, 0, offsetof(fdl_link_options, cache), END_OF(cache_dir), END_OF(cache_remote),
    END_OF(lto_report),
};

/* The options of any version, as the current one (defaults for what older versions lack). */
int fdl__link_options_normalise(fdl_link_options *o, const fdl_link_options *in, fdl_error *err)
{
    *o = fdl_link_options_init();
    if (in->version == 1) {
        o->arch = in->arch;
        o->opt_level = in->opt_level;
        o->debug = in->debug;
        o->lineinfo = in->lineinfo;
        o->verbose = in->verbose;
        o->extra = in->extra;
        return FDL_OK;
    }
    if (in->version >= 2 && in->version < FDL_LINK_OPTIONS_VERSION &&
        in->version < sizeof version_end / sizeof version_end[0]) {
        /* an older struct is a prefix of this one: copy only what it has */
        memcpy(o, in, version_end[in->version]);
        o->version = FDL_LINK_OPTIONS_VERSION;
        return FDL_OK;
    }
    if (in->version != FDL_LINK_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "unsupported fdl_link_options version %u (expected %u)",
                         in->version, (unsigned)FDL_LINK_OPTIONS_VERSION);
    *o = *in;
    return FDL_OK;
}

/*
 * The version-4 nvJitLink options (issue 25): each value in nvJitLink 13.0's range, so that a bad
 * one is said here, in one line, rather than as nvJitLink's NVJITLINK_ERROR_UNRECOGNIZED_OPTION.
 */
/*
 * Option texts bounded before NVIDIA's libraries see them (issue 35). Found by a fuzz of option
 * lengths against the real libraries, each in a child (nvJitLink 13.0, NVRTC 13.0): a ptxas
 * option (-Xptxas=OPT through nvJitLink or NVRTC) of 99,964 bytes or more overflows a heap
 * buffer inside ptxas (glibc: "malloc(): corrupted top size"; AddressSanitizer confirms), while
 * 99,963 and below are refused or taken cleanly; every other option text, -Xnvvm, -D, -I and
 * unknown ones, was taken or refused cleanly up to 1,000,000 bytes, the longest tried. The bounds
 * leave a margin below what was seen to crash, and lie far above any real option.
 */
#define PTXAS_OPTION_MAX 65536
#define OPTION_TEXT_MAX 1000000

/* The ptxas option inside @p x when it passes one ("-Xptxas=OPT", "--ptxas-options=OPT"). */
static const char *ptxas_part(const char *x)
{
    if (strncmp(x, "-Xptxas=", 8) == 0)
        return x + 8;
    if (strncmp(x, "--ptxas-options=", 16) == 0)
        return x + 16;
    return NULL;
}

int fdl__link_option_text_ok(const char *list, size_t index, const char *x, int ptxas,
                             fdl_error *err)
{
    size_t n = strlen(x);
    const char *p = ptxas ? x : ptxas_part(x);
    if (p && strlen(p) > PTXAS_OPTION_MAX)
        return fdl__fail(err, FDL_ELIMIT, "%s option %zu ('%.24s...') is %zu bytes: a ptxas "
                         "option may have at most %d (longer ones overflow a buffer in ptxas)",
                         list, index + 1, x, strlen(p), PTXAS_OPTION_MAX);
    if (n > OPTION_TEXT_MAX)
        return fdl__fail(err, FDL_ELIMIT, "%s option %zu ('%.24s...') is %zu bytes: an option "
                         "may have at most %d", list, index + 1, x, n, OPTION_TEXT_MAX);
    return FDL_OK;
}

/* The xptxas options' texts (the numbers are the table's). */
static int validate_xptxas(const fdl_link_options *o, fdl_error *err)
{
    for (size_t i = 0; o->xptxas && o->xptxas[i]; i++) {
        const char *x = o->xptxas[i];
        int rc = fdl__link_option_text_ok("xptxas", i, x, 1, err);
        if (rc != FDL_OK)
            return rc;
        /* ptxas takes options; a word that is not one would be read by it as an input file */
        if (x[0] != '-' || x[1] == '\0' || strpbrk(x, " \t\n"))
            return fdl__fail(err, FDL_EINVAL, "invalid xptxas option '%.64s' (expected one ptxas "
                             "option, e.g. -warn-spills or --def-load-cache=cg)", x);
    }
    return FDL_OK;
}

/* The options on their own, and the combinations no backend accepts. */
int fdl__link_nvrtc_texts_ok(const fdl_nvrtc_options *o, fdl_error *err)
{
    static const char *const names[] = {"cuda extra", "cuda define", "cuda include_dirs"};
    const char *const *lists[] = {o->extra, o->defines, o->include_dirs};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; lists[l] && lists[l][i]; i++) {
            int rc = fdl__link_option_text_ok(names[l], i, lists[l][i], 0, err);
            if (rc != FDL_OK)
                return rc;
        }
    return FDL_OK;
}

int fdl__link_options_validate(const fdl_link_options *o, fdl_error *err)
{
    unsigned number;
    char suffix;
    if (o->arch && strcmp(o->arch, "native") != 0 && !fdl__link_arch_parse(o->arch, &number, &suffix))
        return fdl__fail(err, FDL_EINVAL,
                         "invalid arch '%.64s' (expected sm_NN, e.g. sm_90, or native)", o->arch);
    if ((unsigned)o->backend > FDL_BACKEND_CULINK)
        return fdl__fail(err, FDL_EINVAL, "invalid backend %d", (int)o->backend);
    if ((unsigned)o->lto > FDL_LTO_OFF)
        return fdl__fail(err, FDL_EINVAL, "invalid lto mode %d", (int)o->lto);
    int rc = rows_validate(o, err);
    if (rc != FDL_OK)
        return rc;
    if (o->cache_lease_ms < -1)
        return fdl__fail(err, FDL_EINVAL, "invalid cache_lease_ms %ld (expected milliseconds, 0 "
                         "for no waiting, or -1 for FDLINK_CACHE_LEASE_MS)", o->cache_lease_ms);
    if ((rc = validate_xptxas(o, err)) != FDL_OK)
        return rc;
    size_t nextra = count_strings(o->extra);
    if (nextra > MAX_OPTIONS || count_strings(o->kernels_used) > MAX_OPTIONS ||
        count_strings(o->variables_used) > MAX_OPTIONS || count_strings(o->xptxas) > MAX_OPTIONS)
        return fdl__fail(err, FDL_ELIMIT, "more than %d options in one list", MAX_OPTIONS);
    for (size_t i = 0; i < nextra; i++) {
        const char *x = o->extra[i];
        if ((rc = fdl__link_option_text_ok("extra", i, x, 0, err)) != FDL_OK)
            return rc;
        /* what has a field of its own must go there: the checks depend on it */
        if (strncmp(x, "-arch", 5) == 0)
            return fdl__fail(err, FDL_EINVAL, "extra option '%.64s': set the arch field instead",
                             x);
        if (strcmp(x, "-lto") == 0)
            return fdl__fail(err, FDL_EINVAL, "extra option '-lto': set the lto field instead");
        if (strcmp(x, "-ptx") == 0)
            return fdl__fail(err, FDL_EINVAL,
                             "extra option '-ptx': set the emit_ptx field instead");
        /* fdlink chooses the threads itself unless told: the field, so that it is not said twice */
        if (strncmp(x, "-split-compile=", 15) == 0)
            return fdl__fail(err, FDL_EINVAL,
                             "extra option '%.64s': set the split_compile field instead", x);
    }
    if (o->require_warm < -1 || o->require_warm > 1)
        return fdl__fail(err, FDL_EINVAL, "require_warm is %d (expected -1, 0 or 1)",
                         o->require_warm);
    if (o->emit_ptx && o->lto == FDL_LTO_OFF)
        return fdl__fail(err, FDL_EINVAL,
                         "emit_ptx needs link-time optimisation (the PTX is what LTO makes of "
                         "LTO-IR), but lto is off");
    if ((unsigned)o->cache > FDL_CACHE_OFF)
        return fdl__fail(err, FDL_EINVAL, "invalid cache mode %d", (int)o->cache);
    if (o->cuda && o->cuda->version != FDL_NVRTC_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "unsupported fdl_nvrtc_options version %u "
                         "(expected %u)", o->cuda->version, (unsigned)FDL_NVRTC_OPTIONS_VERSION);
    if (o->cuda && (rc = fdl__link_nvrtc_texts_ok(o->cuda, err)) != FDL_OK)
        return rc;
    return FDL_OK;
}

/* Whether the PTX line at @p p (its end @p end) begins a kernel's or a function's definition:
 * `[.visible|.weak] .entry|.func`, not an `.extern` declaration. */
static int ptx_defines(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    static const char *const linkage[] = {".visible", ".weak"};
    for (size_t i = 0; i < 2; i++) {
        size_t n = strlen(linkage[i]);
        if ((size_t)(end - p) > n && memcmp(p, linkage[i], n) == 0 &&
            (p[n] == ' ' || p[n] == '\t')) {
            p += n;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            break;
        }
    }
    return ((size_t)(end - p) > 6 && memcmp(p, ".entry", 6) == 0 &&
            (p[6] == ' ' || p[6] == '\t')) ||
           ((size_t)(end - p) > 5 && memcmp(p, ".func", 5) == 0 &&
            (p[5] == ' ' || p[5] == '\t' || p[5] == '('));
}

/*
 * The independent units of the link's code, up to @p enough: split compilation shares functions
 * out among its threads, so a program of one (a GEMM whose every call is inlined into one kernel)
 * only pays for the threads. A PTX input counts its definitions (.entry and .func); an input
 * whose functions cannot be told without linking (an NVVM container of LTO-IR is opaque, as are
 * fatbins, archives and host objects until unpacked) counts one; a cubin none (its code is made).
 */
static size_t code_units(const fdl_link *link, size_t enough)
{
    size_t units = 0;
    for (size_t i = 0; i < link->ninputs && units < enough; i++) {
        const fdl__link_input *in = &link->inputs[i];
        if (in->builtin || in->kind == FDL_KIND_CUBIN)
            continue;
        if (in->kind != FDL_KIND_PTX || !in->data) {
            units++;
            continue;
        }
        const char *p = (const char *)in->data, *end = p + in->size;
        while (p < end && units < enough) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *line_end = nl ? nl : end;
            if (ptx_defines(p, line_end))
                units++;
            p = nl ? nl + 1 : end;
        }
    }
    return units;
}

/*
 * The threads of a split compile: the field, or fdlink's choice (-1): every processor ("0", the
 * same word on every host, so that the cache key does not depend on the host) when the link's
 * inputs come to FDL_LINK_PARALLEL_BYTES or more and hold FDL_LINK_PARALLEL_UNITS independent
 * units or more (code_units), else one thread (nvJitLink's default, and no option at all: small
 * links, benchmark 4's, and one large unit, run exactly as raw nvJitLink runs them). Decided by
 * the inputs alone, so that the same inputs give the same cubin whatever ran before.
 */
static int split_threads(const fdl_link *link)
{
    return fdl__link_split_threads(link);
}

int fdl__link_split_threads(const fdl_link *link)
{
    if (link->opts.split_compile >= 0)
        return link->opts.split_compile;
    /* the inputs as given (the cache is looked up before they are unpacked), the toolkit's
     * libcudadevrt left out */
    size_t code = 0;
    for (size_t i = 0; i < link->ninputs; i++)
        if (!link->inputs[i].builtin)
            code += link->inputs[i].size;
    if (code < FDL_LINK_PARALLEL_BYTES)
        return 1;
    return code_units(link, FDL_LINK_PARALLEL_UNITS) >= FDL_LINK_PARALLEL_UNITS ? 0 : 1;
}

int fdl__link_extended_auto(const fdl_link *link)
{
    const fdl_link_options *o = &link->opts;
    if (o->split_compile_extended != -1 || o->split_compile != -1 || !link->lto ||
        link->no_extended || o->isolate == 0)
        return 0;
    const char *env = getenv("FDLINK_LINK_ISOLATE");
    if (o->isolate == -1 && env && strcmp(env, "0") == 0)
        return 0; /* no isolation: no fallback when the linker dies, so not by default */
    /* asked for: its cubin differs from run to run in layout, at any fixed thread count (the
     * same code, placed in another order: nvJitLink 13.0 lays the partitions out as they
     * finish; on the 2-core VM, 64 functions, -split-compile-extended=2, =4 and =0 gave a new
     * cubin in each of 20 runs, 58-124 of 269 sections differing, never a .text one; the two
     * splits below gave the same bytes every time: docs/benchmarks.md, 2026-11-26, h36), so by
     * default fdlink keeps to the deterministic splits (issue 32's deterministic output) */
    env = getenv("FDLINK_SPLIT_COMPILE_EXTENDED");
    if (!env || strcmp(env, "1") != 0)
        return 0;
    return split_threads(link) == 0;
}

/*
 * nvJitLink's options for this link: with @p lto "-lto"; with @p ptx FDL__NVJL_PTX "-ptx" too, and
 * with FDL__NVJL_VIEW "-ptx" at -O0 on one thread, -time left out (the checks' view, postlto.c).
 */
int fdl__link_nvjl_options(const fdl_link *link, int lto, int ptx, fdl__strv *out)
{
    const fdl_link_options *o = &link->opts;
    const int view = ptx == FDL__NVJL_VIEW;
    char num[40];
    memset(out, 0, sizeof *out);
    int ok = fdl__strv_push(out, "-arch=%s", link->arch);
    if (view) {
        ok = ok && fdl__strv_push(out, "-O0", NULL);
    } else if (o->opt_level >= 0) {
        snprintf(num, sizeof num, "-O%d", o->opt_level);
        ok = ok && fdl__strv_push(out, num, NULL);
    }
    /* the table's options, -g to -Xptxas=OPT and -time (not in the view) */
    ok = ok && rows_emit(link, view, out);
    if (!view) {
        /* the optimiser's threads and ptxas's: on their own, each gives 1.3-1.6x on a large LTO
         * link of 16 cores; together 3.4x (bench/README.md, benchmark 9) */
        int threads = split_threads(link);
        if (lto && fdl__link_extended_auto(link)) {
            /* the most aggressive split (LTO partitioned, each part optimised and assembled on
             * its own thread): 6.84x nvJitLink's defaults at 64 functions on 32 cores, where
             * the two splits below give 2.83x (bench/README.md, benchmark 9); it has killed
             * nvJitLink 13.0 on some programs, so it runs isolated and falls back to them */
            snprintf(num, sizeof num, "-split-compile-extended=%d", link->jobs.threads);
            ok = ok && fdl__strv_push(out, num, NULL);
        } else if (threads != 1) {
            /* "0" in the keys (the same word on every host); the build's slots in the run */
            snprintf(num, sizeof num, "%d", threads == 0 ? link->jobs.threads : threads);
            ok = ok && fdl__strv_push(out, "-split-compile=%s", num) &&
                 fdl__strv_push(out, "-Xptxas=--split-compile=%s", num);
        }
        if (o->split_compile_extended >= 0 && o->split_compile_extended != 1 && lto) {
            snprintf(num, sizeof num, "-split-compile-extended=%d", o->split_compile_extended);
            ok = ok && fdl__strv_push(out, num, NULL);
        }
    }
    for (size_t i = 0; i < link->extra.n; i++)
        ok = ok && fdl__strv_push(out, link->extra.v[i], NULL);
    if (lto)
        ok = ok && fdl__strv_push(out, "-lto", NULL);
    if (ptx != FDL__NVJL_CUBIN)
        ok = ok && fdl__strv_push(out, "-ptx", NULL);
    if (!ok)
        fdl__strv_free(out);
    return ok;
}

void fdl__link_virtual_arch(const fdl_link *link, char *out, size_t size)
{
    snprintf(out, size, "compute_%u%s", link->arch_number,
             link->arch_suffix == 'a' ? "a" : link->arch_suffix == 'f' ? "f" : "");
}

int fdl__nvrtc_user_whole_program(const char *const *extra)
{
    for (size_t i = 0; extra && extra[i]; i++) {
        const char *o = extra[i];
        if (strcmp(o, "-ewp") == 0 || strcmp(o, "--extensible-whole-program") == 0 ||
            strcmp(o, "-rdc=false") == 0 || strcmp(o, "--relocatable-device-code=false") == 0)
            return 1;
    }
    return 0;
}

int fdl__link_nvrtc_args(const fdl_link *link, int ltoir, const char *const *user_includes,
                         int toolkit_includes, int rdc, fdl__strv *args)
{
    char arch[32], include[FDL__CUDA_INCLUDE_MAX][FDL__CUDA_PATH_MAX];
    fdl__link_virtual_arch(link, arch, sizeof arch);
    int ok = fdl__strv_push(args, "-arch=%s", arch) &&
             (!rdc || fdl__strv_push(args, "-rdc=true", NULL));
    if (ltoir)
        ok = ok && fdl__strv_push(args, "-dlto", NULL);
    /* nvcc's search order: the user's -I, then the toolkit's folders as nvcc.profile names them
     * (CUDA 13: include, then include/cccl); the cache key's include scan follows the same */
    for (size_t i = 0; user_includes && user_includes[i]; i++)
        ok = ok && fdl__strv_push(args, "-I%s", user_includes[i]);
    if (toolkit_includes) {
        size_t ninc = fdl__cuda_include_dirs(include, FDL__CUDA_INCLUDE_MAX, NULL, 0);
        for (size_t i = 0; i < ninc; i++)
            ok = ok && fdl__strv_push(args, "-I%s", include[i]);
    }
    return ok;
}
