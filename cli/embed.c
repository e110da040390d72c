/* fdlink embed: device code as generated C data, for programs that need no files at run time. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fdlink/embed.h"

/* The command line of `fdlink embed`. */
typedef struct embed_args {
    const char *out_path;  /* -o */
    fdl_embed_item *items; /* the operands: argc slots */
    char **owned;          /* names copied out of NAME=FILE */
    size_t n;
} embed_args;

/* NAME=FILE when the part before '=' is a plain name, else FILE named by its base. */
static int take_item(void *t, const char *cmd, const char *a)
{
    embed_args *e = t;
    const char *eq = strchr(a, '=');
    const char *slash = strchr(a, '/');
    (void)cmd;
    if (eq && (!slash || slash > eq)) {
        e->owned[e->n] = malloc((size_t)(eq - a) + 1);
        if (!e->owned[e->n]) {
            fprintf(stderr, "fdlink: error: out of memory\n");
            return 1;
        }
        memcpy(e->owned[e->n], a, (size_t)(eq - a));
        e->owned[e->n][eq - a] = '\0';
        e->items[e->n].name = e->owned[e->n];
        e->items[e->n].path = eq + 1;
    } else {
        const char *base = strrchr(a, '/');
        e->items[e->n].name = base ? base + 1 : a;
        e->items[e->n].path = a;
    }
    e->n++;
    return 0;
}

static const cli_opt embed_opts[] = {
    {.arg = CLI_STRING, .name = "-o", .at = offsetof(embed_args, out_path),
     .bad = "option '%s' needs a file", .usage = "-o FILE",
     .help = "the C source to write, atomically (required)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_embed(FILE *out)
{
    fputs("usage: fdlink embed -o OUT.c [NAME=]FILE...\n"
          "\n"
          "Generate C source that embeds device code (cubin, fatbin, PTX) in a program and\n"
          "defines int fdl_embedded_find(const char *name, const void **data, size_t *size)\n"
          "(declared in <fdlink/embed.h>). Each file is found by NAME, by default its file name.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(embed_opts, 15, out);
}

static const cli_command_line embed_line = {"embed", embed_opts, help_embed, take_item};

int cmd_embed(int argc, char **argv)
{
    embed_args e = {NULL, NULL, NULL, 0};
    const char *out_path = NULL;
    int rc = 1;
    e.items = calloc((size_t)argc, sizeof *e.items);
    e.owned = calloc((size_t)argc, sizeof *e.owned);
    if (!e.items || !e.owned) {
        free(e.items);
        free(e.owned);
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    if (cli_command_parse(&embed_line, &e, argc, argv, &rc))
        goto cleanup;
    out_path = e.out_path;
    if (!out_path) {
        rc = cli_usage_error("embed", "%s", "missing -o FILE");
        goto cleanup;
    }
    if (e.n == 0) {
        rc = cli_usage_error("embed", "%s", "no input files");
        goto cleanup;
    }
    for (size_t i = 0; i < e.n; i++)
        if ((rc = cli_refuse_output_input("embed", out_path, &e.items[i].path, 1)) != 0)
            goto cleanup;
    rc = 1;
    fdl_error err = FDL_ERROR_INIT;
    if (fdl_embed_write(out_path, e.items, e.n, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    rc = 0;
cleanup:
    for (size_t i = 0; i < e.n; i++)
        free(e.owned[i]);
    free(e.owned);
    free(e.items);
    return rc;
}
