/* fdlink link: device code of any kind into a cubin. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

void help_link(FILE *out)
{
    fputs("usage: fdlink link -arch=sm_NN [options] [-o OUT.cubin] INPUT...\n"
          "\n"
          "Link device code into a cubin. Inputs are recognised from their content: PTX, cubin,\n"
          "fatbin, host object (nvcc -dc), static library (nvcc -lib), LTO-IR (nvcc -dlto),\n"
          "CUDA C (*.cu, compiled with NVRTC) and NVVM bitcode (*.bc, e.g. libdevice, compiled\n"
          "with libNVVM). nvJitLink needs no GPU; cuLink needs the driver and a GPU, and\n"
          "fdlink opens the device itself (--device N, else FDLINK_DEVICE, else 0).\n"
          "\n"
          "options:\n"
          "  -arch=sm_NN, --arch sm_NN   target architecture (required), e.g. sm_90; native:\n"
          "                              the GPU's own\n"
          "  -o FILE                     output cubin, written atomically (default: a.cubin; -:\n"
          "                              standard output)\n"
          "  --decl FILE                 check the inputs against these declarations first\n"
          "                              (repeatable: one set per file)\n"
          "  --backend=nvjitlink|culink  the linker (default: nvjitlink, else culink)\n"
          "  --device N                  the GPU for culink and -arch=native (default:\n"
          "                              FDLINK_DEVICE, else 0)\n"
          "  --lto, --no-lto             link-time optimisation on or off (default: on when an\n"
          "                              input carries LTO-IR)\n"
          "  --emit-ptx=FILE             write the post-LTO PTX (every input LTO-IR)\n"
          "  --kind=KIND:PATH            add PATH as KIND: ptx, cubin, fatbin, ltoir, object,\n"
          "                              library, cuda or bitcode\n"
          "  -lcudadevrt                 link the toolkit's libcudadevrt.a\n"
          "  -O N                        optimisation level 0-3 (nvJitLink: 0 or 3)\n"
          "  -g                          device debug information\n"
          "  --lineinfo                  line information\n"
          "  --maxrregcount N            most registers per thread\n"
          "  --ftz=0|1 --prec-div=0|1 --prec-sqrt=0|1 --fma=0|1\n"
          "                              floating-point modes (nvJitLink)\n"
          "  --kernels-used NAME         keep only these kernels under LTO (repeatable)\n"
          "  --variables-used NAME       keep only these variables under LTO (repeatable)\n"
          "  -Xnvjitlink OPT             a raw nvJitLink option (repeatable)\n"
          "  -Xptxas OPT                 a ptxas option, e.g. -warn-spills (repeatable)\n"
          "  -Xnvrtc OPT                 an NVRTC option for CUDA C inputs, e.g.\n"
          "                              --device-as-default-execution-space (repeatable)\n"
          "  --split-compile N           threads for LTO and ptxas: 0 every processor, 1 one\n"
          "                              (default: every processor for large links)\n"
          "  --split-compile-extended N  LTO split further (0 every processor); changes the\n"
          "                              code, and can crash nvJitLink 13.0 on large programs\n"
          "  --jobs N                    at most N threads for a split on every processor\n"
          "                              (FDLINK_JOBS; under make -j or ninja, its job slots)\n"
          "  --lto-report                a note per declared function: calls inlined, or why\n"
          "                              they stayed calls (with --decl)\n"
          "  --jump-table-density N      switch density 0-101 for jump tables (LTO)\n"
          "  --optimize-unused-variables LTO may drop variables no device code uses\n"
          "  --device-stack-protector    stack canaries in device code\n"
          "  --time                      nvJitLink's timings in the info log (with -v; such a\n"
          "                              link is not cached)\n"
          "  --no-nvjitlink-cache        turn off nvJitLink's own cache (-no-cache)\n"
          "  -D NAME[=VALUE], -I DIR, --std=STD\n"
          "                              for CUDA C inputs (repeatable)\n"
          "  --isolate, --no-isolate     run nvJitLink in a child process, so that a crash is\n"
          "                              an error and its own output goes to the log (default:\n"
          "                              on; FDLINK_LINK_ISOLATE=0 or 1 when set)\n"
          "  --no-cache                  neither look up nor store the result in the cache\n"
          "                              (see 'fdlink cache --help')\n"
          "  -v, --verbose               print the linker's info log, the inputs, wall time,\n"
          "                              output size, and whether the cache had the result\n"
          "  -h, --help                  show this help\n",
          out);
}

/* "0" or "1" into a tri-state option. */
static int parse_bit(const char *v, int *out)
{
    if ((v[0] == '0' || v[0] == '1') && v[1] == '\0') {
        *out = v[0] - '0';
        return 1;
    }
    return 0;
}

