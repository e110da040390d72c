/* fdlink header: the prototypes header of a declaration file. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The command line of `fdlink header`. */
typedef struct header_args {
    const char *decl_path; /* the operand */
    const char *out_path;  /* -o */
} header_args;

static int take_decl_file(void *t, const char *cmd, const char *arg)
{
    header_args *a = t;
    if (a->decl_path)
        return cli_usage_error(cmd, "more than one declaration file ('%s')", arg);
    a->decl_path = arg;
    return 0;
}

static const cli_opt header_opts[] = {
    {.arg = CLI_STRING, .name = "-o", .at = offsetof(header_args, out_path),
     .bad = "option '%s' needs a file", .usage = "-o FILE",
     .help = "output file, written atomically (default: standard output)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_header(FILE *out)
{
    fputs("usage: fdlink header FILE.decl [-o FILE.cuh]\n"
          "\n"
          "Generate a CUDA header with one extern \"C\" __device__ prototype per declaration.\n"
          "Force-include it when compiling the implementation (nvcc -include FILE.cuh) so that a\n"
          "definition that disagrees with its declaration is a compile error; include it in\n"
          "callers for the prototypes.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(header_opts, 17, out);
}

static const cli_command_line header_line = {"header", header_opts, help_header, take_decl_file};

int cmd_header(int argc, char **argv)
{
    header_args h = {NULL, NULL};
    fdl_decls *decls = NULL;
    char *text = NULL;
    int rc = 1;
    if (cli_command_parse(&header_line, &h, argc, argv, &rc))
        return rc;
    const char *decl_path = h.decl_path, *out_path = h.out_path;
    if (!decl_path)
        return cli_usage_error("header", "%s", "missing declaration file");
    if ((rc = cli_refuse_output_input("header", out_path, &decl_path, 1)) != 0)
        return rc;
    rc = 1;

    fdl_error err = FDL_ERROR_INIT;
    if (fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (out_path && strcmp(out_path, "-") != 0) {
        if (fdl_header_write(decls, out_path, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    } else {
        size_t len = 0;
        if (fdl_header_generate(&text, &len, decls, NULL, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "fdlink: error: cannot write to standard output\n");
            goto cleanup;
        }
    }
    rc = 0;
cleanup:
    free(text);
    fdl_decls_destroy(decls);
    return rc;
}

