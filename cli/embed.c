/* fdlink embed: device code as generated C data, for programs that need no files at run time. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fdlink/embed.h"

void help_embed(FILE *out)
{
    fputs("usage: fdlink embed -o OUT.c [NAME=]FILE...\n"
          "\n"
          "Generate C source that embeds device code (cubin, fatbin, PTX) in a program and\n"
          "defines int fdl_embedded_find(const char *name, const void **data, size_t *size)\n"
          "(declared in <fdlink/embed.h>). Each file is found by NAME, by default its file name.\n"
          "\n"
          "options:\n"
          "  -o FILE      the C source to write, atomically (required)\n"
          "  -h, --help   show this help\n",
          out);
}

int cmd_embed(int argc, char **argv)
{
    const char *out_path = NULL;
    fdl_embed_item *items = calloc((size_t)argc, sizeof *items);
    char **owned = calloc((size_t)argc, sizeof *owned); /* names copied out of NAME=FILE */
    size_t n = 0;
    int rc = 1;
    if (!items || !owned) {
        free(items);
        free(owned);
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (cli_is_help(a)) {
            help_embed(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = cli_option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("embed", "option '%s' needs a file", a);
                goto cleanup;
            }
            out_path = v;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = cli_usage_error("embed", "unknown option '%s'", a);
            goto cleanup;
        } else {
            /* NAME=FILE when the part before '=' is a plain name, else FILE named by its base */
            const char *eq = strchr(a, '=');
            const char *slash = strchr(a, '/');
            if (eq && (!slash || slash > eq)) {
                owned[n] = malloc((size_t)(eq - a) + 1);
                if (!owned[n]) {
                    fprintf(stderr, "fdlink: error: out of memory\n");
                    goto cleanup;
                }
                memcpy(owned[n], a, (size_t)(eq - a));
                owned[n][eq - a] = '\0';
                items[n].name = owned[n];
                items[n].path = eq + 1;
            } else {
                const char *base = strrchr(a, '/');
                items[n].name = base ? base + 1 : a;
                items[n].path = a;
            }
            n++;
        }
    }
    if (!out_path) {
        rc = cli_usage_error("embed", "%s", "missing -o FILE");
        goto cleanup;
    }
    if (n == 0) {
        rc = cli_usage_error("embed", "%s", "no input files");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++)
        if ((rc = cli_refuse_output_input("embed", out_path, &items[i].path, 1)) != 0)
            goto cleanup;
    rc = 1;
    fdl_error err = FDL_ERROR_INIT;
    if (fdl_embed_write(out_path, items, n, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    rc = 0;
cleanup:
    for (size_t i = 0; i < n; i++)
        free(owned[i]);
    free(owned);
    free(items);
    return rc;
}
