/* fdlink CLI: printing and argument helpers shared by the subcommands. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "internal.h"

/* One diagnostic line: `fdlink: file:line:col: error: symbol: message`. */
static void print_diag(const char *severity, const fdl_error *err)
{
    char loc[FDL_ERROR_SOURCE_MAX + 32];
    fdl_error where = *err;
    where.symbol[0] = '\0';
    where.message[0] = '\0';
    fdl_error_format(&where, loc, sizeof loc); /* "file:line:col: " or "" */
    int with_symbol = err->symbol[0] && !fdl__message_names(err->message, err->symbol);
    fprintf(stderr, "fdlink: %s%s: %s%s%s\n", loc, severity, with_symbol ? err->symbol : "",
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
    fprintf(stderr, "fdlink: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see 'fdlink %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
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
            fprintf(stderr, "fdlink: error: output %s is also an input; nothing was read or "
                            "written (see 'fdlink %s --help')\n", out, cmd);
            return EXIT_USAGE;
        }
        if (out_exists && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino) {
            fprintf(stderr, "fdlink: error: output %s is the same file as input %s; nothing was "
                            "read or written (see 'fdlink %s --help')\n", out, inputs[i], cmd);
            return EXIT_USAGE;
        }
    }
    return 0;
}
