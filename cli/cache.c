/*
 * fdlink cache: where the link cache is, what it holds, and keeping it in shape. Its options are
 * a table (cli_command_parse) and its subcommands another, like the commands' (main.c): a row
 * each with what it takes, its help and its function.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* The options of `fdlink cache` (cli_opts_parse), for this struct. */
typedef struct cache_args {
    const char *dir;      /* --dir */
    const char *max_arg;  /* --max-size, as given */
    const char *out;      /* -o */
    const char *key_list; /* --key-list */
    const char *operand;  /* import's FILE */
    uint64_t max_size;    /* --max-size, parsed */
    const char *command;  /* the subcommand as given */
    const struct subcommand *sub; /* the subcommand, NULL when there is none of that name */
} cache_args;

static const cli_opt cache_options[] = {
    {CLI_STRING, "--dir", NULL, CLI_NONEMPTY, offsetof(cache_args, dir), 0,
     "option '%s' needs a folder", "--dir DIR", "use DIR instead of the cache directory in force",
     NULL, NULL},
    {CLI_STRING, "--max-size", NULL, CLI_PLAIN, offsetof(cache_args, max_arg), 0,
     "option '%s' needs a size", NULL, NULL, NULL, NULL},
    {CLI_STRING, "-o", NULL, CLI_NONEMPTY, offsetof(cache_args, out), 0,
     "option '%s' needs a file", NULL, NULL, NULL, NULL},
    {CLI_STRING, "--key-list", NULL, CLI_NONEMPTY, offsetof(cache_args, key_list), 0,
     "option '%s' needs a file", NULL, NULL, NULL, NULL},
    {CLI_DOC, NULL, NULL, CLI_PLAIN, 0, 0, NULL, "-h, --help", "show this help", NULL, NULL},
    {CLI_END, NULL, NULL, CLI_PLAIN, 0, 0, NULL, NULL, NULL, NULL, NULL},
};

/* What a subcommand takes besides --dir. */
enum {
    TAKES_OUT = 1,     /* -o FILE (needed) and --key-list */
    TAKES_MAX = 2,     /* --max-size */
    TAKES_OPERAND = 4  /* one FILE (needed) */
};

typedef struct subcommand {
    const char *name;
    const char *usage; /* the help's left column; NULL: the name */
    const char *help;  /* the help's right column, its lines as printed */
    unsigned takes;
    int (*run)(const char *where, const cache_args *a);
} subcommand;

static int cache_dir_print(const char *where, const cache_args *a);
static int cache_stats(const char *where, const cache_args *a);
static int cache_list(const char *where, const cache_args *a);
static int cache_clear(const char *where, const cache_args *a);
static int cache_prune(const char *where, const cache_args *a);
static int cache_verify(const char *where, const cache_args *a);
static int cache_export(const char *where, const cache_args *a);
static int cache_import(const char *where, const cache_args *a);

static const subcommand subcommands[] = {
    {"dir", NULL, "print the cache directory", 0, cache_dir_print},
    {"stats", NULL, "entries, bytes, bound, hits, misses, corrupt entries found", 0, cache_stats},
    {"list", NULL, "every entry: kind, bytes, last use (UTC), file name", 0, cache_list},
    {"clear", NULL, "remove every entry and the counters", 0, cache_clear},
    {"prune", "prune [--max-size N]",
     "remove least recently used entries until at most N bytes\n"
     "remain (K, M, G: KiB, MiB, GiB; default: the bound), and\n"
     "temporary files of writers that are gone",
     TAKES_MAX, cache_prune},
    {"verify", NULL, "check every entry; remove the bad ones and report them", 0, cache_verify},
    {"export", "export -o FILE [--key-list LIST]",
     "write the entries (all, or those whose keys LIST names, one\n"
     "a line, as 'fdlink link -v' prints them) as one bundle file",
     TAKES_OUT, cache_export},
    {"import", "import FILE",
     "add a bundle's entries, each checked (and with\n"
     "FDLINK_CACHE_KEY_FILE, its signature)",
     TAKES_OPERAND, cache_import},
};
#define NSUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])
#define HELP_COLUMN 23

