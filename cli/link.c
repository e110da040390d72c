/* fdlink link: device code of any kind into a cubin. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

/* ---- the link options, one row each: parsed and shown in the help from here ---- */
#define LA(field) offsetof(cli_link_args, field)

static int take_backend(void *t, const cli_opt *o, const char *cmd, const char *arg,
                        const char *v)
{
    cli_link_args *a = t;
    (void)arg;
    /* the library's words (its option table), but the default, auto, which --backend leaves
     * out: not given is auto */
    const fdl_link_option *backend = fdl_link_option_by_name("backend");
    for (long i = 0; v && backend->words[i]; i++)
        if (i != backend->def && strcmp(v, backend->words[i]) == 0) {
            a->opts.backend = (fdl_link_backend)i;
            return 0;
        }
    return cli_usage_error(cmd, "%s", o->bad);
}

static int take_device(void *t, const cli_opt *o, const char *cmd, const char *arg,
                       const char *v)
{
    (void)arg;
    return cli_parse_device(v, &((cli_link_args *)t)->device) ? 0
                                                               : cli_usage_error(cmd, "%s", o->bad);
}

static int take_emit_ptx(void *t, const cli_opt *o, const char *cmd, const char *arg,
                         const char *v)
{
    cli_link_args *a = t;
    if (!v)
        return cli_usage_error(cmd, o->bad, arg);
    a->ptx_path = v;
    a->opts.emit_ptx = 1;
    return 0;
}

static int take_kind(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    cli_link_args *a = t;
    const char *colon = v ? strchr(v, ':') : NULL;
    char kind_name[32];
    fdl_error kerr = FDL_ERROR_INIT;
    (void)arg;
    if (!colon || !colon[1] || (size_t)(colon - v) >= sizeof kind_name)
        return cli_usage_error(cmd, "%s", o->bad);
    memcpy(kind_name, v, (size_t)(colon - v));
    kind_name[colon - v] = '\0';
    if (fdl_input_kind_parse(&a->kinds[a->ninputs], kind_name, &kerr) != FDL_OK)
        return cli_usage_error(cmd, "%s", kerr.message);
    a->inputs[a->ninputs++] = colon + 1;
    return 0;
}

static int take_arch(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    cli_link_args *a = t;
    if (!v || !cli_list_add(&a->archs, v))
        return cli_usage_error(cmd, o->bad, arg);
    a->opts.arch = v; /* one architecture: as it always was; several: cli_link_fat_targets */
    return 0;
}

static int take_opt_level(void *t, const cli_opt *o, const char *cmd, const char *arg,
                          const char *v)
{
    const char *lv = v ? v : "";
    (void)arg;
    if (!(lv[0] >= '0' && lv[0] <= '3' && lv[1] == '\0'))
        return cli_usage_error(cmd, o->bad, lv);
    ((cli_link_args *)t)->opts.opt_level = lv[0] - '0';
    return 0;
}

#define NEEDS_VALUE "option '%s' needs a value"
#define NEEDS_FILE "option '%s' needs a file"

