/*
 * fdlink: the command-line tool. A thin layer over the library: each subcommand parses its
 * arguments, calls the library, prints, frees. It is the only fdlink code that prints or exits.
 *
 * Exit codes: 0 success, 1 failure, 2 usage error. Diagnostics go to stderr as
 * `fdlink: file:line:col: error: message`; data goes to stdout.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/fdlink.h"

#define EXIT_USAGE 2

typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    void (*help)(FILE *out);
} command;

/* ---- printing ---------------------------------------------------------------------------- */

/* One diagnostic line: `fdlink: file:line:col: error: symbol: message`. */
static void print_diag(const char *severity, const fdl_error *err)
{
    char loc[FDL_ERROR_SOURCE_MAX + 32];
    fdl_error where = *err;
    where.symbol[0] = '\0';
    where.message[0] = '\0';
    fdl_error_format(&where, loc, sizeof loc); /* "file:line:col: " or "" */
    int with_symbol = err->symbol[0] &&
                      strncmp(err->message, err->symbol, strlen(err->symbol)) != 0;
    fprintf(stderr, "fdlink: %s%s: %s%s%s\n", loc, severity, with_symbol ? err->symbol : "",
            with_symbol ? ": " : "", err->message);
}

static void print_error(const fdl_error *err)
{
    print_diag("error", err);
}

static void on_check_diag(void *ctx, const fdl_error *diag)
{
    size_t *count = ctx;
    ++*count;
    print_error(diag);
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "fdlink: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'fdlink %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
    return EXIT_USAGE;
}