static const subcommand *find_subcommand(const char *name)
{
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        if (strcmp(name, subcommands[i].name) == 0)
            return &subcommands[i];
    return NULL;
}

/* The subcommands' names, separated by ", ", the last by @p last. */
static void subcommand_names(char *buf, size_t size, const char *last)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NSUBCOMMANDS && at < size; i++) {
        const char *sep = i == 0 ? "" : i + 1 == NSUBCOMMANDS ? last : ", ";
        int n = snprintf(buf + at, size - at, "%s%s", sep, subcommands[i].name);
        if (n < 0)
            break;
        at += (size_t)n;
    }
}

void help_cache(FILE *out)
{
    fputs("usage: fdlink cache [--dir DIR] COMMAND\n"
          "\n"
          "The persistent cache of links and NVRTC and libNVVM compiles that fdlink link and the\n"
          "library use by default. It lives in FDLINK_CACHE_DIR, else $XDG_CACHE_HOME/fdlink, else\n"
          "~/.cache/fdlink; FDLINK_CACHE=0 (or fdlink link --no-cache) turns it off;\n"
          "FDLINK_CACHE_MAX_SIZE bounds it (default 512M).\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < NSUBCOMMANDS; i++) {
        const subcommand *c = &subcommands[i];
        int at = fprintf(out, "  %s", c->usage ? c->usage : c->name);
        if (at + 1 > HELP_COLUMN) {
            fputc('\n', out);
            at = 0;
        }
        fprintf(out, "%*s", HELP_COLUMN - at, "");
        for (const char *p = c->help; *p;) {
            size_t len = strcspn(p, "\n");
            fwrite(p, 1, len, out);
            fputc('\n', out);
            p += len;
            if (*p == '\n' && *++p)
                fprintf(out, "%*s", HELP_COLUMN, "");
        }
    }
    fputs("\n"
          "FDLINK_CACHE_REMOTE names remote stores (redis://, http://) behind the directory;\n"
          "stats shows each with its hits, misses and errors. FDLINK_CACHE_KEY_FILE signs\n"
          "entries and refuses unsigned ones.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(cache_options, HELP_COLUMN, out);
}

/* The subcommand, then import's FILE. */
static int take_word(void *t, const char *cmd, const char *a)
{
    cache_args *c = t;
    if (!c->command) {
        c->command = a;
        c->sub = find_subcommand(a);
    } else if (c->sub && (c->sub->takes & TAKES_OPERAND) && !c->operand) {
        c->operand = a;
    } else {
        return cli_usage_error(cmd, "unexpected argument '%s'", a);
    }
    return 0;
}

static const cli_command_line cache_line = {"cache", cache_options, help_cache, take_word};

typedef struct listing {
    fdl_cache_entry *v;
    char **names;
    size_t n;
    int oom;
} listing;

static void collect(void *ctx, const fdl_cache_entry *e)
{
    listing *l = ctx;
    fdl_cache_entry *v = realloc(l->v, (l->n + 1) * sizeof *v);
    char **names = realloc(l->names, (l->n + 1) * sizeof *names);
    if (v)
        l->v = v;
    if (names)
        l->names = names;
    char *name = strdup(e->name);
    if (!v || !names || !name) {
        free(name);
        l->oom = 1;
        return;
    }
    l->v[l->n] = *e;
    l->v[l->n].name = name;
    l->v[l->n].problem = NULL;
    l->names[l->n] = name;
    l->n++;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const fdl_cache_entry *)a)->name, ((const fdl_cache_entry *)b)->name);
}

static void report_bad(void *ctx, const fdl_cache_entry *e)
{
    (void)ctx;
    printf("removed %s: %s\n", e->name, e->problem ? e->problem : "bad");
}

static void print_remote(void *ctx, const fdl_cache_remote *r)
{
    (void)ctx;
    printf("remote: %s%s: hits %" PRIu64 ", misses %" PRIu64 ", errors %" PRIu64
           ", corrupt %" PRIu64 ", unsigned or forged %" PRIu64 "\n",
           r->url, r->read_only ? " (read-only)" : "", r->hits, r->misses, r->errors, r->corrupt,
           r->unsigned_forged);
}

