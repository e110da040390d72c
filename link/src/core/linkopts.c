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

/* ---- the option table ------------------------------------------------------------------------ */

#define STR_(x) #x
#define STR(x) STR_(x)

/* When an option is set (passed to nvJitLink, refused by cuLink). */
enum { SET_NONZERO, SET_POSITIVE, SET_NONNEG, SET_ZERO, SET_LIST };
/* What nvJitLink's spelling takes: nothing, the value (%d), "0"/"1" (%s), each string (%s). */
enum { ARG_NONE, ARG_INT, ARG_BIT, ARG_STR };

/* The enums' words, by value (fdl_link_backend, fdl_lto_mode, fdl_cache_mode, fdl_cuda_output). */
static const char *const backend_words[] = {"auto", "nvjitlink", "culink", NULL};
static const char *const lto_words[] = {"auto", "on", "off", NULL};
static const char *const cache_words[] = {"auto", "on", "off", NULL};
static const char *const output_words[] = {"auto", "ptx", "ltoir", NULL};

/*
 * One row per option a door sets (fdl_link_options' fields and fdl_nvrtc_options'): what
 * fdl_link_option_next shows of it (its name, the field's, as the messages say it; kind; bounds,
 * inclusive: a number outside is "invalid NAME VALUE (expected EXPECT)" where EXPECT is set, the
 * others are checked by fdl__link_options_validate with their own words; default; words; help),
 * then the field, the name cuLink's refusal says, when it is set, nvJitLink's spelling and the
 * place in nvJitLink's option list (1, 2, ...; 0: fdl__link_nvjl_options writes it itself, or
 * none), and which cuLink refusal names it (0: cuLink takes it). Rows run in the order the
 * checks and cuLink's refusals name them; adding an nvJitLink option is its field and one row
 * here, for every door.
 */
typedef struct {
    fdl_link_option pub; /* first: fdl_link_option_next's pointers are the rows' */
    size_t offset;       /* in fdl_link_options (in fdl_nvrtc_options with FDL_OPTION_NVRTC) */
    const char *user;    /* the name cuLink's refusal says */
    size_t link_offset;  /* a list passed to nvJitLink: its copy in fdl_link (an fdl__strv) */
    int set, arg;
    const char *nvjl;    /* nvJitLink's spelling, NULL where none or written by hand */
    int rank, view;      /* view: also in the checks' view (FDL__NVJL_VIEW) */
    int culink_group;    /* 0 cuLink takes it; 1, 2: the refusal that names it */
} option_row;