/* The value of an option given as `--opt=value`, `--opt value` (advancing *i), or NULL. */
static const char *option_value(const char *arg, const char *opt, int argc, char **argv, int *i,
                                int *missing)
{
    size_t n = strlen(opt);
    *missing = 0;
    if (strncmp(arg, opt, n) != 0)
        return NULL;
    if (arg[n] == '=')
        return arg + n + 1;
    if (arg[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

/* ---- check ------------------------------------------------------------------------------- */

static void help_check(FILE *out)
{
    fputs("usage: fdlink check --decl FILE.decl [options] INPUT.ptx...\n"
          "\n"
          "Check compiled PTX against the declarations of its foreign device functions\n"
          "(rules in abi/ABI.md). Every declared function must be defined exactly once across\n"
          "the inputs with a conforming prototype; `.extern .func` references in callers are\n"
          "checked too, so a caller compiled against a stale prototype is caught.\n"
          "\n"
          "options:\n"
          "  --decl FILE         declaration file (required)\n"
          "  --allow-undefined   a declared function that is only referenced is not an error\n"
          "  --no-externs        do not check .extern .func references\n"
          "  -v, --verbose       print a summary on success\n"
          "  -h, --help          show this help\n"
          "\n"
          "exit status: 0 everything conforms, 1 a mismatch or an unreadable input, 2 usage error\n",
          out);
}

static int cmd_check(int argc, char **argv)
{
    const char *decl_path = NULL;
    int verbose = 0;
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    fdl_ptx **ptx = calloc((size_t)argc, sizeof *ptx);
    size_t ninputs = 0, nptx = 0;
    fdl_decls *decls = NULL;
    int rc = 1;
    if (!inputs || !ptx) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (is_help(a)) {
            help_check(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = option_value(a, "--decl", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = usage_error("check", "option '%s' needs a file", a);
                goto cleanup;
            }
            if (decl_path) {
                rc = usage_error("check", "only one %s may be given", "--decl");
                goto cleanup;
            }
            decl_path = v;
        } else if (strcmp(a, "--allow-undefined") == 0) {
            opts.allow_undefined = 1;
        } else if (strcmp(a, "--no-externs") == 0) {
            opts.check_externs = 0;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            verbose = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = usage_error("check", "unknown option '%s'", a);
            goto cleanup;
        } else {
            inputs[ninputs++] = a;
        }
    }
    if (!decl_path) {
        rc = usage_error("check", "%s", "missing --decl FILE");
        goto cleanup;
    }
    if (ninputs == 0) {
        rc = usage_error("check", "%s", "no input files");
        goto cleanup;
    }

    fdl_error err = FDL_ERROR_INIT;
    if (fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        print_error(&err);
        goto cleanup;
    }
    int failed = 0;
    for (size_t i = 0; i < ninputs; i++) {
        if (fdl_ptx_scan_file(&ptx[nptx], inputs[i], &err) != FDL_OK) {
            print_error(&err);
            failed = 1;
            continue;
        }
        nptx++;
    }
    if (failed)
        goto cleanup;

    size_t printed = 0, ndiags = 0;
    opts.on_diag = on_check_diag;
    opts.ctx = &printed;
    int st = fdl_abi_check(&ndiags, decls, (const fdl_ptx *const *)ptx, nptx, &opts, &err);
    if (st == FDL_EABI) {
        fprintf(stderr, "fdlink: %zu error%s in %zu input%s checked against %s\n", ndiags,
                ndiags == 1 ? "" : "s", nptx, nptx == 1 ? "" : "s", decl_path);
        goto cleanup;
    }
    if (st != FDL_OK) {
        print_error(&err);
        goto cleanup;
    }
    if (verbose)
        printf("%s: %zu declaration%s conform in %zu input%s\n", decl_path,
               fdl_decls_count(decls), fdl_decls_count(decls) == 1 ? "" : "s", nptx,
               nptx == 1 ? "" : "s");
    rc = 0;
cleanup:
    for (size_t i = 0; i < nptx; i++)
        fdl_ptx_destroy(ptx[i]);
    fdl_decls_destroy(decls);
    free(ptx);
    free(inputs);
    return rc;
}

/* ---- header ------------------------------------------------------------------------------ */

static void help_header(FILE *out)
{
    fputs("usage: fdlink header FILE.decl [-o FILE.cuh]\n"
          "\n"
          "Generate a CUDA header with one extern \"C\" __device__ prototype per declaration.\n"
          "Force-include it when compiling the implementation (nvcc -include FILE.cuh) so that a\n"
          "definition that disagrees with its declaration is a compile error; include it in\n"
          "callers for the prototypes.\n"
          "\n"
          "options:\n"
          "  -o FILE        output file, written atomically (default: standard output)\n"

          "  -h, --help     show this help\n",
          out);
}

static int cmd_header(int argc, char **argv)
{
    const char *decl_path = NULL, *out_path = NULL;
    fdl_decls *decls = NULL;
    char *text = NULL;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (is_help(a)) {
            help_header(stdout);
            return 0;
        } else if ((v = option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing)
                return usage_error("header", "option '%s' needs a file", a);
            out_path = v;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("header", "unknown option '%s'", a);
        } else if (decl_path) {
            return usage_error("header", "more than one declaration file ('%s')", a);
        } else {
            decl_path = a;
        }
    }
    if (!decl_path)
        return usage_error("header", "%s", "missing declaration file");

    fdl_error err = FDL_ERROR_INIT;
    if (fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        print_error(&err);
        goto cleanup;
    }
    if (out_path && strcmp(out_path, "-") != 0) {
        if (fdl_header_write(decls, out_path, &err) != FDL_OK) {
            print_error(&err);
            goto cleanup;
        }
    } else {
        size_t len = 0;
        if (fdl_header_generate(&text, &len, decls, NULL, &err) != FDL_OK) {
            print_error(&err);
            goto cleanup;
        }
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "fdlink: error: cannot write to standard output\n");
            goto cleanup;
        }
    }
    rc = 0;
cleanup:
    free(text);
    fdl_decls_destroy(decls);
    return rc;
}

/* ---- link -------------------------------------------------------------------------------- */

static void help_link(FILE *out)
{
    fputs("usage: fdlink link -arch=sm_NN [options] [-o OUT.cubin] INPUT...\n"
          "\n"
          "Link device code into a cubin with nvJitLink (loaded at run time; no GPU needed).\n"
          "Inputs are recognised from their content (PTX for now).\n"
          "\n"
          "options:\n"
          "  -arch=sm_NN, --arch sm_NN   target architecture (required), e.g. sm_90\n"
          "  -o FILE                     output cubin, written atomically (default: a.cubin)\n"
          "  --decl FILE                 check PTX inputs against these declarations first\n"
          "  -O N                        optimisation level 0-3\n"
          "  -g                          device debug information\n"
          "  --lineinfo                  line information\n"
          "  -v, --verbose               print the linker's info log, wall time and output size\n"
          "  -h, --help                  show this help\n",
          out);
}