const cli_opt cli_link_opts[] = {
    {.arg = CLI_CUSTOM, .name = "-arch", .alias = "--arch", .parse = take_arch,
     .bad = "option '%s' needs an architecture (sm_NN)", .usage = "-arch=sm_NN, --arch sm_NN",
     .help = "target architecture (required), e.g. sm_90; native: the GPU's own; several "
             "(repeated, or a comma list; compute_NN for PTX) make a fatbin"},
    {.arg = CLI_LIST, .name = "--decl", .at = LA(decl_paths), .bad = NEEDS_FILE,
     .usage = "--decl FILE",
     .help = "check the inputs against these declarations first (repeatable: one set per file)"},
    {.arg = CLI_CUSTOM, .name = "--backend", .parse = take_backend,
     .bad = "option --backend needs nvjitlink or culink", .usage = "--backend=nvjitlink|culink",
     .help = "the linker (default: nvjitlink, else culink)"},
    {.arg = CLI_CUSTOM, .name = "--device", .parse = take_device,
     .bad = "option --device needs a device index (0, 1, ...)", .usage = "--device N",
     .help = "the GPU for culink and -arch=native (default: FDLINK_DEVICE, else 0)"},
    {.arg = CLI_FLAG, .name = "--lto", .at = LA(opts.lto), .set = FDL_LTO_ON,
     .usage = "--lto, --no-lto",
     .help = "link-time optimisation on or off (default: on when an input carries LTO-IR)"},
    {.arg = CLI_FLAG, .name = "--no-lto", .at = LA(opts.lto), .set = FDL_LTO_OFF},
    {.arg = CLI_CUSTOM, .name = "--emit-ptx", .parse = take_emit_ptx, .bad = NEEDS_FILE,
     .usage = "--emit-ptx=FILE", .help = "write the post-LTO PTX (every input LTO-IR)"},
    {.arg = CLI_CUSTOM, .name = "--kind", .parse = take_kind,
     .bad = "option --kind needs KIND:PATH, e.g. --kind=cuda:kernel.txt",
     .usage = "--kind=KIND:PATH",
     .help = "add PATH as KIND: ptx, cubin, fatbin, ltoir, object, library, cuda or bitcode"},
    {.arg = CLI_FLAG, .name = "-lcudadevrt", .at = LA(opts.cudadevrt), .set = 1,
     .usage = "-lcudadevrt", .help = "link the toolkit's libcudadevrt.a"},
    {.arg = CLI_CUSTOM, .name = "-O", .form = CLI_ATTACHED, .parse = take_opt_level,
     .bad = "invalid optimisation level '%s' (expected 0-3)", .usage = "-O N",
     .help = "optimisation level 0-3 (nvJitLink: 0 or 3)"},
    {.arg = CLI_FLAG, .name = "-g", .at = LA(opts.debug), .set = 1, .usage = "-g",
     .help = "device debug information"},
    {.arg = CLI_FLAG, .name = "--lineinfo", .alias = "-lineinfo", .at = LA(opts.lineinfo),
     .set = 1, .usage = "--lineinfo", .help = "line information"},
    {.arg = CLI_LINK_RANGE, .name = "--maxrregcount", .at = LA(opts.maxrregcount),
     .bad = "option --maxrregcount needs a register count", .usage = "--maxrregcount N",
     .help = "most registers per thread"},
    {.arg = CLI_BIT, .name = "--ftz", .form = CLI_EQUALS, .at = LA(opts.ftz),
     .bad = "option '%s' needs 0 or 1",
     .usage = "--ftz=0|1 --prec-div=0|1 --prec-sqrt=0|1 --fma=0|1",
     .help = "floating-point modes (nvJitLink)"},
    {.arg = CLI_BIT, .name = "--prec-div", .form = CLI_EQUALS, .at = LA(opts.prec_div),
     .bad = "option '%s' needs 0 or 1"},
    {.arg = CLI_BIT, .name = "--prec-sqrt", .form = CLI_EQUALS, .at = LA(opts.prec_sqrt),
     .bad = "option '%s' needs 0 or 1"},
    {.arg = CLI_BIT, .name = "--fma", .form = CLI_EQUALS, .at = LA(opts.fma),
     .bad = "option '%s' needs 0 or 1"},
    {.arg = CLI_LIST, .name = "--kernels-used", .at = LA(kernels), .bad = NEEDS_VALUE,
     .usage = "--kernels-used NAME", .help = "keep only these kernels under LTO (repeatable)"},
    {.arg = CLI_LIST, .name = "--variables-used", .at = LA(variables), .bad = NEEDS_VALUE,
     .usage = "--variables-used NAME",
     .help = "keep only these variables under LTO (repeatable)"},
    {.arg = CLI_LIST, .name = "-Xnvjitlink", .at = LA(extra), .bad = NEEDS_VALUE,
     .usage = "-Xnvjitlink OPT", .help = "a raw nvJitLink option (repeatable)"},
    {.arg = CLI_LIST, .name = "-Xptxas", .at = LA(xptxas), .bad = NEEDS_VALUE,
     .usage = "-Xptxas OPT", .help = "a ptxas option, e.g. -warn-spills (repeatable)"},
    {.arg = CLI_LIST, .name = "-Xnvrtc", .at = LA(xnvrtc), .bad = NEEDS_VALUE,
     .usage = "-Xnvrtc OPT",
     .help = "an NVRTC option for CUDA C inputs, e.g. --device-as-default-execution-space "
             "(repeatable)"},
    {.arg = CLI_COUNT, .name = "--split-compile", .at = LA(opts.split_compile),
     .bad = "option --split-compile needs a thread count (0 for every processor)",
     .usage = "--split-compile N",
     .help = "threads for LTO and ptxas: 0 every processor, 1 one (default: every processor "
             "for large links)"},
    {.arg = CLI_COUNT, .name = "--split-compile-extended", .at = LA(opts.split_compile_extended),
     .bad = "option --split-compile-extended needs a thread count (0 for every processor)",
     .usage = "--split-compile-extended N",
     .help = "LTO split further (0 every processor); changes the code, and can crash "
             "nvJitLink 13.0 on large programs"},
    {.arg = CLI_COUNT, .name = "--jobs", .at = LA(opts.jobs), .set = 1,
     .bad = "option --jobs needs a thread count of 1 or more", .usage = "--jobs N",
     .help = "at most N threads for a split on every processor (FDLINK_JOBS; under make -j or "
             "ninja, its job slots)"},
    {.arg = CLI_FLAG, .name = "--lto-report", .at = LA(opts.lto_report), .set = 1,
     .usage = "--lto-report",
     .help = "a note per declared function: calls inlined, or why they stayed calls (with "
             "--decl)"},
    {.arg = CLI_LINK_RANGE, .name = "--jump-table-density", .at = LA(opts.jump_table_density),
     .bad = "option --jump-table-density needs a percentage %s",
     .usage = "--jump-table-density N", .help = "switch density %s for jump tables (LTO)"},
    {.arg = CLI_FLAG, .name = "--optimize-unused-variables",
     .at = LA(opts.optimize_unused_variables), .set = 1, .usage = "--optimize-unused-variables",
     .help = "LTO may drop variables no device code uses"},
    {.arg = CLI_FLAG, .name = "--device-stack-protector", .at = LA(opts.device_stack_protector),
     .set = 1, .usage = "--device-stack-protector", .help = "stack canaries in device code"},
    {.arg = CLI_FLAG, .name = "--time", .at = LA(opts.time), .set = 1, .usage = "--time",
     .help = "nvJitLink's timings in the info log (with -v; such a link is not cached)"},
    {.arg = CLI_FLAG, .name = "--no-nvjitlink-cache", .at = LA(opts.jl_cache), .set = 0,
     .usage = "--no-nvjitlink-cache", .help = "turn off nvJitLink's own cache (-no-cache)"},
    {.arg = CLI_LIST, .name = "-D", .form = CLI_ATTACHED, .at = LA(defines), .bad = NEEDS_VALUE,
     .usage = "-D NAME[=VALUE], -I DIR, --std=STD", .help = "for CUDA C inputs (repeatable)"},
    {.arg = CLI_LIST, .name = "-I", .form = CLI_ATTACHED, .at = LA(includes), .bad = NEEDS_VALUE},
    {.arg = CLI_STRING, .name = "--std", .alias = "-std", .at = LA(cuda.std), .bad = NEEDS_VALUE},
    {.arg = CLI_FLAG, .name = "--isolate", .at = LA(opts.isolate), .set = 1,
     .usage = "--isolate, --no-isolate",
     .help = "run nvJitLink in a child process, so that a crash is an error and its own output "
             "goes to the log (default: on; FDLINK_LINK_ISOLATE=0 or 1 when set)"},
    {.arg = CLI_FLAG, .name = "--no-isolate", .at = LA(opts.isolate), .set = 0},
    {.arg = CLI_FLAG, .name = "--no-cache", .at = LA(opts.cache), .set = FDL_CACHE_OFF,
     .usage = "--no-cache",
     .help = "neither look up nor store the result in the cache (see 'fdlink cache --help')"},
    {.arg = CLI_END},
};

