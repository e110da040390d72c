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
          "fatbin, host object (nvcc -dc), static library (nvcc -lib), LTO-IR (nvcc -dlto) and\n"
          "CUDA C (*.cu, compiled with NVRTC). nvJitLink needs no GPU; cuLink needs one.\n"
          "\n"
          "options:\n"
          "  -arch=sm_NN, --arch sm_NN   target architecture (required), e.g. sm_90; native:\n"
          "                              the GPU's own\n"
          "  -o FILE                     output cubin, written atomically (default: a.cubin)\n"
          "  --decl FILE                 check the inputs against these declarations first\n"
          "                              (repeatable: one set per file)\n"
          "  --backend=nvjitlink|culink  the linker (default: nvjitlink, else culink)\n"
          "  --lto, --no-lto             link-time optimisation on or off (default: on when an\n"
          "                              input carries LTO-IR)\n"
          "  --emit-ptx=FILE             write the post-LTO PTX (every input LTO-IR)\n"
          "  --kind=KIND:PATH            add PATH as KIND: ptx, cubin, fatbin, ltoir, object,\n"
          "                              library or cuda\n"
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
          "  -D NAME[=VALUE], -I DIR, --std=STD\n"
          "                              for CUDA C inputs (repeatable)\n"
          "  -v, --verbose               print the linker's info log, the inputs, wall time and\n"
          "                              output size\n"
          "  -h, --help                  show this help\n",
          out);
}

/* A string list that grows; NULL-terminated. */
typedef struct list {
    const char **v;
    size_t n;
} list;

