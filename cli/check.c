/* fdlink check: compiled PTX against declarations. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The command line of `fdlink check`. */
typedef struct check_args {
    const char *decl_path;  /* --decl */
    int verbose;            /* -v */
    fdl_check_options opts; /* --allow-undefined, --no-externs */
    cli_diag_opts diag;     /* --diagnostics-*, -w, -Werror, --diag-suppress */
    const char **inputs;    /* the operands: argc slots */
    size_t ninputs;
} check_args;

/* --decl FILE: one only. */
static int take_decl(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    check_args *a = t;
    if (!v)
        return cli_usage_error(cmd, o->bad, arg);
    if (a->decl_path)
        return cli_usage_error(cmd, "only one %s may be given", "--decl");
    a->decl_path = v;
    return 0;
}

static int take_input(void *t, const char *cmd, const char *arg)
{
    check_args *a = t;
    (void)cmd;
    a->inputs[a->ninputs++] = arg;
    return 0;
}

#define CA(field) offsetof(check_args, field)

static const cli_opt check_opts[] = {
    {.arg = CLI_CUSTOM, .name = "--decl", .parse = take_decl, .bad = "option '%s' needs a file",
     .usage = "--decl FILE", .help = "declaration file (required)"},
    {.arg = CLI_FLAG, .name = "--allow-undefined", .at = CA(opts.allow_undefined), .set = 1,
     .usage = "--allow-undefined",
     .help = "a declared function that is only referenced is not an error"},
    {.arg = CLI_FLAG, .name = "--no-externs", .at = CA(opts.check_externs), .set = 0,
     .usage = "--no-externs", .help = "do not check .extern .func references"},
    {.arg = CLI_FLAG, .name = "-v", .alias = "--verbose", .at = CA(verbose), .set = 1,
     .usage = "-v, --verbose", .help = "print a summary on success"},
    {.arg = CLI_TABLE, .table = cli_diag_table, .at = CA(diag)},
    {.arg = CLI_DOC, .usage = "--diagnostics-format=json|sarif [--diagnostics-output=FILE]",
     .help = "the diagnostics also as JSON or SARIF 2.1.0 (stdout or FILE)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_check(FILE *out)
{
    fputs("usage: fdlink check --decl FILE.decl [options] INPUT.ptx...\n"
          "\n"
          "Check compiled PTX against the declarations of its foreign device functions\n"
          "(rules in abi/ABI.md). Every declared function must be defined exactly once across\n"
          "the inputs with a conforming prototype; `.extern .func` references in callers are\n"
          "checked too, so a caller compiled against a stale prototype is caught.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(check_opts, 22, out);
    fputs("\n"
          "exit status: 0 everything conforms, 1 a mismatch or an unreadable input, 2 usage error\n",
          out);
}

static const cli_command_line check_line = {"check", check_opts, help_check, take_input};

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
    check_args c = {NULL, 0, FDL_CHECK_OPTIONS_INIT, {0}, NULL, 0};
    fdl_ptx **ptx = calloc((size_t)argc, sizeof *ptx);
    size_t nptx = 0;
    fdl_decls *decls = NULL;
    check_sink sink = {0, NULL, 0, 0, 0};
    int rc = 1;
    c.inputs = calloc((size_t)argc, sizeof *c.inputs);
    if (!c.inputs || !ptx) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    if (cli_command_parse(&check_line, &c, argc, argv, &rc))
        goto cleanup;
    if (!c.decl_path) {
        rc = cli_usage_error("check", "%s", "missing --decl FILE");
        goto cleanup;
    }
    if (c.ninputs == 0) {
        rc = cli_usage_error("check", "%s", "no input files");
        goto cleanup;
    }

    fdl_error err = FDL_ERROR_INIT;
    if (fdl_decls_load(&decls, c.decl_path, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    int failed = 0;
    for (size_t i = 0; i < c.ninputs; i++) {
        if (fdl_ptx_scan_file(&ptx[nptx], c.inputs[i], &err) != FDL_OK) {
            cli_print_error(&err);
            failed = 1;
            continue;
        }
        nptx++;
    }
    if (failed)
        goto cleanup;

    size_t ndiags = 0;
    c.opts.on_diag = on_check_diag;
    c.opts.ctx = &sink;
    int st = fdl_abi_check(&ndiags, decls, (const fdl_ptx *const *)ptx, nptx, &c.opts, &err);
    if (c.diag.format != CLI_DIAG_TEXT &&
        (sink.oom || cli_diag_report_errors(&c.diag, sink.v, sink.n,
                                            st != FDL_OK && st != FDL_EABI ? &err : NULL) != 0))
        goto cleanup;
    if (st == FDL_EABI) {
        cli_eprintf("fdlink: %zu error%s in %zu input%s checked against %s\n", ndiags,
                ndiags == 1 ? "" : "s", nptx, nptx == 1 ? "" : "s", c.decl_path);
        goto cleanup;
    }
    if (st != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (c.verbose)
        printf("%s: %zu declaration%s conform in %zu input%s\n", c.decl_path,
               fdl_decls_count(decls), fdl_decls_count(decls) == 1 ? "" : "s", nptx,
               nptx == 1 ? "" : "s");
    rc = 0;
cleanup:
    for (size_t i = 0; i < nptx; i++)
        fdl_ptx_destroy(ptx[i]);
    fdl_decls_destroy(decls);
    cli_diag_opts_free(&c.diag);
    free(sink.v);
    free(ptx);
    free(c.inputs);
    return rc;
}

