/* fdlink check: compiled PTX against declarations. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void help_check(FILE *out)
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
          "  --diagnostics-format=json|sarif [--diagnostics-output=FILE]\n"
          "                      the diagnostics also as JSON or SARIF 2.1.0 (stdout or FILE)\n"
          "  -h, --help          show this help\n"
          "\n"
          "exit status: 0 everything conforms, 1 a mismatch or an unreadable input, 2 usage error\n",
          out);
}

/* Every diagnostic printed, and kept for --diagnostics-format. */
typedef struct check_sink {
    size_t printed;
    fdl_error *v;
    size_t n, cap;
    int oom;
} check_sink;

static void on_check_diag(void *ctx, const fdl_error *diag)
{
    check_sink *s = ctx;
    cli_on_diag(&s->printed, diag);
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        fdl_error *grown = cap > s->cap ? realloc(s->v, cap * sizeof *grown) : NULL;
        if (!grown) {
            s->oom = 1;
            return;
        }
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = *diag;
}

int cmd_check(int argc, char **argv)
{
    const char *decl_path = NULL;
    int verbose = 0;
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    fdl_ptx **ptx = calloc((size_t)argc, sizeof *ptx);
    size_t ninputs = 0, nptx = 0;
    fdl_decls *decls = NULL;
    cli_diag_opts dopts;
    check_sink sink = {0, NULL, 0, 0, 0};
    int rc = 1, urc = 0;
    memset(&dopts, 0, sizeof dopts);
    if (!inputs || !ptx) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (cli_is_help(a)) {
            help_check(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = cli_option_value(a, "--decl", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("check", "option '%s' needs a file", a);
                goto cleanup;
            }
            if (decl_path) {
                rc = cli_usage_error("check", "only one %s may be given", "--decl");
                goto cleanup;
            }
            decl_path = v;
        } else if (strcmp(a, "--allow-undefined") == 0) {
            opts.allow_undefined = 1;
        } else if (strcmp(a, "--no-externs") == 0) {
            opts.check_externs = 0;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            verbose = 1;
        } else if (cli_diag_option(&dopts, "check", argc, argv, &i, &urc)) {
            if (urc) {
                rc = urc;
                goto cleanup;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = cli_usage_error("check", "unknown option '%s'", a);
            goto cleanup;
        } else {
            inputs[ninputs++] = a;
        }
    }
    if (!decl_path) {
        rc = cli_usage_error("check", "%s", "missing --decl FILE");
        goto cleanup;
    }
    if (ninputs == 0) {
        rc = cli_usage_error("check", "%s", "no input files");
        goto cleanup;
    }

    fdl_error err = FDL_ERROR_INIT;
    if (fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    int failed = 0;
    for (size_t i = 0; i < ninputs; i++) {
        if (fdl_ptx_scan_file(&ptx[nptx], inputs[i], &err) != FDL_OK) {
            cli_print_error(&err);
            failed = 1;
            continue;
        }
        nptx++;
    }
    if (failed)
        goto cleanup;

    size_t ndiags = 0;
    opts.on_diag = on_check_diag;
    opts.ctx = &sink;
    int st = fdl_abi_check(&ndiags, decls, (const fdl_ptx *const *)ptx, nptx, &opts, &err);
    if (dopts.format != CLI_DIAG_TEXT &&
        (sink.oom || cli_diag_report_errors(&dopts, sink.v, sink.n,
                                            st != FDL_OK && st != FDL_EABI ? &err : NULL) != 0))
        goto cleanup;
    if (st == FDL_EABI) {
        cli_eprintf("fdlink: %zu error%s in %zu input%s checked against %s\n", ndiags,
                ndiags == 1 ? "" : "s", nptx, nptx == 1 ? "" : "s", decl_path);
        goto cleanup;
    }
    if (st != FDL_OK) {
        cli_print_error(&err);
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
    cli_diag_opts_free(&dopts);
    free(sink.v);
    free(ptx);
    free(inputs);
    return rc;
}