static int parse_count(const char *v, int *out)
{
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!v[0] || *end || n < 0 || n > 65535)
        return 0;
    *out = (int)n;
    return 1;
}

static void print_log(const char *log)
{
    if (log && log[0])
        fprintf(stderr, "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
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
        fprintf(stderr, "fdlink: error: out of memory\n");
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

int cli_link_option(cli_link_args *a, const char *cmd, int argc, char **argv, int *i, int *rc)
{
    const char *arg = argv[*i];
    int missing = 0;
    const char *v;
    int ok = 1;
    *rc = 0;
    if (cli_diag_option(&a->diag, cmd, argc, argv, i, rc))
        return 1;
    if ((v = cli_option_value(arg, "-arch", argc, argv, i, &missing)) ||
        (!missing && (v = cli_option_value(arg, "--arch", argc, argv, i, &missing))) || missing) {
        if (missing) {
            *rc = cli_usage_error(cmd, "option '%s' needs an architecture (sm_NN)", arg);
            return 1;
        }
        a->opts.arch = v;
    } else if ((v = cli_option_value(arg, "--decl", argc, argv, i, &missing)) || missing) {
        if (missing) {
            *rc = cli_usage_error(cmd, "option '%s' needs a file", arg);
            return 1;
        }
        if (!cli_list_add(&a->decl_paths, v))
            ok = 0;
    } else if ((v = cli_option_value(arg, "--device", argc, argv, i, &missing)) || missing) {
        if (!cli_parse_device(v, &a->device)) {
            *rc = cli_usage_error(cmd, "option --device needs a device index (0, 1, ...)%s", "");
            return 1;
        }
    } else if ((v = cli_option_value(arg, "--backend", argc, argv, i, &missing)) || missing) {
        if (v && strcmp(v, "nvjitlink") == 0)
            a->opts.backend = FDL_BACKEND_NVJITLINK;
        else if (v && strcmp(v, "culink") == 0)
            a->opts.backend = FDL_BACKEND_CULINK;
        else {
            *rc = cli_usage_error(cmd, "option --backend needs nvjitlink or culink%s", "");
            return 1;
        }
    } else if ((v = cli_option_value(arg, "--emit-ptx", argc, argv, i, &missing)) || missing) {
        if (missing) {
            *rc = cli_usage_error(cmd, "option '%s' needs a file", arg);
            return 1;
        }
        a->ptx_path = v;
        a->opts.emit_ptx = 1;
    } else if ((v = cli_option_value(arg, "--kind", argc, argv, i, &missing)) || missing) {
        const char *colon = v ? strchr(v, ':') : NULL;
        char kind_name[32];
        fdl_error kerr = FDL_ERROR_INIT;
        if (!colon || !colon[1] || (size_t)(colon - v) >= sizeof kind_name) {
            *rc = cli_usage_error(cmd, "option --kind needs KIND:PATH, e.g. "
                                       "--kind=cuda:kernel.txt%s", "");
            return 1;
        }
        memcpy(kind_name, v, (size_t)(colon - v));
        kind_name[colon - v] = '\0';
        if (fdl_input_kind_parse(&a->kinds[a->ninputs], kind_name, &kerr) != FDL_OK) {
            *rc = cli_usage_error(cmd, "%s", kerr.message);
            return 1;
        }
        a->inputs[a->ninputs++] = colon + 1;
    } else if ((v = cli_option_value(arg, "--maxrregcount", argc, argv, i, &missing)) ||
               missing) {
        if (!v || !parse_count(v, &a->opts.maxrregcount)) {
            *rc = cli_usage_error(cmd, "option --maxrregcount needs a register count%s", "");
            return 1;
        }
    } else if ((v = cli_option_value(arg, "--kernels-used", argc, argv, i, &missing)) ||
               missing) {
        if (!v || !cli_list_add(&a->kernels, v))
            ok = 0;
    } else if ((v = cli_option_value(arg, "--variables-used", argc, argv, i, &missing)) ||
               missing) {
        if (!v || !cli_list_add(&a->variables, v))
            ok = 0;
    } else if ((v = cli_option_value(arg, "-Xptxas", argc, argv, i, &missing)) || missing) {
        if (!v || !cli_list_add(&a->xptxas, v))
            ok = 0;
    } else if ((v = cli_option_value(arg, "--split-compile", argc, argv, i, &missing)) ||
               missing) {
        if (!v || !parse_count(v, &a->opts.split_compile)) {
            *rc = cli_usage_error(cmd, "option --split-compile needs a thread count (0 for "
                                       "every processor)%s", "");
            return 1;
        }
    } else if ((v = cli_option_value(arg, "--split-compile-extended", argc, argv, i, &missing)) ||
               missing) {
        if (!v || !parse_count(v, &a->opts.split_compile_extended)) {
            *rc = cli_usage_error(cmd, "option --split-compile-extended needs a thread count (0 "
                                       "for every processor)%s", "");
            return 1;
        }
    } else if ((v = cli_option_value(arg, "--jobs", argc, argv, i, &missing)) || missing) {
        if (!v || !parse_count(v, &a->opts.jobs) || a->opts.jobs < 1) {
            *rc = cli_usage_error(cmd, "option --jobs needs a thread count of 1 or more%s", "");
            return 1;
        }
    } else if ((v = cli_option_value(arg, "--jump-table-density", argc, argv, i, &missing)) ||
               missing) {
        /* the bounds are the library's (its -1, the default, is no percentage) */
        int hi = 0;
        char top[16];
        fdl_link_option_bounds("jump_table_density", NULL, &hi);
        snprintf(top, sizeof top, "%d", hi);
        if (!v || !parse_count(v, &a->opts.jump_table_density) ||
            a->opts.jump_table_density > hi) {
            *rc = cli_usage_error(cmd, "option --jump-table-density needs a percentage 0-%s", top);
            return 1;
        }
    } else if ((v = cli_option_value(arg, "-Xnvjitlink", argc, argv, i, &missing)) || missing) {
        if (!v || !cli_list_add(&a->extra, v))
            ok = 0;
    } else if ((v = cli_option_value(arg, "-Xnvrtc", argc, argv, i, &missing)) || missing) {
        if (!v || !cli_list_add(&a->xnvrtc, v))
            ok = 0;
    } else if ((v = cli_option_value(arg, "--std", argc, argv, i, &missing)) ||
               (!missing && (v = cli_option_value(arg, "-std", argc, argv, i, &missing))) ||
               missing) {
        if (!v)
            ok = 0;
        a->cuda.std = v;
    } else if (strncmp(arg, "--ftz=", 6) == 0 || strncmp(arg, "--prec-div=", 11) == 0 ||
               strncmp(arg, "--prec-sqrt=", 12) == 0 || strncmp(arg, "--fma=", 6) == 0) {
        const char *eq = strchr(arg, '=');
        int *field = arg[2] == 'f' && arg[3] == 't' ? &a->opts.ftz
                     : arg[2] == 'f'                ? &a->opts.fma
                     : arg[7] == 'd'                ? &a->opts.prec_div
                                                    : &a->opts.prec_sqrt;
        if (!parse_bit(eq + 1, field)) {
            *rc = cli_usage_error(cmd, "option '%s' needs 0 or 1", arg);
            return 1;
        }
    } else if (strncmp(arg, "-D", 2) == 0 || strncmp(arg, "-I", 2) == 0) {
        const char *val = arg[2] ? arg + 2 : (*i + 1 < argc ? argv[++*i] : NULL);
        if (!val || !val[0]) {
            *rc = cli_usage_error(cmd, "option '%s' needs a value", arg);
            return 1;
        }
        if (!cli_list_add(arg[1] == 'D' ? &a->defines : &a->includes, val))
            ok = 0;
    } else if (strncmp(arg, "-O", 2) == 0) {
        const char *lv = arg[2] ? arg + 2 : (*i + 1 < argc ? argv[++*i] : "");
        if (!(lv[0] >= '0' && lv[0] <= '3' && lv[1] == '\0')) {
            *rc = cli_usage_error(cmd, "invalid optimisation level '%s' (expected 0-3)", lv);
            return 1;
        }
        a->opts.opt_level = lv[0] - '0';
    } else if (strcmp(arg, "-g") == 0) {
        a->opts.debug = 1;
    } else if (strcmp(arg, "--lineinfo") == 0 || strcmp(arg, "-lineinfo") == 0) {
        a->opts.lineinfo = 1;
    } else if (strcmp(arg, "--lto") == 0) {
        a->opts.lto = FDL_LTO_ON;
    } else if (strcmp(arg, "--no-lto") == 0) {
        a->opts.lto = FDL_LTO_OFF;
    } else if (strcmp(arg, "-lcudadevrt") == 0) {
        a->opts.cudadevrt = 1;
    } else if (strcmp(arg, "--no-cache") == 0) {
        a->opts.cache = FDL_CACHE_OFF;
    } else if (strcmp(arg, "--no-nvjitlink-cache") == 0) {
        a->opts.jl_cache = 0;
    } else if (strcmp(arg, "--time") == 0) {
        a->opts.time = 1;
    } else if (strcmp(arg, "--lto-report") == 0) {
        a->opts.lto_report = 1;
    } else if (strcmp(arg, "--optimize-unused-variables") == 0) {
        a->opts.optimize_unused_variables = 1;
    } else if (strcmp(arg, "--device-stack-protector") == 0) {
        a->opts.device_stack_protector = 1;
    } else if (strcmp(arg, "--isolate") == 0 || strcmp(arg, "--no-isolate") == 0) {
        a->opts.isolate = arg[2] == 'i';
    } else {
        return 0;
    }
    if (!ok)
        *rc = cli_usage_error(cmd, "option '%s' needs a value", arg);
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
        fprintf(stderr,
                "fdlink: error: the culink backend needs the CUDA driver and a GPU (%s); the "
                "default backend, nvjitlink, needs neither\n",
                err->message);
    else
        cli_print_error(err);
}

int cli_link_build(cli_link_args *a, fdl_link **out)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t ndiags = 0;
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
    a->decls = calloc(a->decl_paths.n + 1, sizeof *a->decls);
    if (!a->decls) {
        fprintf(stderr, "fdlink: error: out of memory\n");
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
    if (fdl_link_set_diag(link, on_link_diag, &ndiags) != FDL_OK) {
        fprintf(stderr, "fdlink: error: cannot set the diagnostic callback\n");
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
            if (err.code == FDL_EPARSE) /* NVRTC's log for a CUDA C input: what it adds */
                cli_print_log_rest(err.log, &err, a->opts.verbose || a->whole_logs);
            goto fail;
        }
    }
    if (fdl_link_complete(link, &err) != FDL_OK) {
        cli_diag_report(&a->diag, link, &err, &promoted);
        if (err.code == FDL_EABI) {
            cli_eprintf("fdlink: %zu error%s against ", ndiags, ndiags == 1 ? "" : "s");
            for (size_t i = 0; i < a->decl_paths.n; i++)
                cli_eprintf("%s%s", i ? ", " : "", a->decl_paths.v[i]);
            cli_eprintf("; nothing linked\n");
        } else {
            cli_print_error(&err);
            cli_print_log_rest(err.log, &err, a->opts.verbose || a->whole_logs);
        }
        goto fail;
    }
    /* the warnings (NVRTC's, the linker's), shown as nvcc shows them; -Werror fails the link */
    if (cli_diag_report(&a->diag, link, NULL, &promoted) != 0)
        goto fail;
    if (promoted) {
        fprintf(stderr, "fdlink: error: %d warning%s treated as error%s (-Werror); nothing "
                        "linked\n", promoted, promoted == 1 ? "" : "s", promoted == 1 ? "" : "s");
        goto fail;
    }
    *out = link;
    return 0;
fail:
    fdl_link_destroy(link);
    return 1;
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

int cmd_link(int argc, char **argv)
{
    const char *out_path = "a.cubin";
    cli_link_args a;
    fdl_device *dev = NULL;
    fdl_link *link = NULL;
    int rc = 1;
    if (!cli_link_args_init(&a, argc))
        goto cleanup;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        int missing = 0, urc = 0;
        const char *v;
        if (cli_is_help(arg)) {
            help_link(stdout);
            rc = 0;
            goto cleanup;
        } else if (cli_link_option(&a, "link", argc, argv, &i, &urc)) {
            if (urc) {
                rc = urc;
                goto cleanup;
            }
        } else if ((v = cli_option_value(arg, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs a file", arg);
                goto cleanup;
            }
            out_path = strcmp(v, "-") == 0 ? "/dev/stdout" : v;
        } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
            a.opts.verbose = 1;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            rc = cli_usage_error("link", "unknown option '%s'", arg);
            goto cleanup;
        } else {
            cli_link_add_input(&a, arg);
        }
    }
    if (!a.opts.arch) {
        rc = cli_usage_error("link", "%s", "missing -arch=sm_NN");
        goto cleanup;
    }
    if (a.ninputs == 0) {
        rc = cli_usage_error("link", "%s", "no input files");
        goto cleanup;
    }
    if ((rc = cli_link_refuse_outputs(&a, "link", out_path)) != 0)
        goto cleanup;
    rc = 1;

    fdl_error err = FDL_ERROR_INIT;
    /* cuLink and "native" need a current context: open the device, which makes it current
     * (after the options are known to be right: what is wrong with them needs no GPU to say). */
    if ((rc = cli_link_check_options(&a)) != 0)
        goto cleanup;
    rc = 1;
    if (cli_link_needs_device(&a) && fdl_device_open(&dev, a.device, &err) != FDL_OK) {
        cli_print_device_error(&a, &err);
        goto cleanup;
    }
    if (dev && strcmp(a.opts.arch, "native") == 0)
        a.opts.arch = fdl_device_arch(dev); /* the device --device or FDLINK_DEVICE names */
    if (cli_link_build(&a, &link) != 0)
        goto cleanup;
    /* the cubin and the PTX land together or neither does; the cubin, which build tools
     * watch, is renamed last */
    size_t ptx_size = 0, cubin_size = 0;
    const char *ptx = fdl_link_ptx(link, &ptx_size);
    const void *cubin = fdl_link_cubin(link, &cubin_size);
    const char *paths[2] = {a.ptx_path, out_path};
    const void *data[2] = {ptx, cubin};
    size_t sizes[2] = {ptx_size, cubin_size};
    size_t first = a.ptx_path && ptx ? 0 : 1;
    if (fdl__write_outputs(2 - first, paths + first, data + first, sizes + first, &err) !=
        FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (a.opts.verbose) {
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
            fprintf(stderr, "fdlink: cache: not used\n");
        else
            fprintf(stderr, "fdlink: cache: %s key %s\n",
                    cached == FDL_CACHE_MISS          ? "miss, linked"
                    : cached == FDL_CACHE_HIT_MEMORY  ? "hit (memory)"
                    : cached == FDL_CACHE_HIT_REMOTE ? "hit (remote)"
                                                      : "hit (disk)",
                    key);
        if (nv_hits || nv_compiled)
            fprintf(stderr, "fdlink: cache: CUDA C inputs: %zu from the cache, %zu compiled\n",
                    nv_hits, nv_compiled);
        size_t bc_hits = 0, bc_compiled = 0;
        fdl_link_nvvm_cache(link, &bc_hits, &bc_compiled);
        if (bc_hits || bc_compiled)
            fprintf(stderr, "fdlink: cache: bitcode inputs: %zu from the cache, %zu compiled "
                    "by libNVVM\n", bc_hits, bc_compiled);
        int threads = 0, tokens = 0, jobserver = 0;
        fdl_link_jobs(link, &threads, &tokens, &jobserver);
        if (jobserver)
            fprintf(stderr, "fdlink: split compilation: %d thread%s (%d token%s of the "
                    "jobserver%s)\n", threads, threads == 1 ? "" : "s", tokens,
                    tokens == 1 ? "" : "s",
                    fdl_link_jobs_memory_bound(link) ? "; the memory budget" : "");
        else if (threads && fdl_link_jobs_memory_bound(link))
            fprintf(stderr, "fdlink: split compilation: %d thread%s (the memory budget)\n",
                    threads, threads == 1 ? "" : "s");
        else if (threads)
            fprintf(stderr, "fdlink: split compilation: %d thread%s (FDLINK_JOBS or --jobs)\n",
                    threads, threads == 1 ? "" : "s");
    }
    rc = 0;
cleanup:
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
    cli_link_args_free(&a);
    return rc;
}