/* `fdlink link`'s own options, around the link options. */
typedef struct link_cmd {
    cli_link_args a;
    const char *out_path;
    int out_given; /* -o given (else a.cubin, or a.fatbin for several architectures) */
    int no_output; /* fdlink prewarm: the links made (and cached), nothing written */
} link_cmd;

static int take_out(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    if (!v)
        return cli_usage_error(cmd, o->bad, arg);
    ((link_cmd *)t)->out_path = strcmp(v, "-") == 0 ? "/dev/stdout" : v;
    ((link_cmd *)t)->out_given = 1;
    return 0;
}

static const cli_opt link_cmd_opts[] = {
    {.arg = CLI_CUSTOM, .name = "-o", .parse = take_out, .bad = NEEDS_FILE, .usage = "-o FILE",
     .help = "output cubin, written atomically (default: a.cubin; -: standard output)"},
    {.arg = CLI_TABLE, .table = cli_link_opts, .at = offsetof(link_cmd, a)},
    {.arg = CLI_FLAG, .name = "-v", .alias = "--verbose", .at = offsetof(link_cmd, a.opts.verbose),
     .set = 1, .usage = "-v, --verbose",
     .help = "print the linker's info log, the inputs, wall time, output size, and whether the "
             "cache had the result"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_link(FILE *out)
{
    fputs("usage: fdlink link -arch=sm_NN [options] [-o OUT.cubin] INPUT...\n"
          "       fdlink link -arch=sm_80,sm_90,compute_90 [options] [-o OUT.fatbin] INPUT...\n"
          "\n"
          "Link device code into a cubin. Inputs are recognised from their content: PTX, cubin,\n"
          "fatbin, host object (nvcc -dc), static library (nvcc -lib), LTO-IR (nvcc -dlto),\n"
          "CUDA C (*.cu, compiled with NVRTC) and NVVM bitcode (*.bc, e.g. libdevice, compiled\n"
          "with libNVVM). nvJitLink needs no GPU; cuLink needs the driver and a GPU, and\n"
          "fdlink opens the device itself (--device N, else FDLINK_DEVICE, else 0).\n"
          "Several architectures (-arch repeated, or a comma list) link once each, side by\n"
          "side within --jobs (or the build's job slots), each checked and cached on its own,\n"
          "into one fatbin: a cubin per sm_NN, the post-LTO PTX per compute_NN.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(link_cmd_opts, 30, out);
}

static void print_log(const char *log)
{
    if (log && log[0])
        fprintf(cli_stderr(), "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
}

/* Diagnostics of the link: the cache's (FDL_EIO, never fatal) are warnings. */
static void on_link_diag(void *ctx, const fdl_error *diag)
{
    if (diag->code == FDL_EIO) {
        cli_eprintf("fdlink: warning: %s\n", diag->message);
        return;
    }
    cli_on_diag(ctx, diag);
}

int cli_link_args_init(cli_link_args *a, int argc)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    fdl_nvrtc_options cuda = FDL_NVRTC_OPTIONS_INIT;
    memset(a, 0, sizeof *a);
    a->opts = opts;
    a->cuda = cuda;
    /* the CLI isolates nvJitLink unless told otherwise (docs/isolation.md): a crash is one line,
     * and what the linker prints itself stays out of stderr; FDLINK_LINK_ISOLATE decides when set */
    const char *isolate = getenv("FDLINK_LINK_ISOLATE");
    a->opts.isolate = isolate && *isolate ? -1 : 1;
    a->device = -1;
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    a->kinds = calloc((size_t)argc + 1, sizeof *a->kinds);
    if (!a->inputs || !a->kinds) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        return 0;
    }
    return 1;
}

void cli_link_args_free(cli_link_args *a)
{
    for (size_t i = 0; a->decls && i < a->nsets; i++)
        fdl_decls_destroy(a->decls[i]);
    free(a->decls);
    free(a->decl_paths.v);
    free(a->inputs);
    free(a->kinds);
    free(a->extra.v);
    free(a->xnvrtc.v);
    free(a->kernels.v);
    free(a->variables.v);
    free(a->xptxas.v);
    free(a->defines.v);
    free(a->includes.v);
    free(a->archs.v);
    cli_diag_opts_free(&a->diag);
    memset(a, 0, sizeof *a);
}

int cli_link_add_input(cli_link_args *a, const char *path)
{
    a->kinds[a->ninputs] = FDL_KIND_AUTO;
    a->inputs[a->ninputs++] = path;
    return 1;
}

int cli_parse_device(const char *v, int *out)
{
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : -1;
    if (!v || !v[0] || *end || n < 0 || n > 1024)
        return 0;
    *out = (int)n;
    return 1;
}

int cli_link_check_options(cli_link_args *a)
{
    fdl_error err = FDL_ERROR_INIT;
    a->opts.extra = a->extra.v;
    a->opts.kernels_used = a->kernels.v;
    a->opts.variables_used = a->variables.v;
    a->opts.xptxas = a->xptxas.v;
    a->cuda.defines = a->defines.v;
    a->cuda.include_dirs = a->includes.v;
    a->cuda.extra = a->xnvrtc.v;
    a->opts.cuda = &a->cuda;
    int rc = fdl_link_options_check(&a->opts, &err);
    if (rc != FDL_OK) {
        cli_print_error(&err);
        /* a bad option value is a usage error, as the parser's own are */
        return rc == FDL_EINVAL || rc == FDL_ELIMIT ? EXIT_USAGE : 1;
    }
    return 0;
}

int cli_link_needs_device(const cli_link_args *a)
{
    return a->opts.backend == FDL_BACKEND_CULINK ||
           (a->opts.arch && strcmp(a->opts.arch, "native") == 0);
}

int cli_no_gpu_here(const fdl_error *err)
{
    int count = 0;
    if (err->code != FDL_ENOLIB && err->code != FDL_ENODEVICE)
        return 0;
    /* a device number that is not there is a mistake, not a machine without a GPU */
    return fdl_device_count(&count, NULL) != FDL_OK || count == 0;
}

void cli_print_device_error(const cli_link_args *a, const fdl_error *err)
{
    if (a->opts.backend == FDL_BACKEND_CULINK && cli_no_gpu_here(err))
        fprintf(cli_stderr(),
                "fdlink: error: the culink backend needs the CUDA driver and a GPU (%s); the "
                "default backend, nvjitlink, needs neither\n",
                err->message);
    else
        cli_print_error(err);
}

/* Load the declarations (once), create the link and add them and the inputs: 0 with *out the
 * caller's, or 1 after printing. */
static int link_prepare(cli_link_args *a, fdl_link **out, size_t *ndiags)
{
    fdl_error err = FDL_ERROR_INIT;
    int promoted = 0;
    *out = NULL;
    fdl_link *link = NULL;
    a->opts.extra = a->extra.v;
    a->opts.kernels_used = a->kernels.v;
    a->opts.variables_used = a->variables.v;
    a->opts.xptxas = a->xptxas.v;
    a->cuda.defines = a->defines.v;
    a->cuda.include_dirs = a->includes.v;
    a->cuda.extra = a->xnvrtc.v;
    a->opts.cuda = &a->cuda;
    if (!a->decls && !(a->decls = calloc(a->decl_paths.n + 1, sizeof *a->decls))) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        return 1;
    }
    for (; a->nsets < a->decl_paths.n; a->nsets++) {
        if (fdl_decls_load(&a->decls[a->nsets], a->decl_paths.v[a->nsets], &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
    }
    if (fdl_link_create(&link, &a->opts, &err) != FDL_OK) {
        cli_print_error(&err);
        goto fail;
    }
    if (fdl_link_set_diag(link, on_link_diag, ndiags) != FDL_OK) {
        fprintf(cli_stderr(), "fdlink: error: cannot set the diagnostic callback\n");
        goto fail;
    }
    for (size_t i = 0; i < a->nsets; i++) {
        if (fdl_link_add_decls(link, a->decls[i], &err) != FDL_OK) {
            cli_print_error(&err);
            goto fail;
        }
    }
    for (size_t i = 0; i < a->ninputs; i++) {
        if (fdl_link_add_file(link, a->inputs[i], a->kinds[i], &err) != FDL_OK) {
            cli_diag_report(&a->diag, link, &err, &promoted);
            cli_print_error(&err);
            if (err.code == FDL_EPARSE || err.code == FDL_EABI) /* NVRTC's log for a CUDA C
                                                                 * input: what it adds */
                cli_print_log_rest(err.log, &err, a->opts.verbose || a->whole_logs);
            goto fail;
        }
    }
    *out = link;
    return 0;
fail:
    fdl_link_destroy(link);
    return 1;
}

/* After fdl_link_complete gave @p rc (@p err its record): the errors, the warnings, -Werror.
 * 0, or 1 after printing. */
static int link_finish(cli_link_args *a, fdl_link *link, int rc, fdl_error *err, size_t ndiags)
{
    int promoted = 0;
    if (rc != FDL_OK) {
        cli_diag_report(&a->diag, link, err, &promoted);
        if (err->code == FDL_EABI) {
            cli_eprintf("fdlink: %zu error%s against ", ndiags, ndiags == 1 ? "" : "s");
            for (size_t i = 0; i < a->decl_paths.n; i++)
                cli_eprintf("%s%s", i ? ", " : "", a->decl_paths.v[i]);
            cli_eprintf("; nothing linked\n");
        } else {
            cli_print_error(err);
            cli_print_log_rest(err->log, err, a->opts.verbose || a->whole_logs);
        }
        return 1;
    }
    /* the warnings (NVRTC's, the linker's), shown as nvcc shows them; -Werror fails the link */
    if (cli_diag_report(&a->diag, link, NULL, &promoted) != 0)
        return 1;
    if (promoted) {
        fprintf(cli_stderr(), "fdlink: error: %d warning%s treated as error%s (-Werror); nothing "
                        "linked\n", promoted, promoted == 1 ? "" : "s", promoted == 1 ? "" : "s");
        return 1;
    }
    return 0;
}

static int link_build(cli_link_args *a, fdl_link **out)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t ndiags = 0;
    fdl_link *link = NULL;
    *out = NULL;
    if (link_prepare(a, &link, &ndiags) != 0)
        return 1;
    int rc = fdl_link_complete(link, &err);
    if (link_finish(a, link, rc, &err, ndiags) != 0) {
        fdl_link_destroy(link);
        return 1;
    }
    *out = link;
    return 0;
}

int cli_link_build(cli_link_args *a, fdl_link **out)
{
    /* NVIDIA's libraries may write to fd 2 (nvJitLink's "fatal   : Memory allocation failure"
     * under a memory limit, in its option probe): after fdlink's own message, never before */
    cli_capture cap;
    cli_capture_begin(&cap);
    int rc = link_build(a, out);
    cli_capture_end(&cap);
    return rc;
}

int cli_link_fat_targets(cli_link_args *a, const char *cmd, cli_fat_target **out, size_t *n,
                         int *fat)
{
    cli_fat_target *t = NULL;
    size_t count = 0, cap = 0;
    *out = NULL;
    *n = 0;
    *fat = 0;
    /* one architecture, as it always was: its checks are the link options' */
    if (a->archs.n == 1 && !strchr(a->archs.v[0], ',') &&
        strncmp(a->archs.v[0], "compute_", 8) != 0)
        return 0;
    for (size_t i = 0; i < a->archs.n; i++) {
        const char *p = a->archs.v[i];
        if (strchr(p, ','))
            *fat = 1;
        while (*p) {
            size_t len = strcspn(p, ",");
            char word[32];
            if (len == 0 || len >= sizeof word || (p[len] == ',' && !p[len + 1])) {
                free(t);
                return cli_usage_error(cmd, "invalid architecture list '%s' (expected e.g. "
                                       "sm_80,sm_90,compute_90)", a->archs.v[i]);
            }
            memcpy(word, p, len);
            word[len] = '\0';
            p += len + (p[len] == ',');
            int ptx = strncmp(word, "compute_", 8) == 0;
            const char *digits = ptx ? word + 8 : strncmp(word, "sm_", 3) == 0 ? word + 3 : NULL;
            size_t nd = digits ? strspn(digits, "0123456789") : 0;
            if (ptx)
                *fat = 1;
            if (!digits || nd < 2 || nd > 4 || (digits[nd] && (digits[nd + 1] ||
                                                 (digits[nd] != 'a' && digits[nd] != 'f')))) {
                free(t);
                if (strcmp(word, "native") == 0)
                    return cli_usage_error(cmd, "%s", "-arch=native names one architecture: "
                                           "not in a list of several");
                return cli_usage_error(cmd, "invalid architecture '%s' (expected sm_NN or "
                                       "compute_NN, e.g. sm_90)", word);
            }
            char sm[24];
            snprintf(sm, sizeof sm, "sm_%.8s", digits);
            size_t j = 0;
            while (j < count && strcmp(t[j].sm, sm) != 0)
                j++;
            if (j == count) {
                if (count == cap) {
                    size_t nc = cap ? cap * 2 : 8;
                    cli_fat_target *g = realloc(t, nc * sizeof *t);
                    if (!g) {
                        free(t);
                        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
                        return 1;
                    }
                    t = g;
                    cap = nc;
                }
                memset(&t[count], 0, sizeof t[count]);
                memcpy(t[count].sm, sm, sizeof sm);
                t[count].arch = (unsigned)strtoul(digits, NULL, 10);
                t[count].suffix = digits[nd];
                count++;
            }
            if (ptx)
                t[j].ptx = 1;
            else
                t[j].cubin = 1;
        }
    }
    if (count > 1)
        *fat = 1;
    for (size_t j = 0; *fat && j < count; j++) {
        if (t[j].suffix) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s in a fatbin: fdlink writes fatbins of sm_NN and "
                     "compute_NN (link %s on its own into a cubin)", t[j].sm, t[j].sm);
            free(t);
            return cli_usage_error(cmd, "%s", msg);
        }
    }
    *out = t;
    *n = count;
    return 0;
}

