/* fdlink CLI: printing and argument helpers shared by the subcommands. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "internal.h"

void cli_veprintf(const char *fmt, va_list ap)
{
    char small[512];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *big = NULL, *text = small;
    if (n >= (int)sizeof small && (big = malloc((size_t)n + 1)) != NULL) {
        vsnprintf(big, (size_t)n + 1, fmt, again);
        text = big;
    }
    va_end(again);
    if (n < 0)
        return;
    size_t len = strlen(text);
    int newline = len && text[len - 1] == '\n';
    if (newline)
        len--;
    /* a file name or a message holding a newline or an escape stays on its one line, inert */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '\t')
            fputs("\\t", stderr);
        else if (c < 0x20 || c == 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else
            fputc(c, stderr);
    }
    if (newline)
        fputc('\n', stderr);
    free(big);
}

void cli_eprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_veprintf(fmt, ap);
    va_end(ap);
}

/* One diagnostic line: `fdlink: file:line:col: error: symbol: message`. */
static void print_diag(const char *severity, const fdl_error *err)
{
    char loc[FDL_ERROR_SOURCE_MAX + 32];
    fdl_error where = *err;
    where.symbol[0] = '\0';
    where.message[0] = '\0';
    fdl_error_format(&where, loc, sizeof loc); /* "file:line:col: " or "" */
    int with_symbol = err->symbol[0] && !fdl__message_names(err->message, err->symbol);
    cli_eprintf("fdlink: %s%s: %s%s%s\n", loc, severity, with_symbol ? err->symbol : "",
                with_symbol ? ": " : "", err->message);
}

void cli_print_error(const fdl_error *err)
{
    print_diag("error", err);
}

void cli_on_diag(void *ctx, const fdl_error *diag)
{
    size_t *count = ctx;
    ++*count;
    cli_print_error(diag);
}

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    char what[1024];
    snprintf(what, sizeof what, fmt, arg);
    cli_eprintf("fdlink: error: %s (see 'fdlink %s%s--help')\n", what, cmd ? cmd : "",
                cmd ? " " : "");
    return EXIT_USAGE;
}

/* The value of an option given as `--opt=value`, `--opt value` (advancing *i), or NULL. */
const char *cli_option_value(const char *arg, const char *opt, int argc, char **argv, int *i,
                                int *missing)
{
    size_t n = strlen(opt);
    *missing = 0;
    if (strncmp(arg, opt, n) != 0)
        return NULL;
    if (arg[n] != '=' && arg[n] != '\0')
        return NULL;
    if (arg[n] == '\0' && *i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    const char *v = arg[n] == '=' ? arg + n + 1 : argv[++*i];
    if (!v[0] && (strcmp(opt, "-o") == 0 || strcmp(opt, "--out") == 0 ||
                  strcmp(opt, "--emit-ptx") == 0)) {
        *missing = 1; /* `-o ""` names no output: a usage error, as a missing value is */
        return NULL;
    }
    return v;
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}


int cli_refuse_output_input(const char *cmd, const char *out, const char *const *inputs, size_t n)
{
    if (!out || strcmp(out, "-") == 0)
        return 0;
    struct stat so;
    int out_exists = stat(out, &so) == 0;
    for (size_t i = 0; i < n; i++) {
        struct stat si;
        if (!inputs[i])
            continue;
        if (strcmp(out, inputs[i]) == 0) {
            cli_eprintf("fdlink: error: output %s is also an input; nothing was read or "
                            "written (see 'fdlink %s --help')\n", out, cmd);
            return EXIT_USAGE;
        }
        if (out_exists && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino) {
            cli_eprintf("fdlink: error: output %s is the same file as input %s; nothing was "
                            "read or written (see 'fdlink %s --help')\n", out, inputs[i], cmd);
            return EXIT_USAGE;
        }
    }
    return 0;
}
