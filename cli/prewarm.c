/*
 * fdlink prewarm: every link a manifest lists, made into the cache (or a bundle), so that a
 * deployment that runs them with FDLINK_REQUIRE_WARM=1 compiles and links nothing (issue 40).
 *
 * The manifest: one link a line, the arguments of `fdlink link` (-arch, --decl, inputs, options;
 * -o is taken and ignored), words split at blanks, "double quotes" keeping blanks, `#` starting a
 * comment line; relative paths are relative to the manifest's folder. CMake's fdlink_link writes
 * one (MANIFEST option).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

/* The command line of `fdlink prewarm`. */
typedef struct prewarm_args {
    const char *manifest; /* the operand */
    const char *bundle;   /* --bundle */
    int verbose;          /* -v */
} prewarm_args;

static int take_manifest(void *t, const char *cmd, const char *arg)
{
    prewarm_args *a = t;
    if (a->manifest)
        return cli_usage_error(cmd, "%s", "one manifest at a time");
    a->manifest = arg;
    return 0;
}

static const cli_opt prewarm_opts[] = {
    {.arg = CLI_STRING, .name = "--bundle", .form = CLI_NONEMPTY,
     .at = offsetof(prewarm_args, bundle), .bad = "option --bundle needs a file",
     .usage = "--bundle FILE", .help = "write the links' cache entries as one bundle"},
    {.arg = CLI_FLAG, .name = "-v", .alias = "--verbose", .at = offsetof(prewarm_args, verbose),
     .set = 1, .usage = "-v, --verbose", .help = "each link's report, as 'fdlink link -v'"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_prewarm(FILE *out)
{
    fputs("usage: fdlink prewarm [--bundle FILE] [-v] MANIFEST\n"
          "\n"
          "Make every link MANIFEST lists, each as `fdlink link` makes it (its compiles, checks\n"
          "and link, for every architecture), into the cache, writing no output; with --bundle,\n"
          "into a fresh cache written as one bundle FILE (import it with 'fdlink cache import').\n"
          "A deployment that runs the same links with FDLINK_REQUIRE_WARM=1 then compiles and\n"
          "links nothing, and any step that would is an error naming it.\n"
          "\n"
          "MANIFEST: one link a line, the arguments of 'fdlink link' (-o ignored); \"quotes\"\n"
          "keep blanks; lines starting with # are comments; relative paths are the manifest's.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(prewarm_opts, 32, out);
}

static const cli_command_line prewarm_line = {"prewarm", prewarm_opts, help_prewarm,
                                              take_manifest};

/* Split @p line (changed in place) into words: *argv gets room for them (free). 0 on a quote
 * left open (*why set), 1 otherwise. */
static int split_words(char *line, char ***argv, int *argc, const char **why)
{
    size_t cap = 8, n = 0;
    char **v = malloc(cap * sizeof *v);
    char *p = line, *w;
    *argv = NULL;
    *argc = 0;
    if (!v) {
        *why = "out of memory";
        return 0;
    }
    v[n++] = "link";
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (!*p || *p == '\n')
            break;
        w = p;
        char *o = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            if (*p == '"') {
                p++;
                while (*p && *p != '"' && *p != '\n')
                    *o++ = *p++;
                if (*p != '"') {
                    free(v);
                    *why = "a quote left open";
                    return 0;
                }
                p++;
            } else {
                *o++ = *p++;
            }
        }
        int end = !*p || *p == '\n';
        *o = '\0';
        if (!end)
            p++;
        if (n + 1 >= cap) {
            char **g = realloc(v, 2 * cap * sizeof *v);
            if (!g) {
                free(v);
                *why = "out of memory";
                return 0;
            }
            v = g;
            cap *= 2;
        }
        v[n++] = w;
        if (end)
            break;
    }
    v[n] = NULL;
    *argv = v;
    *argc = (int)n;
    return 1;
}

/* Remove the files of the folder @p dir (made by this command), then the folder. */
static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[4096];
            if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
                continue;
            if (unlink(path) != 0 && (errno == EISDIR || errno == EPERM))
                remove_tree(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

int cmd_prewarm(int argc, char **argv)
{
    prewarm_args a = {NULL, NULL, 0};
    char *text = NULL, *bundle_abs = NULL, *mdir = NULL;
    char tmp[4096] = "";
    int rc = 1, cwd = -1;
    size_t links = 0;
    fdl_error err = FDL_ERROR_INIT;
    if (cli_command_parse(&prewarm_line, &a, argc, argv, &rc))
        return rc;
    const char *manifest = a.manifest, *bundle = a.bundle;
    if (!manifest)
        return cli_usage_error("prewarm", "%s", "no manifest");
    size_t size = 0;
    if (fdl__read_file(manifest, &text, &size, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (memchr(text, '\0', size)) {
        fprintf(stderr, "fdlink: %s: error: a NUL byte: not a manifest\n", manifest);
        goto cleanup;
    }
    if (bundle) {
        /* a fresh cache of these links alone, then the bundle of it */
        const char *t = getenv("TMPDIR");
        if (bundle[0] != '/') {
            char here[4096];
            size_t len = 0;
            if (!getcwd(here, sizeof here) ||
                !(bundle_abs = malloc(len = strlen(here) + strlen(bundle) + 2))) {
                fprintf(stderr, "fdlink: error: cannot resolve %s\n", bundle);
                goto cleanup;
            }
            snprintf(bundle_abs, len, "%s/%s", here, bundle);
        }
        snprintf(tmp, sizeof tmp, "%s/fdlink-prewarm-XXXXXX", t && t[0] ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            fprintf(stderr, "fdlink: error: cannot make a folder in %s: %s\n",
                    t && t[0] ? t : "/tmp", strerror(errno));
            tmp[0] = '\0';
            goto cleanup;
        }
        setenv("FDLINK_CACHE_DIR", tmp, 1);
        setenv("FDLINK_CACHE_REMOTE", "", 1);
    }
    /* the manifest's relative paths are its folder's */
    const char *slash = strrchr(manifest, '/');
    if (slash) {
        if (!(mdir = fdl__strndup(manifest, (size_t)(slash - manifest) + 1)) ||
            (cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || chdir(mdir) != 0) {
            fprintf(stderr, "fdlink: %s: error: cannot enter its folder\n", manifest);
            goto cleanup;
        }
    }
    unsigned lineno = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#' || *p == '\r')
            continue;
        char **largv = NULL;
        int largc = 0;
        const char *why = NULL;
        if (!split_words(p, &largv, &largc, &why)) {
            fprintf(stderr, "fdlink: %s:%u: error: %s\n", manifest, lineno, why);
            goto cleanup;
        }
        if (a.verbose)
            fprintf(stderr, "fdlink: %s:%u: linking\n", manifest, lineno);
        int lrc = cli_link_main(largc, largv, 0);
        free(largv);
        if (lrc != 0) {
            fprintf(stderr, "fdlink: note: in the link of %s:%u\n", manifest, lineno);
            rc = lrc;
            goto cleanup;
        }
        links++;
    }
    if (cwd >= 0 && fchdir(cwd) != 0) {
        fprintf(stderr, "fdlink: error: cannot return to the working folder\n");
        goto cleanup;
    }
    if (bundle) {
        size_t n = 0;
        if (fdl_cache_export(tmp, bundle_abs ? bundle_abs : bundle, NULL, &n, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
        printf("prewarmed %zu link%s into %s (%zu entr%s)\n", links, links == 1 ? "" : "s",
               bundle, n, n == 1 ? "y" : "ies");
    } else {
        printf("prewarmed %zu link%s\n", links, links == 1 ? "" : "s");
    }
    rc = 0;
cleanup:
    if (cwd >= 0) {
        if (fchdir(cwd) != 0)
            rc = 1;
        close(cwd);
    }
    if (tmp[0])
        remove_tree(tmp);
    free(text);
    free(mdir);
    free(bundle_abs);
    return rc;
}