static int link_build_fat(cli_link_args *a, const cli_fat_target *t, size_t n, fdl_link **links)
{
    fdl_error *errs = calloc(n, sizeof *errs);
    size_t *ndiags = calloc(n, sizeof *ndiags);
    int rc = 1;
    for (size_t i = 0; i < n; i++)
        links[i] = NULL;
    if (!errs || !ndiags) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        goto cleanup;
    }
    /* the inputs read and CUDA C compiled per architecture here; the links side by side */
    for (size_t i = 0; i < n; i++) {
        a->opts.arch = t[i].sm;
        a->opts.emit_ptx = t[i].ptx;
        if (link_prepare(a, &links[i], &ndiags[i]) != 0) {
            fprintf(cli_stderr(), "fdlink: note: in the link for %s\n", t[i].sm);
            goto cleanup;
        }
    }
    (void)fdl_links_complete(links, n, a->opts.jobs, errs);
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        int lrc = errs[i].code;
        if (link_finish(a, links[i], lrc, &errs[i], ndiags[i]) != 0) {
            fprintf(cli_stderr(), "fdlink: note: in the link for %s\n", t[i].sm);
            rc = 1;
        }
    }
cleanup:
    if (rc != 0)
        for (size_t i = 0; i < n; i++) {
            fdl_link_destroy(links[i]);
            links[i] = NULL;
        }
    free(errs);
    free(ndiags);
    return rc;
}

