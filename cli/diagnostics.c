/*
 * The diagnostics of a link (fdl_link_diagnostic) as the CLI shows them: one a line on stderr,
 * `file:line:col: severity: message [code]`, warnings shown unless -w, made errors by -Werror,
 * left out by --diag-suppress=CODE; or, with --diagnostics-format=json|sarif, as one JSON
 * document (SARIF 2.1.0 for code scanning) on stdout or in --diagnostics-output=FILE.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "json.h"

/* --diag-suppress CODE[,CODE...]: a code is needed; out of memory is exit 1, not a usage error. */
static int take_suppress(void *target, const cli_opt *o, const char *cmd, const char *arg,
                         const char *v)
{
    cli_diag_opts *d = target;
    if (!v || !v[0])
        return cli_usage_error(cmd, o->bad, arg);
    if (!cli_list_add(&d->suppress, v)) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    return 0;
}

/* --diagnostics-format text|json|sarif */
static int take_format(void *target, const cli_opt *o, const char *cmd, const char *arg,
                       const char *v)
{
    cli_diag_opts *d = target;
    (void)arg;
    if (v && strcmp(v, "text") == 0)
        d->format = CLI_DIAG_TEXT;
    else if (v && strcmp(v, "json") == 0)
        d->format = CLI_DIAG_JSON;
    else if (v && strcmp(v, "sarif") == 0)
        d->format = CLI_DIAG_SARIF;
    else
        return cli_usage_error(cmd, o->bad, "");
    return 0;
}

/* The diagnostics options, shared by check, link and run (their help says them). */
const cli_opt cli_diag_table[] = {
    {CLI_FLAG, "-w", NULL, CLI_PLAIN, offsetof(cli_diag_opts, no_warnings), 1, NULL, NULL, NULL,
     NULL, NULL},
    {CLI_FLAG, "-Werror", "--Werror", CLI_PLAIN, offsetof(cli_diag_opts, werror), 1, NULL, NULL,
     NULL, NULL, NULL},
    {CLI_CUSTOM, "--diag-suppress", "-diag-suppress", CLI_PLAIN, 0, 0,
     "option '%s' needs a code (e.g. 177)", NULL, NULL, take_suppress, NULL},
    {CLI_CUSTOM, "--diagnostics-format", NULL, CLI_PLAIN, 0, 0,
     "option --diagnostics-format needs text, json or sarif%s", NULL, NULL, take_format, NULL},
    {CLI_STRING, "--diagnostics-output", NULL, CLI_NONEMPTY, offsetof(cli_diag_opts, output), 0,
     "option '%s' needs a file", NULL, NULL, NULL, NULL},
    {CLI_END, NULL, NULL, CLI_PLAIN, 0, 0, NULL, NULL, NULL, NULL, NULL},
};

int cli_diag_option(cli_diag_opts *o, const char *cmd, int argc, char **argv, int *i, int *rc)
{
    return cli_opts_parse(cli_diag_table, o, cmd, argc, argv, i, rc);
}

void cli_diag_opts_free(cli_diag_opts *o)
{
    free(o->suppress.v);
    memset(o, 0, sizeof *o);
}

/* Whether --diag-suppress names @p code ("177" and "177-D" name "177-D"). */
static int suppressed(const cli_diag_opts *o, const char *code)
{
    size_t n = strlen(code);
    if (n > 2 && strcmp(code + n - 2, "-D") == 0)
        n -= 2;
    for (size_t i = 0; i < o->suppress.n; i++) {
        /* a comma-separated list, as nvcc takes it */
        for (const char *s = o->suppress.v[i]; *s;) {
            const char *e = strchr(s, ',');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            size_t l2 = len > 2 && strncmp(s + len - 2, "-D", 2) == 0 ? len - 2 : len;
            if (n && l2 == n && strncmp(s, code, n) == 0)
                return 1;
            s += len + (e != NULL);
        }
    }
    return 0;
}

/* The record as the options show it: 0 when left out; *sev the severity to show. */
static int shown(const cli_diag_opts *o, const fdl_diagnostic *d, fdl_severity *sev)
{
    *sev = d->severity;
    if (d->severity != FDL_SEVERITY_ERROR && d->code[0] && suppressed(o, d->code))
        return 0;
    if (d->severity == FDL_SEVERITY_WARNING) {
        if (o->werror)
            *sev = FDL_SEVERITY_ERROR;
        else if (o->no_warnings)
            return 0;
    }
    if (d->severity == FDL_SEVERITY_NOTE && o->no_warnings)
        return 0;
    return 1;
}

/* `file:line:col: severity: message [code]`, with what is known of the place. */
static void print_text(const fdl_diagnostic *d, fdl_severity sev, int promoted)
{
    /* through cli_eprintf: a control character in a name or a message is printed escaped */
    if (d->file[0] && d->line && d->column)
        cli_eprintf("%s:%u:%u: ", d->file, d->line, d->column);
    else if (d->file[0] && d->line)
        cli_eprintf("%s:%u: ", d->file, d->line);
    else if (d->file[0])
        cli_eprintf("%s: ", d->file);
    else
        cli_eprintf("fdlink: ");
    cli_eprintf("%s: %s", fdl_severity_name(sev), d->message);
    if (d->code[0] || promoted)
        cli_eprintf(" [%s%s%s]", d->code, d->code[0] && promoted ? ", " : "",
                    promoted ? "-Werror" : "");
    cli_eprintf("\n");
}

