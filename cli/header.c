/* fdlink header: the prototypes header of a declaration file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void help_header(FILE *out)
{
    fputs("usage: fdlink header FILE.decl [-o FILE.cuh]\n"
          "\n"
          "Generate a CUDA header with one extern \"C\" __device__ prototype per declaration.\n"
          "Force-include it when compiling the implementation (nvcc -include FILE.cuh) so that a\n"
          "definition that disagrees with its declaration is a compile error; include it in\n"
          "callers for the prototypes.\n"
          "\n"
          "options:\n"
          "  -o FILE        output file, written atomically (default: standard output)\n"

          "  -h, --help     show this help\n",
          out);
}

int cmd_header(int argc, char **argv)
{
    const char *decl_path = NULL, *out_path = NULL;
    fdl_decls *decls = NULL;
    char *text = NULL;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (cli_is_help(a)) {
            help_header(stdout);
            return 0;
        } else if ((v = cli_option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing)
                return cli_usage_error("header", "option '%s' needs a file", a);
            out_path = v;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("header", "unknown option '%s'", a);
        } else if (decl_path) {
            return cli_usage_error("header", "more than one declaration file ('%s')", a);
        } else {
            decl_path = a;
        }
    }
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