static int list_add(list *l, const char *s)
{
    const char **grown = realloc(l->v, (l->n + 2) * sizeof *grown);
    if (!grown)
        return 0;
    l->v = grown;
    l->v[l->n++] = s;
    l->v[l->n] = NULL;
    return 1;
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

int cmd_link(int argc, char **argv)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    fdl_nvrtc_options cuda = FDL_NVRTC_OPTIONS_INIT;
    const char *out_path = "a.cubin", *ptx_path = NULL;
    const char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    fdl_input_kind *kinds = calloc((size_t)argc + 1, sizeof *kinds);
    list extra = {0}, kernels = {0}, variables = {0}, defines = {0}, includes = {0};
    list decl_paths = {0};
    size_t ninputs = 0, ndiags = 0, nsets = 0;
    fdl_decls **decls = NULL;
    fdl_link *link = NULL;
    int rc = 1;
    if (!inputs || !kinds) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing = 0;
        const char *v;
        int ok = 1;
        if (cli_is_help(a)) {
            help_link(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = cli_option_value(a, "-arch", argc, argv, &i, &missing)) ||
                   (!missing && (v = cli_option_value(a, "--arch", argc, argv, &i, &missing))) ||
                   missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs an architecture (sm_NN)", a);
                goto cleanup;
            }
            opts.arch = v;
        } else if ((v = cli_option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            out_path = v;
        } else if ((v = cli_option_value(a, "--decl", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            if (!list_add(&decl_paths, v))
                ok = 0;
        } else if ((v = cli_option_value(a, "--backend", argc, argv, &i, &missing)) || missing) {
            if (v && strcmp(v, "nvjitlink") == 0)
                opts.backend = FDL_BACKEND_NVJITLINK;
            else if (v && strcmp(v, "culink") == 0)
                opts.backend = FDL_BACKEND_CULINK;
            else {
                rc = cli_usage_error("link", "option --backend needs nvjitlink or culink%s", "");
                goto cleanup;
            }
        } else if ((v = cli_option_value(a, "--emit-ptx", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            ptx_path = v;
            opts.emit_ptx = 1;
        } else if ((v = cli_option_value(a, "--kind", argc, argv, &i, &missing)) || missing) {
            const char *colon = v ? strchr(v, ':') : NULL;
            char kind_name[32];
            fdl_error kerr = FDL_ERROR_INIT;
            if (!colon || !colon[1] || (size_t)(colon - v) >= sizeof kind_name) {
                rc = cli_usage_error("link", "option --kind needs KIND:PATH, e.g. "
                                             "--kind=cuda:kernel.txt%s", "");
                goto cleanup;
            }
            memcpy(kind_name, v, (size_t)(colon - v));
            kind_name[colon - v] = '\0';
            if (fdl_input_kind_parse(&kinds[ninputs], kind_name, &kerr) != FDL_OK) {
                rc = cli_usage_error("link", "%s", kerr.message);
                goto cleanup;
            }
            inputs[ninputs++] = colon + 1;
        } else if ((v = cli_option_value(a, "--maxrregcount", argc, argv, &i, &missing)) ||
                   missing) {
            if (!v || !parse_count(v, &opts.maxrregcount)) {
                rc = cli_usage_error("link", "option --maxrregcount needs a register count%s",
                                     "");
                goto cleanup;
            }
        } else if ((v = cli_option_value(a, "--kernels-used", argc, argv, &i, &missing)) ||
                   missing) {
            if (!v || !list_add(&kernels, v))
                ok = 0;
        } else if ((v = cli_option_value(a, "--variables-used", argc, argv, &i, &missing)) ||
                   missing) {
            if (!v || !list_add(&variables, v))
                ok = 0;
        } else if ((v = cli_option_value(a, "-Xnvjitlink", argc, argv, &i, &missing)) ||
                   missing) {
            if (!v || !list_add(&extra, v))
                ok = 0;
        } else if ((v = cli_option_value(a, "--std", argc, argv, &i, &missing)) ||
                   (!missing && (v = cli_option_value(a, "-std", argc, argv, &i, &missing))) ||
                   missing) {
            if (!v)
                ok = 0;
            cuda.std = v;
        } else if (strncmp(a, "--ftz=", 6) == 0 || strncmp(a, "--prec-div=", 11) == 0 ||
                   strncmp(a, "--prec-sqrt=", 12) == 0 || strncmp(a, "--fma=", 6) == 0) {
            const char *eq = strchr(a, '=');
            int *field = a[2] == 'f' && a[3] == 't' ? &opts.ftz
                         : a[2] == 'f'              ? &opts.fma
                         : a[7] == 'd'              ? &opts.prec_div
                                                    : &opts.prec_sqrt;
            if (!parse_bit(eq + 1, field)) {
                rc = cli_usage_error("link", "option '%s' needs 0 or 1", a);
                goto cleanup;
            }
        } else if (strncmp(a, "-D", 2) == 0 || strncmp(a, "-I", 2) == 0) {
            const char *val = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || !val[0]) {
                rc = cli_usage_error("link", "option '%s' needs a value", a);
                goto cleanup;
            }
            if (!list_add(a[1] == 'D' ? &defines : &includes, val))
                ok = 0;
        } else if (strncmp(a, "-O", 2) == 0) {
            const char *lv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "");
            if (!(lv[0] >= '0' && lv[0] <= '3' && lv[1] == '\0')) {
                rc = cli_usage_error("link", "invalid optimisation level '%s' (expected 0-3)", lv);
                goto cleanup;
            }
            opts.opt_level = lv[0] - '0';
        } else if (strcmp(a, "-g") == 0) {
            opts.debug = 1;
        } else if (strcmp(a, "--lineinfo") == 0 || strcmp(a, "-lineinfo") == 0) {
            opts.lineinfo = 1;
        } else if (strcmp(a, "--lto") == 0) {
            opts.lto = FDL_LTO_ON;
        } else if (strcmp(a, "--no-lto") == 0) {
            opts.lto = FDL_LTO_OFF;
        } else if (strcmp(a, "-lcudadevrt") == 0) {
            opts.cudadevrt = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opts.verbose = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = cli_usage_error("link", "unknown option '%s'", a);
            goto cleanup;
        } else {
            kinds[ninputs] = FDL_KIND_AUTO;
            inputs[ninputs++] = a;
        }
        if (!ok) {
            rc = cli_usage_error("link", "option '%s' needs a value", a);
            goto cleanup;
        }
    }
    if (!opts.arch) {
        rc = cli_usage_error("link", "%s", "missing -arch=sm_NN");
        goto cleanup;
    }
    if (ninputs == 0) {
        rc = cli_usage_error("link", "%s", "no input files");
        goto cleanup;
    }
    /* neither output may be an input or a declaration file, nor both outputs one file */
    if (ptx_path && strcmp(ptx_path, out_path) == 0) {
        rc = cli_usage_error("link", "-o and --emit-ptx name the same file %s", out_path);
        goto cleanup;
    }
    for (size_t o = 0; o < 2; o++) {
        const char *path = o ? ptx_path : out_path;
        if (path && ((rc = cli_refuse_output_input("link", path, inputs, ninputs)) ||
                     (rc = cli_refuse_output_input("link", path, decl_paths.v, decl_paths.n))))
            goto cleanup;
    }
    rc = 1;
    opts.extra = extra.v;
    opts.kernels_used = kernels.v;
    opts.variables_used = variables.v;
    cuda.defines = defines.v;
    cuda.include_dirs = includes.v;
    opts.cuda = &cuda;

    fdl_error err = FDL_ERROR_INIT;
    decls = calloc(decl_paths.n + 1, sizeof *decls);
    if (!decls) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    for (; nsets < decl_paths.n; nsets++) {
        if (fdl_decls_load(&decls[nsets], decl_paths.v[nsets], &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    }
    if (fdl_link_create(&link, &opts, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (fdl_link_set_diag(link, cli_on_diag, &ndiags) != FDL_OK) {
        fprintf(stderr, "fdlink: error: cannot set the diagnostic callback\n");
        goto cleanup;
    }
    for (size_t i = 0; i < nsets; i++) {
        if (fdl_link_add_decls(link, decls[i], &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    }
    for (size_t i = 0; i < ninputs; i++) {
        if (fdl_link_add_file(link, inputs[i], kinds[i], &err) != FDL_OK) {
            cli_print_error(&err);
            if (err.code == FDL_EPARSE)
                print_log(err.log); /* NVRTC's whole log for a CUDA C input */
            goto cleanup;
        }
    }
    if (fdl_link_complete(link, &err) != FDL_OK) {
        if (err.code == FDL_EABI) {
            fprintf(stderr, "fdlink: %zu error%s against ", ndiags, ndiags == 1 ? "" : "s");
            for (size_t i = 0; i < decl_paths.n; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", decl_paths.v[i]);
            fprintf(stderr, "; nothing linked\n");
        } else {
            cli_print_error(&err);
            print_log(err.log);
        }
        goto cleanup;
    }
    if (fdl_link_write(link, out_path, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    size_t ptx_size = 0;
    const char *ptx = fdl_link_ptx(link, &ptx_size);
    if (ptx_path && ptx && fdl__write_atomic(ptx_path, ptx, ptx_size, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (opts.verbose) {
        size_t size = 0;
        fdl_link_cubin(link, &size);
        print_log(fdl_link_info_log(link));
        size_t count = fdl_link_input_count(link);
        for (size_t i = 0; i < count; i++) {
            fdl_input_kind kind;
            const char *name = fdl_link_input(link, i, &kind);
            fprintf(stderr, "fdlink: input %zu: %s (%s)\n", i + 1, name,
                    fdl_input_kind_name(kind));
        }
        fprintf(stderr,
                "fdlink: linked %zu input%s for %s with %s (LTO %s) into %s (%zu bytes) in "
                "%.2f ms\n",
                count, count == 1 ? "" : "s", fdl_link_arch(link),
                fdl_link_backend_name(fdl_link_get_backend(link)),
                fdl_link_lto(link) ? "on" : "off", out_path, size, fdl_link_wall_ms(link));
    }
    rc = 0;
cleanup:
    fdl_link_destroy(link);
    for (size_t i = 0; decls && i < nsets; i++)
        fdl_decls_destroy(decls[i]);
    free(decls);
    free(decl_paths.v);
    free(inputs);
    free(kinds);
    free(extra.v);
    free(kernels.v);
    free(variables.v);
    free(defines.v);
    free(includes.v);
    return rc;
}
