/*
 * Link options: their versions, their validation, the architecture's form, and the nvJitLink
 * option list a link passes (the link itself, its checks' post-LTO runs and the cache keys).
 */
#define _POSIX_C_SOURCE 200809L
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

static int tristate_ok(int v)
{
    return v >= -1 && v <= 1;
}

/* The options of any version, as the current one (defaults for what older versions lack). */
int fdl__link_options_normalise(fdl_link_options *o, const fdl_link_options *in, fdl_error *err)
{
    static const fdl_link_options defaults = FDL_LINK_OPTIONS_INIT;
    *o = defaults;
    if (in->version == 1) {
        o->arch = in->arch;
        o->opt_level = in->opt_level;
        o->debug = in->debug;
        o->lineinfo = in->lineinfo;
        o->verbose = in->verbose;
        o->extra = in->extra;
        return FDL_OK;
    }
    if (in->version == 2) {
        /* a version-2 struct ends before `cache`: copy only what it has */
        memcpy(o, in, offsetof(fdl_link_options, cache));
        o->version = FDL_LINK_OPTIONS_VERSION;
        o->cache = defaults.cache;
        o->cache_dir = defaults.cache_dir;
        return FDL_OK;
    }
    if (in->version == 3) {
        /* a version-3 struct ends with `cache_dir` */
        memcpy(o, in, offsetof(fdl_link_options, cache_dir) + sizeof in->cache_dir);
        o->version = FDL_LINK_OPTIONS_VERSION;
        return FDL_OK;
    }
    if (in->version == 4) {
        /* a version-4 struct ends with `cache_remote` */
        memcpy(o, in, offsetof(fdl_link_options, cache_remote) + sizeof in->cache_remote);
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

static int validate_jl_options(const fdl_link_options *o, fdl_error *err)
{
    static const char *const flag_names[] = {"time", "optimize_unused_variables",
                                             "device_stack_protector"};
    const int flags[] = {o->time, o->optimize_unused_variables, o->device_stack_protector};
    for (size_t i = 0; i < 3; i++)
        if (flags[i] != 0 && flags[i] != 1)
            return fdl__fail(err, FDL_EINVAL, "invalid %s %d (expected 0 or 1)", flag_names[i],
                             flags[i]);
    if (!tristate_ok(o->jl_cache))
        return fdl__fail(err, FDL_EINVAL, "invalid jl_cache %d (expected 0, 1, or -1 for the "
                         "default)", o->jl_cache);
    if (o->split_compile < -1 || o->split_compile > MAX_THREADS)
        return fdl__fail(err, FDL_EINVAL, "invalid split_compile %d (expected a thread count "
                         "1..%d, 0 for every processor, or -1 for fdlink's choice)",
                         o->split_compile, MAX_THREADS);
    if (o->split_compile_extended < -1 || o->split_compile_extended > MAX_THREADS)
        return fdl__fail(err, FDL_EINVAL, "invalid split_compile_extended %d (expected a thread "
                         "count 1..%d, 0 for every processor, or -1 for off)",
                         o->split_compile_extended, MAX_THREADS);
    if (o->jump_table_density < -1 || o->jump_table_density > 101)
        return fdl__fail(err, FDL_EINVAL, "invalid jump_table_density %d (expected a percentage "
                         "0..101, or -1 for the default)", o->jump_table_density);
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
    if (o->opt_level < -1 || o->opt_level > 3)
        return fdl__fail(err, FDL_EINVAL,
                         "invalid opt_level %d (expected 0..3, or -1 for the backend's default)",
                         o->opt_level);
    if ((unsigned)o->backend > FDL_BACKEND_CULINK)
        return fdl__fail(err, FDL_EINVAL, "invalid backend %d", (int)o->backend);
    if ((unsigned)o->lto > FDL_LTO_OFF)
        return fdl__fail(err, FDL_EINVAL, "invalid lto mode %d", (int)o->lto);
    if (o->maxrregcount < 0 || o->maxrregcount > 65535)
        return fdl__fail(err, FDL_EINVAL, "invalid maxrregcount %d (expected 0 for no limit, or "
                         "a register count)", o->maxrregcount);
    static const char *const tri_names[] = {"ftz", "prec_div", "prec_sqrt", "fma"};
    const int tri[] = {o->ftz, o->prec_div, o->prec_sqrt, o->fma};
    for (size_t i = 0; i < 4; i++)
        if (!tristate_ok(tri[i]))
            return fdl__fail(err, FDL_EINVAL, "invalid %s %d (expected 0, 1, or -1 for the "
                             "default)", tri_names[i], tri[i]);
    if (o->cache_lease_ms < -1)
        return fdl__fail(err, FDL_EINVAL, "invalid cache_lease_ms %ld (expected milliseconds, 0 "
                         "for no waiting, or -1 for FDLINK_CACHE_LEASE_MS)", o->cache_lease_ms);
    if (o->jobs < 0 || o->jobs > MAX_THREADS)
        return fdl__fail(err, FDL_EINVAL, "invalid jobs %d (expected a thread count 1..%d, or 0 "
                         "for FDLINK_JOBS)", o->jobs, MAX_THREADS);
    if (!tristate_ok(o->isolate))
        return fdl__fail(err, FDL_EINVAL, "invalid isolate %d (expected 0, 1, or -1 for "
                         "FDLINK_LINK_ISOLATE)", o->isolate);
    int rc = validate_jl_options(o, err);
    if (rc != FDL_OK)
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
    /* asked for: its cubin differs from run to run in layout (the same code, placed in another
     * order: measured on the 2-core VM, 64 functions, two runs differ in 212,042 of 1,650,464
     * bytes, where the two splits below give the same bytes every time), so by default fdlink
     * keeps to the deterministic splits (issue 32's deterministic output) */
    env = getenv("FDLINK_SPLIT_COMPILE_EXTENDED");
    if (!env || strcmp(env, "1") != 0)
        return 0;
    return split_threads(link) == 0;
}

/*
 * nvJitLink's options for this link: with @p lto "-lto"; with @p ptx FDL__JL_PTX "-ptx" too, and
 * with FDL__JL_VIEW "-ptx" at -O0 on one thread, -time left out (the checks' view, postlto.c).
 */
int fdl__link_jl_options(const fdl_link *link, int lto, int ptx, fdl__strv *out)
{
    const fdl_link_options *o = &link->opts;
    const int view = ptx == FDL__JL_VIEW;
    char num[40];
    memset(out, 0, sizeof *out);
    int ok = fdl__strv_push(out, "-arch=%s", link->arch);
    if (view) {
        ok = ok && fdl__strv_push(out, "-O0", NULL);
    } else if (o->opt_level >= 0) {
        snprintf(num, sizeof num, "-O%d", o->opt_level);
        ok = ok && fdl__strv_push(out, num, NULL);
    }
    if (o->debug)
        ok = ok && fdl__strv_push(out, "-g", NULL);
    if (o->lineinfo)
        ok = ok && fdl__strv_push(out, "-lineinfo", NULL);
    if (o->verbose)
        ok = ok && fdl__strv_push(out, "-verbose", NULL);
    if (o->maxrregcount > 0) {
        snprintf(num, sizeof num, "-maxrregcount=%d", o->maxrregcount);
        ok = ok && fdl__strv_push(out, num, NULL);
    }
    static const char *const tri_flags[] = {"-ftz=%s", "-prec-div=%s", "-prec-sqrt=%s",
                                            "-fma=%s"};
    const int tri[] = {o->ftz, o->prec_div, o->prec_sqrt, o->fma};
    for (size_t i = 0; i < 4; i++)
        if (tri[i] >= 0)
            ok = ok && fdl__strv_push(out, tri_flags[i], tri[i] ? "1" : "0");
    for (size_t i = 0; i < link->kernels_used.n; i++)
        ok = ok && fdl__strv_push(out, "-kernels-used=%s", link->kernels_used.v[i]);
    for (size_t i = 0; i < link->variables_used.n; i++)
        ok = ok && fdl__strv_push(out, "-variables-used=%s", link->variables_used.v[i]);
    if (o->optimize_unused_variables)
        ok = ok && fdl__strv_push(out, "-optimize-unused-variables", NULL);
    if (o->jump_table_density >= 0) {
        snprintf(num, sizeof num, "-jump-table-density=%d", o->jump_table_density);
        ok = ok && fdl__strv_push(out, num, NULL);
    }
    if (o->jl_cache == 0)
        ok = ok && fdl__strv_push(out, "-no-cache", NULL);
    /* nvJitLink 13.0.88 refuses its own documented -device-stack-protector ("unrecognized
     * option"); ptxas, which makes the code of every input, LTO-IR included, takes it */
    if (o->device_stack_protector)
        ok = ok && fdl__strv_push(out, "-Xptxas=--device-stack-protector=true", NULL);
    for (size_t i = 0; i < link->xptxas.n; i++)
        ok = ok && fdl__strv_push(out, "-Xptxas=%s", link->xptxas.v[i]);
    if (!view) {
        if (o->time)
            ok = ok && fdl__strv_push(out, "-time", NULL);
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
    if (ptx != FDL__JL_CUBIN)
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