#define NVJL_ONLY(group) ((group) ? FDL_OPTION_NVJITLINK_ONLY : 0u)
/* a number passed to nvJitLink (or checked here) */
#define INT_ROW(field, kind, user, min, max, def, expect, set, arg, nvjl, rank, view, group, help) \
    {{#field, kind, NVJL_ONLY(group), min, max, def, NULL, expect, help},                          \
     offsetof(fdl_link_options, field), user, 0, set, arg, nvjl, rank, view, group}
/* a list of strings each passed to nvJitLink */
#define LIST_ROW(field, user, nvjl, rank, group, help)                                            \
    {{#field, FDL_OPTION_LIST, NVJL_ONLY(group), 0, 0, 0, NULL, NULL, help},                      \
     offsetof(fdl_link_options, field), user, offsetof(fdl_link, field), SET_LIST, ARG_STR, nvjl, \
     rank, 1, group}
/* an option of fdlink's own, or one written by hand (not in nvJitLink's list from here) */
#define OWN_ROW(field, kind, flags, min, max, def, words, expect, help)                           \
    {{#field, kind, flags, min, max, def, words, expect, help},                                    \
     offsetof(fdl_link_options, field), NULL, 0, SET_NONZERO, ARG_NONE, NULL, 0, 0, 0}
/* a field of fdl_nvrtc_options, named as the doors name it */
#define NVRTC_ROW(name, field, kind, min, max, words, help)                                       \
    {{name, kind, FDL_OPTION_NVRTC, min, max, 0, words, NULL, help},                               \
     offsetof(fdl_nvrtc_options, field), NULL, 0, SET_NONZERO, ARG_NONE, NULL, 0, 0, 0}

#define TRI "0, 1, or -1 for the default"
#define THREADS "a thread count 1.." STR(MAX_THREADS)
#define FLAG(field, help) OWN_ROW(field, FDL_OPTION_BOOL, 0, INT_MIN, INT_MAX, 0, NULL, NULL, help)
#define TEXT(field, help) OWN_ROW(field, FDL_OPTION_STRING, 0, 0, 0, 0, NULL, NULL, help)
#define ENUM(field, words, help) OWN_ROW(field, FDL_OPTION_ENUM, 0, 0, 2, 0, words, NULL, help)

static const option_row rows[] = {
    TEXT(arch, "the target architecture, sm_NN, sm_NNa or sm_NNf; NULL or native for the current "
               "device's"),
    INT_ROW(opt_level, FDL_OPTION_INT, "-O", -1, 3, -1, "0..3, or -1 for the backend's default",
            SET_NONNEG, ARG_INT, NULL, 0, 1, 0,
            "the optimisation level 0..3 (nvJitLink: 0 or 3), -1 for the backend's default"),
    INT_ROW(debug, FDL_OPTION_BOOL, "-g", INT_MIN, INT_MAX, 0, NULL, SET_NONZERO, ARG_NONE, "-g",
            1, 1, 0, "device debug information (-g)"),
    INT_ROW(lineinfo, FDL_OPTION_BOOL, "lineinfo", INT_MIN, INT_MAX, 0, NULL, SET_NONZERO,
            ARG_NONE, "-lineinfo", 2, 1, 0, "line information (-lineinfo)"),
    INT_ROW(verbose, FDL_OPTION_BOOL, "verbose", INT_MIN, INT_MAX, 0, NULL, SET_NONZERO,
            ARG_NONE, "-verbose", 3, 1, 0, "the backend writes details to the info log"),
    OWN_ROW(extra, FDL_OPTION_LIST, 0, 0, 0, 0, NULL, NULL, "raw nvJitLink options"),
    ENUM(backend, backend_words, "the linker: auto (nvJitLink when it loads, else cuLink), "
                                 "nvjitlink or culink"),
    ENUM(lto, lto_words, "link-time optimisation: auto (on when an input carries LTO-IR), on or "
                         "off"),
    FLAG(emit_ptx, "keep the post-LTO PTX (every input LTO-IR)"),
    INT_ROW(maxrregcount, FDL_OPTION_INT, "maxrregcount", 0, 65535, 0,
            "0 for no limit, or a register count", SET_POSITIVE, ARG_INT, "-maxrregcount=%d", 4,
            1, 0, "most registers per thread, 0 for no limit"),
    INT_ROW(ftz, FDL_OPTION_TRI, "ftz", -1, 1, -1, TRI, SET_NONNEG, ARG_BIT, "-ftz=%s", 5, 1, 1,
            "-ftz: flush denormals to zero; -1 for the default"),
    INT_ROW(prec_div, FDL_OPTION_TRI, "prec-div", -1, 1, -1, TRI, SET_NONNEG, ARG_BIT,
            "-prec-div=%s", 6, 1, 1, "-prec-div: IEEE division; -1 for the default"),
    INT_ROW(prec_sqrt, FDL_OPTION_TRI, "prec-sqrt", -1, 1, -1, TRI, SET_NONNEG, ARG_BIT,
            "-prec-sqrt=%s", 7, 1, 1, "-prec-sqrt: IEEE square root; -1 for the default"),
    INT_ROW(fma, FDL_OPTION_TRI, "fma", -1, 1, -1, TRI, SET_NONNEG, ARG_BIT, "-fma=%s", 8, 1, 1,
            "-fma: fused multiply-add; -1 for the default"),
    LIST_ROW(kernels_used, "kernels-used", "-kernels-used=%s", 9, 1,
             "the kernels LTO keeps (-kernels-used)"),
    LIST_ROW(variables_used, "variables-used", "-variables-used=%s", 10, 1,
             "the variables LTO keeps (-variables-used)"),
    FLAG(cudadevrt, "link the toolkit's libcudadevrt.a (device-side launches)"),
    NVRTC_ROW("defines", defines, FDL_OPTION_LIST, 0, 0, NULL,
              "CUDA C inputs: NAME or NAME=VALUE (-D)"),
    NVRTC_ROW("include_dirs", include_dirs, FDL_OPTION_LIST, 0, 0, NULL,
              "CUDA C inputs: include directories (-I)"),
    NVRTC_ROW("std", std, FDL_OPTION_STRING, 0, 0, NULL,
              "CUDA C inputs: the language standard (c++17), NULL for NVRTC's default"),
    NVRTC_ROW("cuda_output", output, FDL_OPTION_ENUM, 0, 2, output_words,
              "CUDA C inputs: auto (LTO-IR when the link can use it, else PTX), ptx or ltoir"),
    NVRTC_ROW("no_toolkit_include", no_toolkit_include, FDL_OPTION_BOOL, INT_MIN, INT_MAX, NULL,
              "CUDA C inputs: no <toolkit>/include"),
    NVRTC_ROW("nvrtc_extra", extra, FDL_OPTION_LIST, 0, 0, NULL,
              "CUDA C inputs: raw NVRTC options"),
    ENUM(cache, cache_words, "the persistent cache: auto (on unless FDLINK_CACHE=0), on or off"),
    TEXT(cache_dir, "the cache directory, NULL for the default"),
    INT_ROW(jobs, FDL_OPTION_INT, "jobs", 0, MAX_THREADS, 0, THREADS ", or 0 for FDLINK_JOBS",
            SET_POSITIVE, ARG_INT, NULL, 0, 0, 0,
            "most threads of a split on every processor, 0 for FDLINK_JOBS"),
    INT_ROW(isolate, FDL_OPTION_TRI, "isolate", -1, 1, -1, "0, 1, or -1 for FDLINK_LINK_ISOLATE",
            SET_NONNEG, ARG_INT, NULL, 0, 0, 0,
            "run nvJitLink in a child process; -1 for FDLINK_LINK_ISOLATE"),
    INT_ROW(time, FDL_OPTION_BOOL, "time", 0, 1, 0, "0 or 1", SET_NONZERO, ARG_NONE, "-time", 16,
            0, 2, "nvJitLink's timings in the info log (-time); such a link is not cached"),
    LIST_ROW(xptxas, "xptxas", "-Xptxas=%s", 15, 2, "options for ptxas (-Xptxas=OPT each)"),
    INT_ROW(optimize_unused_variables, FDL_OPTION_BOOL, "optimize-unused-variables", 0, 1, 0,
            "0 or 1", SET_NONZERO, ARG_NONE, "-optimize-unused-variables", 11, 1, 2,
            "LTO may drop variables no device code uses (-optimize-unused-variables)"),
    INT_ROW(split_compile, FDL_OPTION_INT, "split-compile", -1, MAX_THREADS, -1,
            THREADS ", 0 for every processor, or -1 for fdlink's choice", SET_NONNEG, ARG_INT,
            NULL, 0, 0, 2, "threads for LTO and ptxas: 0 every processor, -1 fdlink's choice"),
    INT_ROW(split_compile_extended, FDL_OPTION_INT, "split-compile-extended", -1, MAX_THREADS,
            -1, THREADS ", 0 for every processor, or -1 for off", SET_NONNEG, ARG_INT, NULL, 0, 0,
            2, "-split-compile-extended: LTO split further (0 every processor); -1 or 1 off"),
    INT_ROW(jump_table_density, FDL_OPTION_INT, "jump-table-density", -1, 101, -1,
            "a percentage 0..101, or -1 for the default", SET_NONNEG, ARG_INT,
            "-jump-table-density=%d", 12, 1, 2,
            "-jump-table-density: the switch density from which LTO makes a jump table"),
    INT_ROW(jl_cache, FDL_OPTION_TRI, "no-cache", -1, 1, -1, TRI, SET_ZERO, ARG_NONE, "-no-cache",
            13, 1, 2, "nvJitLink's own cache: 0 passes -no-cache; -1 for the default (kept)"),
    /* nvJitLink 13.0.88 refuses its own documented -device-stack-protector ("unrecognized
     * option"); ptxas, which makes the code of every input, LTO-IR included, takes it */
    INT_ROW(device_stack_protector, FDL_OPTION_BOOL, "device-stack-protector", 0, 1, 0, "0 or 1",
            SET_NONZERO, ARG_NONE, "-Xptxas=--device-stack-protector=true", 14, 1, 2,
            "stack canaries in device code"),
    TEXT(cache_remote, "the cache's remote stores (FDLINK_CACHE_REMOTE's form), NULL for the "
                       "environment's, \"\" for none"),
    OWN_ROW(cache_lease_ms, FDL_OPTION_INT, FDL_OPTION_LONG, -1, LONG_MAX, -1, NULL,
            "milliseconds, 0 for no waiting, or -1 for FDLINK_CACHE_LEASE_MS",
            "how long a miss waits for another process's link of the same key; -1 for "
            "FDLINK_CACHE_LEASE_MS"),
    FLAG(lto_report, "a note per declared function: calls inlined, or why they stayed calls"),
    OWN_ROW(require_warm, FDL_OPTION_TRI, 0, -1, 1, 0, NULL, NULL,
            "1: a step that misses the cache is an error; -1 never; 0 for FDLINK_REQUIRE_WARM"),
};
#define NROWS (sizeof rows / sizeof rows[0])

const char *fdl_link_backend_name(fdl_link_backend backend)
{
    return (unsigned)backend <= FDL_BACKEND_CULINK ? backend_words[backend] : "unknown";
}

/* The field of row @p r in @p o, or in @p c for an NVRTC option. */
static void *row_field(const option_row *r, fdl_link_options *o, fdl_nvrtc_options *c)
{
    return (char *)((r->pub.flags & FDL_OPTION_NVRTC) ? (void *)c : (void *)o) + r->offset;
}

static long row_number(const option_row *r, const fdl_link_options *o,
                       const fdl_nvrtc_options *c)
{
    const void *f = row_field(r, (fdl_link_options *)o, (fdl_nvrtc_options *)c);
    return (r->pub.flags & FDL_OPTION_LONG) ? *(const long *)f : (long)*(const int *)f;
}

static int row_int(const option_row *r, const fdl_link_options *o)
{
    return (int)row_number(r, o, NULL);
}

static size_t row_list_len(const option_row *r, const fdl_link_options *o)
{
    return count_strings(*(const char *const *const *)(const void *)((const char *)o + r->offset));
}

static int row_set(const option_row *r, const fdl_link_options *o)
{
    if (r->pub.kind == FDL_OPTION_LIST)
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

/* A row whose bounds the rows' check says in its own words (the others' checks are by hand). */
static int row_checked(const option_row *r)
{
    return r->pub.kind != FDL_OPTION_LIST && r->pub.expect;
}

int fdl_link_option_bounds(const char *name, int *min, int *max)
{
    const fdl_link_option *p = fdl_link_option_by_name(name);
    if (!p || !row_checked((const option_row *)(const void *)p) || (p->flags & FDL_OPTION_LONG))
        return 0;
    if (min)
        *min = (int)p->min;
    if (max)
        *max = (int)p->max;
    return 1;
}

static int rows_validate(const fdl_link_options *o, fdl_error *err)
{
    for (size_t i = 0; i < NROWS; i++) {
        const option_row *r = &rows[i];
        if (!row_checked(r))
            continue;
        long v = row_number(r, o, NULL);
        if (v < r->pub.min || v > r->pub.max)
            return fdl__fail(err, FDL_EINVAL, "invalid %s %ld (expected %s)", r->pub.name, v,
                             r->pub.expect);
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
            if (r->pub.kind == FDL_OPTION_LIST) {
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

/* ---- the table, public (issue 42) ------------------------------------------------------------ */

const fdl_link_option *fdl_link_option_next(const fdl_link_option *prev)
{
    if (!prev)
        return &rows[0].pub;
    for (size_t i = 0; i + 1 < NROWS; i++)
        if (prev == &rows[i].pub)
            return &rows[i + 1].pub;
    return NULL;
}

const fdl_link_option *fdl_link_option_by_name(const char *name)
{
    for (size_t i = 0; name && i < NROWS; i++)
        if (strcmp(rows[i].pub.name, name) == 0)
            return &rows[i].pub;
    return NULL;
}

static const char *type_name(fdl_option_type type)
{
    return type == FDL_VALUE_NUMBER ? "a number" : type == FDL_VALUE_TEXT ? "text" : "a list";
}

/* The words of an enum as a message says them: "auto, nvjitlink or culink". */
static void words_text(const char *const *words, char *buf, size_t size)
{
    size_t n = 0, count = count_strings(words);
    buf[0] = '\0';
    for (size_t i = 0; i < count && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s",
                              i == 0 ? "" : i + 1 == count ? " or " : ", ", words[i]);
}

/* Row @p r's field in @p o (or @p c) takes @p v, already checked. */
static void row_store(const option_row *r, fdl_link_options *o, fdl_nvrtc_options *c,
                      const fdl_option_value *v, long number)
{
    void *f = row_field(r, o, c);
    switch (r->pub.kind) {
    case FDL_OPTION_STRING:
        *(const char **)f = v->text;
        break;
    case FDL_OPTION_LIST:
        *(const char *const **)f = v->list;
        break;
    default:
        if (r->pub.flags & FDL_OPTION_LONG)
            *(long *)f = number;
        else
            *(int *)f = (int)number;
        break;
    }
}

int fdl_link_options_set(fdl_link_options *opts, fdl_nvrtc_options *cuda, const char *name,
                         const fdl_option_value *value, fdl_error *err)
{
    if (!FDL__CHECK_ARG(opts) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(value))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_options_set: opts, name or value is NULL");
    if (opts->version != FDL_LINK_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "fdl_link_options_set: fdl_link_options version %u "
                         "(expected %u: start from FDL_LINK_OPTIONS_INIT)", opts->version,
                         (unsigned)FDL_LINK_OPTIONS_VERSION);
    const option_row *r = (const option_row *)(const void *)fdl_link_option_by_name(name);
    if (!r)
        return fdl__fail(err, FDL_EINVAL, "unknown link option '%.64s'", name);
    const char *what = r->pub.name;
    if ((r->pub.flags & FDL_OPTION_NVRTC) && !cuda)
        return fdl__fail(err, FDL_EINVAL, "option %s is one of fdl_nvrtc_options, and none was "
                         "given", what);
    if ((r->pub.flags & FDL_OPTION_NVRTC) && cuda->version != FDL_NVRTC_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "fdl_link_options_set: fdl_nvrtc_options version %u "
                         "(expected %u: start from FDL_NVRTC_OPTIONS_INIT)", cuda->version,
                         (unsigned)FDL_NVRTC_OPTIONS_VERSION);
    fdl_option_type want = r->pub.kind == FDL_OPTION_STRING ? FDL_VALUE_TEXT
                           : r->pub.kind == FDL_OPTION_LIST ? FDL_VALUE_LIST
                                                            : FDL_VALUE_NUMBER;
    long number = value->number;
    char words[128];
    if (r->pub.kind == FDL_OPTION_ENUM && value->type == FDL_VALUE_TEXT) {
        /* an enum by its word */
        size_t i = 0;
        while (r->pub.words[i] && (!value->text || strcmp(r->pub.words[i], value->text) != 0))
            i++;
        if (!r->pub.words[i]) {
            words_text(r->pub.words, words, sizeof words);
            return fdl__fail(err, FDL_EINVAL, "invalid %s '%.64s' (expected %s)", what,
                             value->text ? value->text : "(null)", words);
        }
        number = (long)i;
    } else if (value->type != want) {
        return fdl__fail(err, FDL_EINVAL, "option %s takes %s, not %s", what,
                         r->pub.kind == FDL_OPTION_ENUM ? "a word or a number" : type_name(want),
                         type_name(value->type));
    }
    if (r->pub.kind == FDL_OPTION_ENUM && (number < r->pub.min || number > r->pub.max)) {
        words_text(r->pub.words, words, sizeof words);
        return fdl__fail(err, FDL_EINVAL, "invalid %s %ld (expected %s)", what, number, words);
    }
    if (want == FDL_VALUE_NUMBER && !(r->pub.flags & FDL_OPTION_LONG) &&
        (number < INT_MIN || number > INT_MAX))
        return fdl__fail(err, FDL_EINVAL, "invalid %s %ld (expected %s)", what, number,
                         r->pub.expect ? r->pub.expect : "an int");
    /* checked on its own, the others at their defaults: what fdl_link_create says of it */
    fdl_link_options alone = fdl_link_options_init();
    fdl_nvrtc_options alone_cuda = FDL_NVRTC_OPTIONS_INIT;
    alone.cuda = &alone_cuda;
    row_store(r, &alone, &alone_cuda, value, number);
    int rc = fdl__link_options_validate(&alone, err);
    if (rc != FDL_OK)
        return rc;
    row_store(r, opts, cuda, value, number);
    return FDL_OK;
}

int fdl_link_options_get(const fdl_link_options *opts, const char *name, fdl_option_value *out,
                         fdl_error *err)
{
    if (!FDL__CHECK_ARG(opts) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_options_get: opts, name or out is NULL");
    memset(out, 0, sizeof *out);
    const option_row *r = (const option_row *)(const void *)fdl_link_option_by_name(name);
    if (!r)
        return fdl__fail(err, FDL_EINVAL, "unknown link option '%.64s'", name);
    fdl_link_options o;
    int rc = fdl__link_options_normalise(&o, opts, err);
    if (rc != FDL_OK)
        return rc;
    fdl_nvrtc_options c = FDL_NVRTC_OPTIONS_INIT;
    if (o.cuda && o.cuda->version == FDL_NVRTC_OPTIONS_VERSION)
        c = *o.cuda;
    const void *f = row_field(r, &o, &c);
    switch (r->pub.kind) {
    case FDL_OPTION_STRING:
        out->type = FDL_VALUE_TEXT;
        out->text = *(const char *const *)f;
        break;
    case FDL_OPTION_LIST:
        out->type = FDL_VALUE_LIST;
        out->list = *(const char *const *const *)f;
        break;
    default:
        out->type = FDL_VALUE_NUMBER;
        out->number = row_number(r, &o, &c);
        if (r->pub.kind == FDL_OPTION_ENUM && out->number >= 0 && out->number <= r->pub.max)
            out->text = r->pub.words[out->number];
        break;
    }
    return FDL_OK;
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
    /* cache_lease_ms among them: its row says its words */
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