/* A SARIF artifact URI: a relative path as it is, an absolute one as file://; %-encoded. */
static void uri_of(fdl__buf *b, const char *path)
{
    if (path[0] == '/')
        fdl__buf_puts(b, "file://");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (isalnum(*p) || strchr("/-._~", *p))
            fdl__buf_append(b, (const char *)p, 1);
        else
            fdl__buf_printf(b, "%%%02X", *p);
    }
}

/* The rule a record belongs to: its code, else the tool's errors or warnings. */
static void rule_of(char *out, size_t size, const fdl_diagnostic *d)
{
    if (d->code[0])
        snprintf(out, size, "%s", d->code);
    else
        snprintf(out, size, "%s-%s", d->tool, fdl_severity_name(d->severity));
}

static void write_json(fdl__json *j, const fdl_diagnostic *const *v, const fdl_severity *sev,
                       size_t n, const char *log)
{
    fdl__json_object_begin(j);
    fdl__json_member_string(j, "version", fdl_version());
    fdl__json_key(j, "diagnostics");
    fdl__json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "file", v[i]->file);
        fdl__json_member_uint(j, "line", v[i]->line);
        fdl__json_member_uint(j, "column", v[i]->column);
        fdl__json_member_string(j, "severity", fdl_severity_name(sev[i]));
        if (sev[i] != v[i]->severity)
            fdl__json_member_string(j, "reported_as", fdl_severity_name(v[i]->severity));
        fdl__json_member_string(j, "code", v[i]->code);
        fdl__json_member_string(j, "message", v[i]->message);
        fdl__json_member_string(j, "tool", v[i]->tool);
        fdl__json_object_end(j);
    }
    fdl__json_array_end(j);
    /* the backend's raw log of a failure, whole (the text output shows what it adds) */
    if (log && log[0])
        fdl__json_member_string(j, "log", log);
    fdl__json_object_end(j);
}

static void write_sarif(fdl__json *j, const fdl_diagnostic *const *v, const fdl_severity *sev,
                        size_t n, const char *log)
{
    char rule[64];
    fdl__buf uri = {0};
    fdl__json_object_begin(j);
    fdl__json_member_string(j, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
    fdl__json_member_string(j, "version", "2.1.0");
    fdl__json_key(j, "runs");
    fdl__json_array_begin(j);
    fdl__json_object_begin(j);
    fdl__json_key(j, "tool");
    fdl__json_object_begin(j);
    fdl__json_key(j, "driver");
    fdl__json_object_begin(j);
    fdl__json_member_string(j, "name", "fdlink");
    fdl__json_member_string(j, "version", fdl_version());
    fdl__json_key(j, "rules");
    fdl__json_array_begin(j);
    for (size_t i = 0; i < n; i++) { /* each rule once, in order of first use */
        char other[64];
        int seen = 0;
        rule_of(rule, sizeof rule, v[i]);
        for (size_t k = 0; k < i && !seen; k++) {
            rule_of(other, sizeof other, v[k]);
            seen = strcmp(rule, other) == 0;
        }
        if (seen)
            continue;
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "id", rule);
        fdl__json_key(j, "properties");
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "tool", v[i]->tool);
        fdl__json_object_end(j);
        fdl__json_object_end(j);
    }
    fdl__json_array_end(j);
    fdl__json_object_end(j);
    fdl__json_object_end(j);
    fdl__json_key(j, "results");
    fdl__json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        const fdl_diagnostic *d = v[i];
        rule_of(rule, sizeof rule, d);
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "ruleId", rule);
        fdl__json_member_string(j, "level", fdl_severity_name(sev[i]));
        fdl__json_key(j, "message");
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "text", d->message);
        fdl__json_object_end(j);
        if (d->file[0]) {
            uri.len = 0;
            uri_of(&uri, d->file);
            fdl__json_key(j, "locations");
            fdl__json_array_begin(j);
            fdl__json_object_begin(j);
            fdl__json_key(j, "physicalLocation");
            fdl__json_object_begin(j);
            fdl__json_key(j, "artifactLocation");
            fdl__json_object_begin(j);
            fdl__json_member_string(j, "uri", uri.oom ? d->file : uri.data);
            fdl__json_object_end(j);
            if (d->line) {
                fdl__json_key(j, "region");
                fdl__json_object_begin(j);
                fdl__json_member_uint(j, "startLine", d->line);
                if (d->column)
                    fdl__json_member_uint(j, "startColumn", d->column);
                fdl__json_object_end(j);
            }
            fdl__json_object_end(j);
            fdl__json_object_end(j);
            fdl__json_array_end(j);
        }
        fdl__json_key(j, "properties");
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "tool", d->tool);
        fdl__json_object_end(j);
        fdl__json_object_end(j);
    }
    fdl__json_array_end(j);
    /* the backend's raw log of a failure, whole, in the run's property bag */
    if (log && log[0]) {
        fdl__json_key(j, "properties");
        fdl__json_object_begin(j);
        fdl__json_member_string(j, "log", log);
        fdl__json_object_end(j);
    }
    fdl__json_object_end(j);
    fdl__json_array_end(j);
    fdl__json_object_end(j);
    fdl__buf_free(&uri);
}