int cli_link_build_fat(cli_link_args *a, const cli_fat_target *t, size_t n, fdl_link **links)
{
    cli_capture cap; /* what the libraries write to fd 2 after fdlink's messages (cli_link_build) */
    cli_capture_begin(&cap);
    int rc = link_build_fat(a, t, n, links);
    cli_capture_end(&cap);
    return rc;
}

int cli_link_refuse_outputs(const cli_link_args *a, const char *cmd, const char *out_path)
{
    int rc;
    /* neither output may be an input or a declaration file, nor both outputs one file */
    if (a->ptx_path && out_path && strcmp(a->ptx_path, out_path) == 0)
        return cli_usage_error(cmd, "-o and --emit-ptx name the same file %s", out_path);
    for (size_t o = 0; o < 2; o++) {
        const char *path = o ? a->ptx_path : out_path;
        if (path && ((rc = cli_refuse_output_input(cmd, path, a->inputs, a->ninputs)) ||
                     (rc = cli_refuse_output_input(cmd, path, a->decl_paths.v, a->decl_paths.n))))
            return rc;
    }
    return 0;
}

/* -v: the linker's info log, the inputs, what linked them into what, the cache, the threads. */
static void print_link_report(fdl_link *link, const char *out_path)
{
    size_t size = 0;
    fdl_link_cubin(link, &size);
    print_log(fdl_link_info_log(link));
    size_t count = fdl_link_input_count(link);
    for (size_t i = 0; i < count; i++) {
        fdl_input_kind kind;
        const char *name = fdl_link_input(link, i, &kind);
        cli_eprintf("fdlink: input %zu: %s (%s)\n", i + 1, name,
                fdl_input_kind_name(kind));
    }
    cli_eprintf(
            "fdlink: linked %zu input%s for %s with %s (LTO %s) into %s (%zu bytes) in "
            "%.2f ms\n",
            count, count == 1 ? "" : "s", fdl_link_arch(link),
            fdl_link_backend_name(fdl_link_get_backend(link)),
            fdl_link_lto(link) ? "on" : "off", out_path, size, fdl_link_wall_ms(link));
    const char *key = "";
    fdl_cache_result cached = fdl_link_cache_result(link, &key);
    size_t nv_hits = 0, nv_compiled = 0;
    fdl_link_nvrtc_cache(link, &nv_hits, &nv_compiled);
    if (cached == FDL_CACHE_UNUSED)
        fprintf(cli_stderr(), "fdlink: cache: not used\n");
    else
        fprintf(cli_stderr(), "fdlink: cache: %s key %s\n",
                cached == FDL_CACHE_MISS          ? "miss, linked"
                : cached == FDL_CACHE_HIT_MEMORY  ? "hit (memory)"
                : cached == FDL_CACHE_HIT_REMOTE ? "hit (remote)"
                                                  : "hit (disk)",
                key);
    if (nv_hits || nv_compiled)
        fprintf(cli_stderr(), "fdlink: cache: CUDA C inputs: %zu from the cache, %zu compiled\n",
                nv_hits, nv_compiled);
    size_t bc_hits = 0, bc_compiled = 0;
    fdl_link_nvvm_cache(link, &bc_hits, &bc_compiled);
    if (bc_hits || bc_compiled)
        fprintf(cli_stderr(), "fdlink: cache: bitcode inputs: %zu from the cache, %zu compiled by "
                "libNVVM\n", bc_hits, bc_compiled);
    int threads = 0, tokens = 0, jobserver = 0;
    fdl_link_jobs(link, &threads, &tokens, &jobserver);
    if (jobserver)
        fprintf(cli_stderr(), "fdlink: split compilation: %d thread%s (%d token%s of the "
                "jobserver%s)\n", threads, threads == 1 ? "" : "s", tokens,
                tokens == 1 ? "" : "s",
                fdl_link_jobs_memory_bound(link) ? "; the memory budget" : "");
    else if (threads && fdl_link_jobs_memory_bound(link))
        fprintf(cli_stderr(), "fdlink: split compilation: %d thread%s (the memory budget)\n",
                threads, threads == 1 ? "" : "s");
    else if (threads)
        fprintf(cli_stderr(), "fdlink: split compilation: %d thread%s (FDLINK_JOBS or --jobs)\n",
                threads, threads == 1 ? "" : "s");
}

