/*
 * Option tables: a command's options as rows (cli.h, cli_opt) that both parse the command line
 * and print the help's option list, so that an option's name, value, target, usage and help are
 * written once. Every command's options are such tables, read by cli_command_parse (link and run,
 * whose operands are more than words, by cli_opts_parse in their own loops), and the man page
 * is built from the help they print (cmake/fdlinkManPage.cmake).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The help's lines at most: the width of the hand-wrapped prose around the option lists. */
#define HELP_WIDTH 87

static void *field(void *target, const cli_opt *o)
{
    return (char *)target + o->at;
}

/* The usage error of row @p o: its message, with @p what for a "%s" in it. */
static int bad_value(const cli_opt *o, const char *cmd, const char *what)
{
    if (strstr(o->bad, "%s"))
        return cli_usage_error(cmd, o->bad, what);
    return cli_usage_error(cmd, "%s", o->bad);
}

/* A count 0-65535 (or up to @p hi when smaller) into *out; 0 when it is not one. */
int cli_parse_count(const char *v, int hi, int *out)
{
    char *end = NULL;
    if (!v || !v[0])
        return 0;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > 65535 || n > hi)
        return 0;
    *out = (int)n;
    return 1;
}

/*
 * The range of a CLI_LINK_RANGE row, the library's (fdl_link_option_bounds) for the field named
 * as the option is ("--a-b": "a_b"), as "LO-HI" in @p buf; a negative low end (a default that
 * is no value) is not offered. @return 0 when the library has no such option
 */
static int link_range(const cli_opt *o, char *buf, size_t size, int *lo, int *hi)
{
    char lib[64];
    size_t k = 0;
    for (const char *p = o->name + strspn(o->name, "-"); *p && k + 1 < sizeof lib; p++)
        lib[k++] = *p == '-' ? '_' : *p;
    lib[k] = '\0';
    if (!fdl_link_option_bounds(lib, lo, hi))
        return 0;
    *lo = *lo < 0 ? 0 : *lo;
    snprintf(buf, size, "%d-%d", *lo, *hi);
    return 1;
}

/*
 * The value of option @p opt given as `opt=value` or `opt value` (advancing *i), or NULL when
 * @p arg is not it; *missing when it is last with no value. `-o ""` (and --out's, --emit-ptx's)
 * names no output: missing too, a usage error as a missing value is.
 */
static const char *plain_value(const char *arg, const char *opt, int argc, char **argv, int *i,
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
        *missing = 1;
        return NULL;
    }
    return v;
}

/*
 * Whether @p arg is row @p o (or its alias), and its value: *v the value (NULL for a flag),
 * *missing when it needs one and has none. @return 1 when it is the row's option
 */
static int match(const cli_opt *o, const char *name, int argc, char **argv, int *i,
                 const char **v, int *missing)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    *v = NULL;
    *missing = 0;
    if (o->arg == CLI_FLAG)
        return strcmp(arg, name) == 0;
    if (o->form == CLI_EQUALS) { /* only NAME=VALUE */
        if (strncmp(arg, name, n) != 0 || arg[n] != '=')
            return 0;
        *v = arg + n + 1;
        return 1;
    }
    if (o->form == CLI_ATTACHED) { /* -DNAME, -D NAME */
        if (strncmp(arg, name, n) != 0)
            return 0;
        *v = arg[n] ? arg + n : (*i + 1 < argc ? argv[++*i] : NULL);
        *missing = !*v;
        return 1;
    }
    *v = plain_value(arg, name, argc, argv, i, missing);
    return *v || *missing;
}