/* The records @p all (@p total) as the options say; see cli_diag_report. */
static int emit(const cli_diag_opts *o, const fdl_diagnostic *const *all, size_t total,
                const fdl_error *failure, int *promoted)
{
    size_t n = 0;
    int rc = 0, have_error = 0;
    *promoted = 0;
    const fdl_diagnostic **v = calloc(total + 1, sizeof *v);
    fdl_severity *sev = calloc(total + 1, sizeof *sev);
    fdl_diagnostic extra;
    fdl__buf out = {0};
    if (!v || !sev) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        rc = 1;
        goto cleanup;
    }
    for (size_t i = 0; i < total; i++) {
        const fdl_diagnostic *d = all[i];
        if (!shown(o, d, &sev[n]))
            continue;
        have_error |= d->severity == FDL_SEVERITY_ERROR;
        if (d->severity == FDL_SEVERITY_WARNING && sev[n] == FDL_SEVERITY_ERROR)
            ++*promoted;
        v[n++] = d;
    }
    if (failure && failure->code != FDL_OK && !have_error) {
        /* a failure no tool reported as a record (an unreadable input, ...): one of its own */
        extra = (fdl_diagnostic){failure->source, failure->line, failure->column,
                                 FDL_SEVERITY_ERROR, "", failure->message, "fdlink"};
        sev[n] = FDL_SEVERITY_ERROR;
        v[n++] = &extra;
    }
    if (o->format == CLI_DIAG_TEXT) {
        /* errors of a failed link are said by the caller, with the log (NVRTC's whole log
         * when a compile failed: its warnings are in it); the rest here */
        for (size_t i = 0; i < n; i++)
            if (v[i] != &extra && (!failure || (v[i]->severity != FDL_SEVERITY_ERROR &&
                                                !(failure->code == FDL_EPARSE &&
                                                  strcmp(v[i]->tool, "nvrtc") == 0))))
                print_text(v[i], sev[i], sev[i] != v[i]->severity);
        goto cleanup;
    }
    fdl__json j;
    fdl__json_init(&j, &out, 2);
    if (o->format == CLI_DIAG_SARIF)
        write_sarif(&j, v, sev, n, failure ? failure->log : NULL);
    else
        write_json(&j, v, sev, n, failure ? failure->log : NULL);
    fdl_error err = FDL_ERROR_INIT;
    if (!fdl__json_finish(&j)) {
        fprintf(cli_stderr(), "fdlink: error: out of memory writing the diagnostics\n");
        rc = 1;
    } else if (o->output) {
        if (fdl__write_atomic(o->output, out.data, out.len, &err) != FDL_OK) {
            cli_print_error(&err);
            rc = 1;
        }
    } else if (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        fprintf(cli_stderr(), "fdlink: error: cannot write the diagnostics to stdout\n");
        rc = 1;
    }
cleanup:
    fdl__buf_free(&out);
    free(v);
    free(sev);
    return rc;
}

int cli_diag_report(const cli_diag_opts *o, const fdl_link *link, const fdl_error *failure,
                    int *promoted)
{
    size_t total = fdl_link_diagnostic_count(link);
    const fdl_diagnostic **all = calloc(total + 1, sizeof *all);
    if (!all) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < total; i++)
        all[i] = fdl_link_diagnostic(link, i);
    int rc = emit(o, all, total, failure, promoted);
    free(all);
    return rc;
}

int cli_diag_report_errors(const cli_diag_opts *o, const fdl_error *errs, size_t n,
                           const fdl_error *failure)
{
    fdl_diagnostic *recs = calloc(n + 1, sizeof *recs);
    const fdl_diagnostic **all = calloc(n + 1, sizeof *all);
    char (*codes)[16] = calloc(n + 1, sizeof *codes);
    int rc = 1, promoted = 0;
    if (!recs || !all || !codes) {
        fprintf(cli_stderr(), "fdlink: error: out of memory\n");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        /* fdlink's rule (the record's, "ABI-5") as the code */
        if (errs[i].fields & FDL_ERROR_HAS_RULE)
            snprintf(codes[i], sizeof codes[i], "ABI-%d", errs[i].rule);
        recs[i] = (fdl_diagnostic){errs[i].source, errs[i].line, errs[i].column,
                                   FDL_SEVERITY_ERROR, codes[i], errs[i].message, "fdlink"};
        all[i] = &recs[i];
    }
    rc = emit(o, all, n, failure, &promoted);
cleanup:
    free(codes);
    free(all);
    free(recs);
    return rc;
}