/* `fdlink link` of several architectures into a fatbin (issue 40): 0, or an exit status. */
static int link_fat(link_cmd *c, const cli_fat_target *t, size_t n, const char *out_path)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_link **links = NULL;
    fdl_fatbin_entry *entries = NULL;
    void *fatbin = NULL;
    size_t fat_size = 0, nentries = 0;
    int rc;
    if (c->a.ptx_path)
        return cli_usage_error("link", "%s", "--emit-ptx with several architectures: name "
                               "compute_NN in -arch to put the post-LTO PTX in the fatbin");
    if (c->a.opts.backend == FDL_BACKEND_CULINK)
        return cli_usage_error("link", "%s", "a fatbin is linked by nvjitlink: the culink "
                               "backend links one architecture, on its GPU");
    if ((rc = cli_link_refuse_outputs(&c->a, "link", out_path)) != 0)
        return rc;
    c->a.opts.arch = t[0].sm; /* each link's options are checked with its own arch again */
    if ((rc = cli_link_check_options(&c->a)) != 0)
        return rc;
    rc = 1;
    links = calloc(n, sizeof *links);
    entries = calloc(2 * n, sizeof *entries);
    if (!links || !entries) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        goto cleanup;
    }
    if (cli_link_build_fat(&c->a, t, n, links) != 0)
        goto cleanup;
    /* cubins first, then PTX, as nvcc lays a fatbin out; each in the order of -arch */
    for (int ptx = 0; ptx < 2; ptx++)
        for (size_t i = 0; i < n; i++) {
            if (!(ptx ? t[i].ptx : t[i].cubin))
                continue;
            fdl_fatbin_entry *e = &entries[nentries++];
            e->kind = ptx ? FDL_KIND_PTX : FDL_KIND_CUBIN;
            e->arch = t[i].arch;
            e->data = ptx ? (const void *)fdl_link_ptx(links[i], &e->size)
                          : fdl_link_cubin(links[i], &e->size);
        }
    if (fdl_fatbin_create(&fatbin, &fat_size, entries, nentries, &err) != FDL_OK ||
        (!c->no_output && fdl__write_atomic(out_path, fatbin, fat_size, &err) != FDL_OK)) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (c->a.opts.verbose) {
        for (size_t i = 0; i < n; i++)
            print_link_report(links[i], out_path);
        cli_eprintf("fdlink: fatbin: %zu entr%s (", nentries, nentries == 1 ? "y" : "ies");
        for (size_t i = 0; i < nentries; i++)
            cli_eprintf("%s%s_%u", i ? ", " : "",
                        entries[i].kind == FDL_KIND_PTX ? "compute" : "sm", entries[i].arch);
        cli_eprintf(") into %s (%zu bytes)\n", out_path, fat_size);
    }
    rc = 0;