/* Row @p o matched with the value @p v (NULL when missing): @return 0, or an exit status. */
static int take(const cli_opt *o, void *target, const char *cmd, const char *arg, const char *v)
{
    void *f = field(target, o);
    switch (o->arg) {
    case CLI_FLAG:
        if (o->parse)
            return o->parse(target, o, cmd, arg, NULL);
        *(int *)f = o->set;
        return 0;
    case CLI_STRING:
        if (!v || (o->form == CLI_NONEMPTY && !v[0]))
            return bad_value(o, cmd, arg);
        *(const char **)f = v;
        return 0;
    case CLI_LIST:
        if (!v || (o->form == CLI_ATTACHED && !v[0]) || !cli_list_add(f, v))
            return bad_value(o, cmd, arg);
        return 0;
    case CLI_COUNT:
        if (!cli_parse_count(v, INT32_MAX, f) || *(int *)f < o->set)
            return bad_value(o, cmd, arg);
        return 0;
    case CLI_BIT:
        if (!v || !((v[0] == '0' || v[0] == '1') && v[1] == '\0'))
            return bad_value(o, cmd, arg);
        *(int *)f = v[0] - '0';
        return 0;
    case CLI_LINK_RANGE: {
        char range[48];
        int lo = 0, hi = 0;
        if (!link_range(o, range, sizeof range, &lo, &hi)) {
            fprintf(stderr, "fdlink: error: %s: the library has no bounds for it\n", arg);
            return 1;
        }
        if (!cli_parse_count(v, hi, f) || *(int *)f < lo)
            return bad_value(o, cmd, range);
        return 0;
    }
    case CLI_CUSTOM:
        return o->parse(target, o, cmd, arg, v);
    case CLI_END:
    case CLI_TABLE:
    case CLI_DOC:
        break;
    }
    return 0;
}

int cli_opts_parse(const cli_opt *table, void *target, const char *cmd, int argc, char **argv,
                   int *i, int *rc)
{
    *rc = 0;
    for (const cli_opt *o = table; o->arg != CLI_END; o++) {
        if (o->arg == CLI_TABLE) {
            if (cli_opts_parse(o->table, field(target, o), cmd, argc, argv, i, rc))
                return 1;
            continue;
        }
        if (o->arg == CLI_DOC)
            continue;
        const char *arg = argv[*i], *v = NULL;
        int missing = 0;
        if (!match(o, o->name, argc, argv, i, &v, &missing) &&
            !(o->alias && match(o, o->alias, argc, argv, i, &v, &missing)))
            continue;
        *rc = take(o, target, cmd, arg, v);
        return 1;
    }
    return 0;
}

int cli_command_parse(const cli_command_line *c, void *target, int argc, char **argv, int *rc)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int urc = 0;
        if (cli_is_help(a)) {
            c->help(stdout);
            *rc = 0;
            return 1;
        }
        if (cli_opts_parse(c->opts, target, c->cmd, argc, argv, &i, &urc)) {
            if (!urc)
                continue;
        } else if (a[0] == '-' && a[1] != '\0') {
            urc = cli_usage_error(c->cmd, "unknown option '%s'", a);
        } else if (c->operand) {
            urc = c->operand(target, c->cmd, a);
        } else {
            urc = cli_usage_error(c->cmd, "unexpected argument '%s'", a);
        }
        if (urc) {
            *rc = urc;
            return 1;
        }
    }
    return 0;
}

/* @p text from column @p col, words wrapped at HELP_WIDTH. */
static void wrapped(FILE *out, const char *text, int col, int at)
{
    const char *p = text;
    while (*p) {
        size_t word = strcspn(p, " ");
        if (at > col && at + 1 + (int)word > HELP_WIDTH) {
            fprintf(out, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', out);
            at++;
        }
        fwrite(p, 1, word, out);
        at += (int)word;
        p += word;
        p += strspn(p, " ");
    }
    fputc('\n', out);
}

void cli_opts_help(const cli_opt *table, int col, FILE *out)
{
    for (const cli_opt *o = table; o->arg != CLI_END; o++) {
        if (o->arg == CLI_TABLE) {
            if (o->help) /* a line that says where they are, instead of the rows */
                wrapped(out, o->help, 0, 0);
            else
                cli_opts_help(o->table, col, out);
            continue;
        }
        if (!o->usage)
            continue; /* shown with the row before */
        int at = fprintf(out, "  %s", o->usage);
        if (at + 1 > col) {
            fputc('\n', out);
            at = 0;
        }
        fprintf(out, "%*s", col - at, "");
        char text[512], range[48];
        int lo, hi;
        if (o->arg == CLI_LINK_RANGE && link_range(o, range, sizeof range, &lo, &hi)) {
            snprintf(text, sizeof text, o->help, range); /* its %s: the library's range */
            wrapped(out, text, col, col);
        } else {
            wrapped(out, o->help, col, col);
        }
    }
}