static int cmd_link(int argc, char **argv)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    const char *out_path = "a.cubin", *decl_path = NULL;
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    size_t ninputs = 0, ndiags = 0;
    fdl_decls *decls = NULL;
    fdl_link *link = NULL;
    int rc = 1;
    if (!inputs) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (is_help(a)) {
            help_link(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = option_value(a, "-arch", argc, argv, &i, &missing)) ||
                   (!missing && (v = option_value(a, "--arch", argc, argv, &i, &missing))) ||
                   missing) {
            if (missing) {
                rc = usage_error("link", "option '%s' needs an architecture (sm_NN)", a);
                goto cleanup;
            }
            opts.arch = v;
        } else if ((v = option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            out_path = v;
        } else if ((v = option_value(a, "--decl", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            decl_path = v;
        } else if (strncmp(a, "-O", 2) == 0) {
            const char *lv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "");
            if (!(lv[0] >= '0' && lv[0] <= '3' && lv[1] == '\0')) {
                rc = usage_error("link", "invalid optimisation level '%s' (expected 0-3)", lv);
                goto cleanup;
            }
            opts.opt_level = lv[0] - '0';
        } else if (strcmp(a, "-g") == 0) {
            opts.debug = 1;
        } else if (strcmp(a, "--lineinfo") == 0 || strcmp(a, "-lineinfo") == 0) {
            opts.lineinfo = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opts.verbose = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = usage_error("link", "unknown option '%s'", a);
            goto cleanup;
        } else {
            inputs[ninputs++] = a;
        }
    }
    if (!opts.arch) {
        rc = usage_error("link", "%s", "missing -arch=sm_NN");
        goto cleanup;
    }
    if (ninputs == 0) {
        rc = usage_error("link", "%s", "no input files");
        goto cleanup;
    }

    fdl_error err = FDL_ERROR_INIT;
    if (decl_path && fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        print_error(&err);
        goto cleanup;
    }
    if (fdl_link_create(&link, &opts, &err) != FDL_OK) {
        print_error(&err);
        goto cleanup;
    }
    if (decls) {
        if (fdl_link_set_diag(link, on_check_diag, &ndiags) != FDL_OK ||
            fdl_link_add_decls(link, decls, &err) != FDL_OK) {
            print_error(&err);
            goto cleanup;
        }
    }
    for (size_t i = 0; i < ninputs; i++) {
        if (fdl_link_add_file(link, inputs[i], FDL_KIND_AUTO, &err) != FDL_OK) {
            print_error(&err);
            goto cleanup;
        }
    }
    if (fdl_link_complete(link, &err) != FDL_OK) {
        if (err.code == FDL_EABI) {
            fprintf(stderr, "fdlink: %zu error%s against %s; nothing linked\n", ndiags,
                    ndiags == 1 ? "" : "s", decl_path);
        } else {
            print_error(&err);
            if (err.log && err.log[0])
                fprintf(stderr, "%s%s", err.log,
                        err.log[strlen(err.log) - 1] == '\n' ? "" : "\n");
        }
        goto cleanup;
    }
    if (fdl_link_write(link, out_path, &err) != FDL_OK) {
        print_error(&err);
        goto cleanup;
    }
    if (opts.verbose) {
        size_t size = 0;
        fdl_link_cubin(link, &size);
        const char *info = fdl_link_info_log(link);
        if (info[0])
            fprintf(stderr, "%s%s", info, info[strlen(info) - 1] == '\n' ? "" : "\n");
        fprintf(stderr, "fdlink: linked %zu input%s for %s into %s (%zu bytes) in %.2f ms\n",
                ninputs, ninputs == 1 ? "" : "s", opts.arch, out_path, size,
                fdl_link_wall_ms(link));
    }
    rc = 0;
cleanup:
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    free(inputs);
    return rc;
}

/* ---- main -------------------------------------------------------------------------------- */

static const command commands[] = {
    {"check", "check compiled PTX against declarations", cmd_check, help_check},
    {"header", "generate the prototypes header of a declaration file", cmd_header, help_header},
    {"link", "link device code into a cubin", cmd_link, help_link},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void help_main(FILE *out)
{
    fputs("usage: fdlink <command> [options] [args]\n"
          "\n"
          "Build foreign device functions ahead of time, check them against their declarations\n"
          "and link them into caller kernels.\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "options:\n"
          "  -h, --help     show this help; 'fdlink <command> --help' for a command\n"
          "  --version      show the version\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        help_main(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (is_help(name)) {
        help_main(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("fdlink %s\n", fdl_version());
        return 0;
    }
    if (strcmp(name, "help") == 0) {
        if (argc > 2) {
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    commands[i].help(stdout);
                    return 0;
                }
            return usage_error(NULL, "unknown command '%s'", argv[2]);
        }
        help_main(stdout);
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    if (name[0] == '-')
        return usage_error(NULL, "unknown option '%s'", name);
    return usage_error(NULL, "unknown command '%s'", name);
}