cleanup:
    for (size_t i = 0; links && i < n; i++)
        fdl_link_destroy(links[i]);
    free(links);
    free(entries);
    free(fatbin);
    return rc;
}

int cmd_link(int argc, char **argv)
{
    return cli_link_main(argc, argv, 1);
}

int cli_link_main(int argc, char **argv, int write_outputs)
{
    link_cmd c = {.out_path = "a.cubin", .no_output = !write_outputs};
    const char *out_path = NULL;
    cli_fat_target *targets = NULL;
    size_t ntargets = 0;
    int fat = 0;
    fdl_device *dev = NULL;
    fdl_link *link = NULL;
    int rc = 1;
    if (!cli_link_args_init(&c.a, argc))
        goto cleanup;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int urc = 0;
        if (cli_is_help(arg)) {
            help_link(stdout);
            rc = 0;
            goto cleanup;
        } else if (cli_diag_option(&c.a.diag, "link", argc, argv, &i, &urc) ||
                   cli_opts_parse(link_cmd_opts, &c, "link", argc, argv, &i, &urc)) {
            if (urc) {
                rc = urc;
                goto cleanup;
            }
        } else if (arg[0] == '-' && arg[1] != '\0') {
            rc = cli_usage_error("link", "unknown option '%s'", arg);
            goto cleanup;
        } else {
            cli_link_add_input(&c.a, arg);
        }
    }
    out_path = c.out_path;
    if (!c.a.opts.arch) {
        rc = cli_usage_error("link", "%s", "missing -arch=sm_NN");
        goto cleanup;
    }
    if (c.a.ninputs == 0) {
        rc = cli_usage_error("link", "%s", "no input files");
        goto cleanup;
    }
    if ((rc = cli_link_fat_targets(&c.a, "link", &targets, &ntargets, &fat)) != 0)
        goto cleanup;
    if (fat) {
        rc = link_fat(&c, targets, ntargets, c.out_given ? out_path : "a.fatbin");
        goto cleanup;
    }
    if ((rc = cli_link_refuse_outputs(&c.a, "link", out_path)) != 0)
        goto cleanup;
    rc = 1;

    fdl_error err = FDL_ERROR_INIT;
    /* cuLink and "native" need a current context: open the device, which makes it current
     * (after the options are known to be right: what is wrong with them needs no GPU to say). */
    if ((rc = cli_link_check_options(&c.a)) != 0)
        goto cleanup;
    rc = 1;
    if (cli_link_needs_device(&c.a) && fdl_device_open(&dev, c.a.device, &err) != FDL_OK) {
        cli_print_device_error(&c.a, &err);
        goto cleanup;
    }
    if (dev && strcmp(c.a.opts.arch, "native") == 0)
        c.a.opts.arch = fdl_device_arch(dev); /* the device --device or FDLINK_DEVICE names */
    if (cli_link_build(&c.a, &link) != 0)
        goto cleanup;
    /* the cubin and the PTX land together or neither does; the cubin, which build tools
     * watch, is renamed last */
    size_t ptx_size = 0, cubin_size = 0;
    const char *ptx = fdl_link_ptx(link, &ptx_size);
    const void *cubin = fdl_link_cubin(link, &cubin_size);
    const char *paths[2] = {c.a.ptx_path, out_path};
    const void *data[2] = {ptx, cubin};
    size_t sizes[2] = {ptx_size, cubin_size};
    size_t first = c.a.ptx_path && ptx ? 0 : 1;
    if (!c.no_output && fdl__write_outputs(2 - first, paths + first, data + first, sizes + first, &err) !=
        FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (c.a.opts.verbose)
        print_link_report(link, out_path);
    rc = 0;
cleanup:
    free(targets);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
    cli_link_args_free(&c.a);
    return rc;
}