/* Each remote of FDLINK_CACHE_REMOTE with its counters; a URL that cannot be used is an error. */
static int print_remotes(const char *where)
{
    fdl_error err = FDL_ERROR_INIT;
    if (fdl_cache_remotes(where, NULL, print_remote, NULL, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

/* The keys of a key list: one a line; blank lines and '#' comments skipped. */
static int read_key_list(const char *path, char ***keys)
{
    *keys = NULL;
    FILE *f = fopen(path, "re");
    if (!f) {
        fprintf(stderr, "fdlink: %s: error: cannot open: %s\n", path, strerror(errno));
        return 1;
    }
    char line[256];
    size_t n = 0, lineno = 0;
    char **v = calloc(1, sizeof *v);
    int rc = v ? 0 : 1;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        char *k = line + strspn(line, " \t");
        size_t kl = strcspn(k, " \t");
        if (!k[0] || k[0] == '#')
            continue;
        k[kl] = '\0';
        int hex = kl == 32;
        for (size_t i = 0; hex && i < kl; i++)
            hex = (k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f');
        if (!hex) {
            fprintf(stderr, "fdlink: %s:%zu:%zu: error: '%.40s' is not a cache key (32 hex "
                    "digits)\n", path, lineno, (size_t)(k - line) + 1, k);
            rc = 1;
            break;
        }
        char **grown = realloc(v, (n + 2) * sizeof *v);
        if (!grown || !(grown[n] = strdup(k))) {
            if (grown)
                v = grown;
            rc = 1;
            break;
        }
        v = grown;
        v[++n] = NULL;
    }
    fclose(f);
    *keys = v;
    return rc;
}

static void free_keys(char **keys)
{
    for (size_t i = 0; keys && keys[i]; i++)
        free(keys[i]);
    free(keys);
}

static int cache_import(const char *where, const cache_args *a)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t added = 0, refused = 0, forged = 0;
    if (fdl_cache_import(where, a->operand, &added, &refused, &forged, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    printf("imported %zu entr%s into %s; %zu refused", added, added == 1 ? "y" : "ies", where,
           refused);
    if (forged)
        printf(" (%zu unsigned or forged)", forged);
    printf("\n");
    return 0;
}

static int cache_export(const char *where, const cache_args *a)
{
    fdl_error err = FDL_ERROR_INIT;
    char **keys = NULL;
    if (a->key_list && read_key_list(a->key_list, &keys) != 0) {
        free_keys(keys);
        return 1;
    }
    size_t n = 0;
    int rc = fdl_cache_export(where, a->out, (const char *const *)keys, &n, &err);
    free_keys(keys);
    if (rc != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    printf("exported %zu entr%s to %s\n", n, n == 1 ? "y" : "ies", a->out);
    return 0;
}

static int cache_dir_print(const char *where, const cache_args *a)
{
    (void)a;
    printf("%s\n", where);
    return 0;
}

static int cache_stats(const char *where, const cache_args *a)
{
    (void)a;
    fdl_error err = FDL_ERROR_INIT;
    fdl_cache_stats s;
    if (fdl_cache_stats_get(&s, where, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    printf("directory: %s\n", where);
    printf("enabled: %s\n", fdl_cache_enabled() ? "yes" : "no (FDLINK_CACHE)");
    printf("entries: %zu\n", s.entries);
    printf("bytes: %" PRIu64 "\n", s.bytes);
    printf("max size: %" PRIu64 "\n", s.max_size);
    printf("temporary files: %zu\n", s.temporaries);
    printf("hits: %" PRIu64 "\n", s.hits);
    printf("misses: %" PRIu64 "\n", s.misses);
    printf("corrupt entries found: %" PRIu64 "\n", s.corrupt);
    if (s.unsigned_forged || getenv("FDLINK_CACHE_KEY_FILE"))
        printf("unsigned or forged entries: %" PRIu64 "\n", s.unsigned_forged);
    return print_remotes(where);
}

static int cache_list(const char *where, const cache_args *a)
{
    (void)a;
    fdl_error err = FDL_ERROR_INIT;
    listing l = {0};
    int rc = fdl_cache_list(where, collect, &l, &err);
    if (rc == FDL_OK && l.oom)
        fprintf(stderr, "fdlink: error: out of memory\n");
    else if (rc != FDL_OK)
        cli_print_error(&err);
    else {
        if (l.n) /* qsort may not be given NULL, even for no elements */
            qsort(l.v, l.n, sizeof *l.v, by_name);
        for (size_t i = 0; i < l.n; i++) {
            char when[32] = "?";
            time_t t = (time_t)l.v[i].mtime;
            struct tm tm;
            if (gmtime_r(&t, &tm))
                strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
            printf("%-9s %10" PRIu64 "  %s  %s\n", l.v[i].kind, l.v[i].size, when,
                   l.v[i].name);
        }
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.names[i]);
    free(l.names);
    free(l.v);
    return rc == FDL_OK && !l.oom ? 0 : 1;
}

static int cache_clear(const char *where, const cache_args *a)
{
    (void)a;
    fdl_error err = FDL_ERROR_INIT;
    size_t n = 0;
    if (fdl_cache_clear(where, &n, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    printf("removed %zu file%s from %s\n", n, n == 1 ? "" : "s", where);
    return 0;
}

static int cache_prune(const char *where, const cache_args *a)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t n = 0;
    if (fdl_cache_prune(where, a->max_size, &n, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    fdl_cache_stats s;
    if (fdl_cache_stats_get(&s, where, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    printf("removed %zu file%s; %zu entr%s, %" PRIu64 " bytes left\n", n, n == 1 ? "" : "s",
           s.entries, s.entries == 1 ? "y" : "ies", s.bytes);
    return 0;
}

static int cache_verify(const char *where, const cache_args *a)
{
    (void)a;
    fdl_error err = FDL_ERROR_INIT;
    size_t n = 0;
    fdl_cache_stats before;
    if (fdl_cache_stats_get(&before, where, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    if (fdl_cache_verify(where, report_bad, NULL, &n, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    printf("checked %zu entr%s: %zu bad file%s removed\n", before.entries,
           before.entries == 1 ? "y" : "ies", n, n == 1 ? "" : "s");
    return 0;
}

int cmd_cache(int argc, char **argv)
{
    cache_args c;
    int rc = 0;
    memset(&c, 0, sizeof c);
    if (cli_command_parse(&cache_line, &c, argc, argv, &rc))
        return rc;
    const char *command = c.command;
    const subcommand *sub = c.sub;
    char names[256], what[1024];
    if (!command) {
        subcommand_names(names, sizeof names, " or ");
        return cli_usage_error("cache", "missing command: %s", names);
    }
    if (!sub) {
        subcommand_names(names, sizeof names, ", ");
        snprintf(what, sizeof what, "unknown command '%s' (%s)", command, names);
        return cli_usage_error("cache", "%s", what);
    }
    if ((c.out || c.key_list) && !(sub->takes & TAKES_OUT))
        return cli_usage_error("cache", "%s", "-o and --key-list go with export");
    if ((sub->takes & TAKES_OUT) && !c.out)
        return cli_usage_error("cache", "%s needs -o FILE", sub->name);
    if ((sub->takes & TAKES_OPERAND) && !c.operand)
        return cli_usage_error("cache", "%s needs a bundle FILE", sub->name);
    if (c.max_arg && !(sub->takes & TAKES_MAX))
        return cli_usage_error("cache", "%s", "--max-size goes with prune");
    if (c.max_arg && (!fdl_cache_parse_size(c.max_arg, &c.max_size) || c.max_size == 0))
        return cli_usage_error("cache", "invalid size '%s' (bytes, or with K, M or G)", c.max_arg);

    fdl_error err = FDL_ERROR_INIT;
    char where[4096];
    if (c.dir) {
        if (strlen(c.dir) >= sizeof where)
            return cli_usage_error("cache", "%s", "--dir: path too long");
        snprintf(where, sizeof where, "%s", c.dir);
    } else if (fdl_cache_dir(where, sizeof where, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return sub->run(where, &c);
}
